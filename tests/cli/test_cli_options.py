#!/usr/bin/python3
"""test_cli_options.py - every g4v subcommand's options against its option table
(common/options.h): `g4v CMD --help` names every option the command's table declares (read
from the command's source: its rows, the shared FE_OPT_* rows), every
option the help lists is one the parser knows, the help fits 100 columns, and the usage errors
read the same in every command (exit 1, "g4v CMD: ...").

usage: ctest -R test_cli_options (env G4V_BIN: the g4v binary, G4V_SOURCE_DIR: the sources)
"""
import functools
import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402

check = functools.partial(pyutil.check, show_ok=False)

# the file that holds each command's table (serve's may sit anywhere under tools/service)
SOURCES = {
    "encode": "tools/g4v/cmd_encode.c",
    "info": "tools/g4v/cmd_info.c",
    "preprocess": "tools/g4v/cmd_preprocess.c",
    "chat": "tools/g4v/cmd_chat.c",
    "serve": "tools/service/**/service_options.c",
    "models": "tools/g4v/cmd_models.c",
}
MACROS = {"FE_OPT_MATH_ROWS": ["--math", "--precise", "--int8"], "FE_OPT_RESIZE": ["--resize"],
          "FE_OPT_THREADS": ["--threads"], "FE_OPT_TOKENS": ["--tokens"],
          "MS_OPT_REVISION": ["--revision"], "MS_OPT_OLLAMA": ["--ollama"]}
NOTHING_REQUIRED = {"models"}  # commands that run with no option at all


def table_options(cmd):
    """The option names the command's table declares, from its source."""
    paths = glob.glob(os.path.join(pyutil.SRC, SOURCES[cmd]), recursive=True)
    assert len(paths) == 1, f"{cmd}: {SOURCES[cmd]} matches {paths}"
    src = open(paths[0]).read()
    names = ["--" + n for n in re.findall(r'\.name = "([A-Za-z0-9.-]+)",\s*\.(?:kind|shortopt)', src)]
    names += ["-" + c for c in re.findall(r"\.shortopt = '(.)'", src)]
    for macro, opts in MACROS.items():
        if re.search(macro + r"\(", src):
            names += opts
    return names


def help_options(text):
    """The option names the help lists at the start of its lines ("  -p, --prompt TEXT")."""
    found = []
    for line in text.splitlines():
        m = re.match(r"  (-[A-Za-z0-9])?(?:, )?(--[A-Za-z0-9.-]+)?", line)
        if m:
            found += [g for g in m.groups() if g]
    return found


def commands():
    out = []
    for cmd in SOURCES:
        r = pyutil.g4v(cmd, "--help")
        if cmd == "chat" and r.returncode != 0 and "without llama.cpp" in r.stderr:
            print("chat: built without libllama, not checked")
            continue
        out.append((cmd, r))
    return out


def test_cli_options():
    cmds = commands()
    check(len(cmds) >= 4, f"commands checked: {[c for c, _ in cmds]}")
    for cmd, r in cmds:
        text = r.stdout
        check(r.returncode == 0 and text.startswith(f"usage: g4v {cmd}") and r.stderr == "",
              f"{cmd} --help: exit 0, usage on stdout ({r.returncode}, {r.stderr.strip()[:80]})")
        declared = table_options(cmd)
        check(len(declared) >= 3, f"{cmd}: options read from the table: {declared}")
        for name in declared:
            check(re.search(re.escape(name) + r"(?![A-Za-z0-9-])", text),
                  f"{cmd} --help names {name}")
        listed = help_options(text)
        for name in listed:
            if name in ("-h", "--help"):
                continue
            check(name in declared, f"{cmd} --help lists {name}, which its table declares")
            e = pyutil.g4v(cmd, name)  # known: whatever else goes wrong, not an unknown option
            # g4v chat --version needs no other option; g4v models needs none (a flag runs,
            # an option without its value is a usage error)
            alone = name == "--version"
            want = {0, 1} if cmd in NOTHING_REQUIRED else {0} if alone else {1}
            check(e.returncode in want and "unknown option" not in e.stderr,
                  f"{cmd} {name}: a known option ({e.returncode}: {e.stderr.strip()[:100]})")
        check("-h, --help" in text and "exit codes" in text, f"{cmd} --help: -h and exit codes")
        wide = [line for line in text.splitlines() if len(line) > 100]
        check(not wide, f"{cmd} --help fits 100 columns: {wide[:2]}")

        # the same usage errors, in the same words, from every command
        def err(*args):
            e = pyutil.g4v(cmd, *args)
            return e.returncode, e.stderr.strip()

        want = f"g4v {cmd}: unknown option '--frobnicate' (see --help)"
        check(err("--frobnicate") == (1, want), f"{cmd}: {want} ({err('--frobnicate')})")
        rc, msg = err("--frobnicate=1")
        check(rc == 1 and "unknown option '--frobnicate=1'" in msg, f"{cmd} --frobnicate=1: {msg}")
        if "--tokens" in declared:
            rc, msg = err("--tokens", "abc")
            check(rc == 1 and msg.startswith(f"g4v {cmd}: --tokens needs an integer from ")
                  and msg.endswith(", not 'abc'"), f"{cmd} --tokens abc: {msg}")
            # one row (FE_OPT_TOKENS), one range, in every command
            check(msg.endswith(" to 1048576, not 'abc'"), f"{cmd} --tokens range: {msg}")
        if "--threads" in declared:  # one row (FE_OPT_THREADS), one limit
            rc, msg = err("--threads", "4097")
            check(rc == 1 and msg.startswith(f"g4v {cmd}: --threads needs an integer from ")
                  and msg.endswith(" to 4096, not '4097'"), f"{cmd} --threads 4097: {msg}")
            rc, msg = err("--tokens")
            check((rc, msg) == (1, f"g4v {cmd}: --tokens needs a value"), f"{cmd} --tokens: {msg}")
        if "--resize" in declared:
            for form in (["--resize", "foo"], ["--resize=foo"]):
                rc, msg = err(*form)
                check((rc, msg) == (1, f"g4v {cmd}: --resize: 'foo' is not pillow or torchvision"),
                      f"{cmd} {' '.join(form)}: {msg}")
        if "--int8" in declared:
            rc, msg = err("--int8=rows")
            check((rc, msg) == (1, f"g4v {cmd}: --int8: 'rows' is not blocks"), f"{cmd} --int8=rows: {msg}")
            # --int8=blocks and --precise parse; what stops the command is the missing required
            # option
            for mode in ("--int8=blocks", "--int8", "--precise"):
                rc, msg = err(mode)
                check(rc == 1 and "is required" in msg, f"{cmd} {mode} parses: {msg}")
        if "--json" in declared:
            rc, msg = err("--json=1")
            check((rc, msg) == (1, f"g4v {cmd}: --json takes no value"), f"{cmd} --json=1: {msg}")
    # --name=value reaches the command as --name value does
    r = pyutil.g4v("info", "--model=/nonexistent-g4v-model")
    check(r.returncode == 3 and "/nonexistent-g4v-model" in r.stderr, f"info --model=DIR: {r.stderr.strip()[:100]}")
