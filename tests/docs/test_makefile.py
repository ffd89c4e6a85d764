#!/usr/bin/python3
"""test_makefile.py - every make target is in `make help` and one script call, and no stated
fuzz-target count rots.

The Makefile is the project's front door (`make demo`, `make test`); `make help` lists each target
with the "## " text on its rule line. This parses the Makefile and the files it includes and
fails on a target without that text, on a target `make help` does not print, and on a target not
declared .PHONY (none of them makes a file of its name). A sentence that counts the fuzz targets
("N fuzz targets") in a tracked Markdown file must match fuzz/, and the Makefiles count no
targets at all ("6 targets, 2 at a time"): counts in comments rot. And the Makefiles hold no
shell programs: each target's recipe is at most one line, which runs a script of scripts/, fuzz/
or bench/ (scripts/make/<target>.sh for most) with no shell control (; && || | if for) around it.

usage: pytest test_makefile.py [--arg=REPO_ROOT]
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402

RULE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*)\s*:(?![:=])(.*)$")
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
ANY_COUNT = re.compile(r"\b(\d+|%s)\s+(?:[\w-]+\s+)?targets\b" % "|".join(NUMBERS), re.I)
COUNT = re.compile(r"\b(\d+|%s)\s+(?:libfuzzer\s+|fuzz(?:ing)?\s+)targets\b" % "|".join(NUMBERS),
                   re.I)


def root():
    r = pyutil.arg(1) if pyutil.ARGS else os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "..", "..")
    return os.path.abspath(r)


def makefiles(top):
    """The Makefile and the files its `include` lines name, in that order."""
    files = ["Makefile"]
    for line in open(os.path.join(top, "Makefile"), encoding="utf-8"):
        m = re.match(r"^-?include\s+(.+)$", line)
        if m:
            files += m.group(1).split()
    return files


def logical_lines(path):
    """The file's lines with backslash continuations joined (recipe lines start with a tab)."""
    out, cur = [], ""
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        out.append(cur + line)
        cur = ""
    return out


def parse(top):
    """(targets: [(file, name, help text or None)], phony: set)"""
    targets, phony = [], set()
    for f in makefiles(top):
        in_define = False
        for line in logical_lines(os.path.join(top, f)):
            if line.startswith("\t") or line.lstrip().startswith("#"):
                continue
            if re.match(r"^define\b", line):
                in_define = True
            elif re.match(r"^endef\b", line):
                in_define = False
            if in_define:
                continue
            if line.startswith(".PHONY:"):
                phony.update(line.split(":", 1)[1].split())
                continue
            m = RULE.match(line)
            if m:
                h = re.search(r"##\s+(\S.*)$", m.group(2))
                targets.append((f, m.group(1), h.group(1) if h else None))
    return targets, phony


def recipes(top):
    """{target: [its recipe lines, continuations joined]} over the Makefile and its includes."""
    out, cur = {}, None
    for f in makefiles(top):
        for line in logical_lines(os.path.join(top, f)):
            if line.startswith("\t"):
                if cur is not None:
                    out[cur].append(line.strip())
                continue
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            m = RULE.match(line)
            cur = m.group(1) if m and not line.startswith(".") else None
            if cur is not None:
                out.setdefault(cur, [])
    return out


SCRIPT = re.compile(r"(?:^|[\s'=@])(?:scripts|fuzz|bench)/[\w./-]+\.(?:sh|py)\b")
SHELL_CONTROL = re.compile(r";|&&|\|\||\||\b(?:if|then|for|while|case)\b")


def test_one_line_recipes():
    bad = []
    for target, lines in sorted(recipes(root()).items()):
        if len(lines) > 1:
            bad.append(f"{target}: {len(lines)} recipe lines (move them into a script)")
        for line in lines:
            if not SCRIPT.search(line):
                bad.append(f"{target}: runs no script of scripts/, fuzz/ or bench/: {line}")
            if SHELL_CONTROL.search(line):
                bad.append(f"{target}: shell control in the recipe: {line}")
    for b in bad:
        print(b)
    assert not bad, f"{len(bad)} recipes that are not one script call: {bad}"


def test_every_target_in_help():
    top = root()
    targets, phony = parse(top)
    names = [t for _, t, _ in targets]
    assert "test" in names and "demo" in names and "help" in names, names
    missing = [f"{f}: {t}" for f, t, h in targets if not h]
    assert not missing, f"targets without a '## ' help text: {missing}"
    not_phony = [t for t in names if t not in phony]
    assert not not_phony, f"targets not declared .PHONY: {not_phony}"
    out = subprocess.run(["make", "--no-print-directory", "-s", "-C", top, "help"],
                         capture_output=True, text=True, check=True).stdout
    listed = re.findall(r"^\s*make (\S+)\s", out, re.M)
    unlisted = [t for t in names if t not in listed]
    assert not unlisted, f"`make help` does not print: {unlisted}"
    assert len(listed) == len(set(listed)), f"a target listed twice: {listed}"
    print(f"test_makefile: {len(names)} targets in {len(makefiles(top))} files, all in make help")


def test_fuzz_counts():
    top = root()
    n = 0
    for f in sorted(os.listdir(os.path.join(top, "fuzz"))):
        if f.endswith(".c"):
            text = open(os.path.join(top, "fuzz", f), encoding="utf-8").read()
            n += "LLVMFuzzerTestOneInput" in text
    assert n > 0
    files = subprocess.run(["git", "-C", top, "ls-files"], capture_output=True, text=True,
                           check=True).stdout.split()
    texts = makefiles(top) + [f for f in files if f.endswith(".md")]
    wrong = []
    for f in texts:
        path = os.path.join(top, f)
        if not os.path.exists(path):
            continue
        for m in COUNT.finditer(open(path, encoding="utf-8", errors="replace").read()):
            said = m.group(1).lower()
            said = NUMBERS.get(said, None) if not said.isdigit() else int(said)
            if said != n:
                wrong.append(f"{f}: '{m.group(0)}' (fuzz/ has {n})")
    for f in makefiles(top):
        for m in ANY_COUNT.finditer(open(os.path.join(top, f), encoding="utf-8").read()):
            wrong.append(f"{f}: '{m.group(0)}' (a count in a Makefile)")
    assert not wrong, f"stale fuzz-target counts (better: state none): {wrong}"
