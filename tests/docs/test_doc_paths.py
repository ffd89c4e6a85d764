#!/usr/bin/python3
"""test_doc_paths.py - every repository path a document names exists.

A newcomer follows the paths the Markdown files name (`src/io/gguf.c`, `tests/hf/`, ...); a
file that moved leaves them stale. This scans every tracked *.md file for words that start
with one of the repository's top-level folders and look like a file (an extension) or a folder
(a trailing slash), and fails on each that is not in the tree. Paths inside other projects
(llama.cpp's, transformers') are written without our folder names, so they do not match.

usage: pytest test_doc_paths.py [--arg=REPO_ROOT]
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402


def test_doc_paths():
    root = pyutil.arg(1) if pyutil.ARGS else os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "..", "..")
    root = os.path.abspath(root)
    files = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True,
                           check=True).stdout.split()
    tops = sorted({f.split("/")[0] for f in files if "/" in f and not f.startswith(".")})
    word = re.compile(r"(?<![\w./-])((?:%s)/[A-Za-z0-9_.+/-]*[A-Za-z0-9_/])" %
                      "|".join(map(re.escape, tops)))
    stale, checked = [], 0
    for md in (f for f in files if f.endswith(".md")):
        text = open(os.path.join(root, md), encoding="utf-8", errors="replace").read()
        for m in word.finditer(text):
            path = m.group(1)
            if not (re.search(r"\.[A-Za-z0-9]+$", path) or path.endswith("/")):
                continue
            checked += 1
            if not os.path.exists(os.path.join(root, path)):
                stale.append(f"{md}: {path}")
    for s in stale:
        print(f"stale path: {s}")
    print(f"test_doc_paths: {checked - len(stale)} passed, {len(stale)} failed")
    assert not stale, f"{len(stale)} stale paths: {stale}"
