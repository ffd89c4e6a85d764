#!/usr/bin/python3
"""test_doc_paths.py - every repository path a document or a code comment names exists.

A newcomer follows the paths the Markdown files and the code's comments name (`src/io/gguf.c`,
`tests/hf/`, ...); a file that moved leaves them stale. This scans every tracked *.md file, and
the comments of every tracked .c, .h and .py file (C's /* */ and // comments, Python's #
comments and triple-quoted strings: docstrings), for words that start with one of the
repository's top-level folders and look like a file (an extension) or a folder (a trailing
slash), and fails on each that is not in the tree. Paths inside other projects (llama.cpp's,
transformers') are written without our folder names, so they do not match.

usage: pytest test_doc_paths.py [--arg=REPO_ROOT]
"""
import io
import os
import re
import subprocess
import sys
import tokenize

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402


C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)


def comments(path, text):
    """The comment text of a .c/.h/.py file (for .md, the whole text)."""
    if path.endswith((".c", ".h")):
        return "\n".join(C_COMMENT.findall(text))
    if path.endswith(".py"):
        out = []
        try:
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.type == tokenize.COMMENT or (
                        tok.type == tokenize.STRING and re.match(r"[rRbBuUfF]*(\"\"\"|\'\'\')",
                                                                 tok.string)):
                    out.append(tok.string)
        except (tokenize.TokenError, SyntaxError):
            return text
        return "\n".join(out)
    return text


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
    for doc in (f for f in files if f.endswith((".md", ".c", ".h", ".py"))):
        if not os.path.isfile(os.path.join(root, doc)):
            continue
        text = open(os.path.join(root, doc), encoding="utf-8", errors="replace").read()
        for m in word.finditer(comments(doc, text)):
            path = m.group(1)
            if not (re.search(r"\.[A-Za-z0-9]+$", path) or path.endswith("/")):
                continue
            checked += 1
            if not os.path.exists(os.path.join(root, path)):
                stale.append(f"{doc}: {path}")
    for s in stale:
        print(f"stale path: {s}")
    print(f"test_doc_paths: {checked - len(stale)} passed, {len(stale)} failed")
    assert not stale, f"{len(stale)} stale paths: {stale}"
