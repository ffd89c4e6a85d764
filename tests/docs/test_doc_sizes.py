#!/usr/bin/python3
"""test_doc_sizes.py - the front pages stay short: README.md at most 120 lines, bench/RESULTS.md
at most 200 (detail goes into docs/ and is linked; older measurements go into git history).

usage: pytest test_doc_sizes.py [--arg=REPO_ROOT]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from pyutil import check  # noqa: E402

BOUNDS = {"README.md": 120, "bench/RESULTS.md": 200}


def test_doc_sizes():
    root = pyutil.arg(1) if pyutil.ARGS else pyutil.SRC
    for name, most in BOUNDS.items():
        with open(os.path.join(root, name), encoding="utf-8") as f:
            n = sum(1 for _ in f)
        check(n <= most, f"{name}: {n} lines (at most {most}: move detail into docs/ and link it)")
