#!/usr/bin/python3
"""test_no_diary.py - no measurement or session history in the code (CONTRIBUTING.md "Comments").

A comment states what the code does and why. How a choice was arrived at -- which session
measured what, A/B timings, "was 3% slower", "took 197 s", dates of runs -- belongs in the
commit message, and the current numbers in bench/RESULTS.md; in the code such lines go stale
and read as a diary. This scans every tracked source file under src/, include/, chat/, common/
and tools/ (.c, .h, .def, .py, .cmake, .sh) for the phrases such history is written in, and fails
on each line that has one. A number that is a fact of the design (a cache size, a limit, a format's
block size) matches none of them.

usage: pytest test_no_diary.py [--arg=REPO_ROOT]
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402

FOLDERS = ("src/", "include/", "chat/", "common/", "tools/")
SUFFIXES = (".c", ".h", ".def", ".py", ".cmake", ".sh")
NUM = r"\d+(?:[.,]\d+)?"
UNIT = r"(?:ns|us|µs|ms|s|sec|seconds?|min|minutes?|KB|MB|GB|KiB|MiB|GiB|GB/s|MB/s|%|x)"
# Each: the phrase, and why it is history rather than design.
PATTERNS = [
    (r"\bsessions? \d+", "a work session's number"),
    (r"\bA/B\b", "an A/B comparison"),
    (r"\b(?:19|20)\d\d-[01]\d-[0-3]\d\b", "a date"),
    (r"\b(?:was|were|ran|got|came out)\s+(?:about\s+|~)?" + NUM +
     r"\s?(?:%|x|times)\s+(?:faster|slower|better|worse)", "a speed comparison"),
    (NUM + r"\s?%\s+(?:faster|slower)", "a speed comparison"),
    (r"\b(?:faster|slower) by (?:about |~)?" + NUM, "a speed comparison"),
    (r"\bwas (?:faster|slower)\b", "a past speed comparison"),
    (r"\b(?:were|was) measured\b|\bmeasured:|"
     r"\bmeasured (?:here|on (?:Zen|Intel|Xeon|ARM|Graviton|a |our ))", "a past measurement"),
    (r"\b(?:took|wasted|gained|saved|cost us|lost)\s+(?:about\s+|~)?" + NUM + r"\s?" + UNIT +
     r"(?![\w])", "a figure from a past run"),
    (r"\bin \d+ (?:runs|trials|repeats)\b", "a count of benchmark runs"),
    (r"\bwithin (?:the )?noise\b", "a benchmark verdict"),
    (r"\b(?:before|after) this (?:change|commit|session)\b", "a change's history"),
    (r"\bbench/RESULTS\.md,? (?:session|§|run)", "a pointer into the benchmark diary"),
]
RX = [(re.compile(p, re.IGNORECASE), why) for p, why in PATTERNS]


def scan(root):
    files = subprocess.run(["git", "-C", root, "ls-files", "--", *FOLDERS], capture_output=True,
                           text=True, check=True).stdout.split()
    hits, checked = [], 0
    for f in files:
        if not f.endswith(SUFFIXES) or not os.path.isfile(os.path.join(root, f)):
            continue
        checked += 1
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                for rx, why in RX:
                    m = rx.search(line)
                    if m:
                        hits.append(f"{f}:{n}: {why}: \"{m.group(0)}\" in: {line.strip()}")
                        break
    return hits, checked


def test_no_diary():
    root = pyutil.arg(1) if pyutil.ARGS else os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "..", "..")
    hits, checked = scan(os.path.abspath(root))
    for h in hits:
        print(h)
    print(f"test_no_diary: {checked} files, {len(hits)} history lines")
    assert not hits, (f"{len(hits)} lines of measurement/session history in code comments "
                      f"(move them to the commit message or bench/RESULTS.md): {hits}")
