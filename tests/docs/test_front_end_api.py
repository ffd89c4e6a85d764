#!/usr/bin/python3
"""test_front_end_api.py - the front ends are clients of include/g4v.h only.

Everything under src/ is libg4v's inside (g4v.h: "Everything under src/ is internal"); the front
ends (tools/: the g4v CLI and g4v serve; chat/: the chat engine they run; common/: their shared
helpers) use the public API or code of their own, so the library's insides can change without
them. Two checks:

  includes  no file under tools/, chat/ or common/ includes a header of src/ (a quoted include
            naming a file that exists under src/, or a relative path that leads into it);
  upward    no file under chat/ or common/ (the programs' libraries) includes a header that
            exists only under tools/ (the programs): libraries at the top never use a program;
  symbols   no object of the front ends' libraries uses a symbol that a libg4v object defines
            unless g4v.h declares it G4V_API: libg4v.a's objects are built with hidden
            visibility but still link statically, so an include-free prototype would pass the
            first check. The objects come from the manifest test_call_graph reads
            (tests/docs/CMakeLists.txt: one "LIBRARY OBJECT" line each).

usage: pytest test_front_end_api.py --arg=MANIFEST --arg=SOURCE_DIR
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from test_call_graph import read_manifest, source_of, symbols  # noqa: E402

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
SOURCES = (".c", ".h", ".cpp", ".hpp", ".inc")
FRONT_ENDS = ("tools", "chat", "common")  # every folder of front-end code (ARCHITECTURE.md §1)


def src_includes(root):
    """(file, line, header) for every include under the front ends' folders that reaches into
    src/, and how many source files each folder has (a folder that is gone or empty would make
    the check quiet)."""
    src = os.path.join(root, "src")
    bad = []
    seen = dict.fromkeys(FRONT_ENDS, 0)
    for top in FRONT_ENDS:
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(SOURCES):
                    continue
                seen[top] += 1
                path = os.path.join(d, f)
                text = open(path, encoding="utf-8", errors="replace").read()
                for m in INCLUDE.finditer(text):
                    h = m.group(1)
                    beside = os.path.normpath(os.path.join(d, h))
                    if os.path.isfile(os.path.join(src, h)) or beside.startswith(src + os.sep):
                        line = text.count("\n", 0, m.start()) + 1
                        bad.append(f"{os.path.relpath(path, root)}:{line}: #include \"{h}\"")
    return bad, seen


def upward_includes(root):
    """(file, line, header) for every include under chat/ or common/ of a header found only under
    tools/."""
    in_tools = {}
    for d, _, files in os.walk(os.path.join(root, "tools")):
        for f in files:
            in_tools.setdefault(f, os.path.relpath(os.path.join(d, f), root))
    bad = []
    for top in ("chat", "common"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(SOURCES):
                    continue
                path = os.path.join(d, f)
                text = open(path, encoding="utf-8", errors="replace").read()
                for m in INCLUDE.finditer(text):
                    h = m.group(1)
                    mine = any(os.path.isfile(os.path.join(root, x, h))
                               for x in ("chat", "common", "include"))
                    if not mine and os.path.basename(h) in in_tools:
                        line = text.count("\n", 0, m.start()) + 1
                        bad.append(f"{os.path.relpath(path, root)}:{line}: #include \"{h}\" "
                                   f"({in_tools[os.path.basename(h)]})")
    return bad


def public_functions(header):
    """The names g4v.h declares G4V_API (as tests/api/test_exports.py parses them)."""
    text = open(header, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"^\s*#.*$", " ", text, flags=re.M)
    return set(re.findall(r"\bG4V_API\b[^;{]*?\b([A-Za-z_][A-Za-z0-9_]*)\s*\(", text))


def internal_uses(libs, public):
    """(front-end source, symbol, library source) for each use of a libg4v symbol g4v.h does not
    declare."""
    lib_objs = [o for o in libs.get("libg4v", []) if os.path.exists(o)]
    fe_objs = [o for lib, objs in libs.items() if lib != "libg4v" for o in objs
               if os.path.exists(o)]
    syms = symbols(lib_objs + fe_objs)
    owner = {}
    for o in lib_objs:
        for s in syms[o][0]:
            owner.setdefault(s, o)
    bad = set()
    for o in fe_objs:
        for s in syms[o][1]:
            if s in owner and s not in public:
                bad.add((source_of(o), s, source_of(owner[s])))
    return sorted(bad), len(fe_objs)


def test_no_src_includes():
    root = pyutil.arg(2)
    bad, seen = src_includes(root)
    print("source files read: " + ", ".join(f"{k}/ {n}" for k, n in seen.items()))
    empty = [k for k, n in seen.items() if n == 0]
    assert not empty, f"no source file under {empty}: moved? update FRONT_ENDS"
    for b in bad:
        print("includes a library-internal header: " + b)
    assert not bad, f"{len(bad)} includes of src/ by the front ends (use g4v.h, or code of " \
                    f"the front ends' own in common/): {bad}"


def test_libraries_do_not_use_programs():
    bad = upward_includes(pyutil.arg(2))
    for b in bad:
        print("a library at the top includes a program's header: " + b)
    assert not bad, f"{len(bad)} includes of tools/ by chat/ or common/ (move what both need " \
                    f"into the library): {bad}"


def test_only_public_symbols():
    libs = read_manifest(pyutil.arg(1))
    public = public_functions(os.path.join(pyutil.arg(2), "include", "g4v.h"))
    assert len(public) > 10, "no G4V_API declaration parsed from g4v.h: parser broken?"
    bad, n = internal_uses(libs, public)
    assert n, "the manifest lists no front-end object"
    print(f"{n} front-end objects checked against {len(public)} public functions")
    for fe, s, lib in bad:
        print(f"{fe} uses {s} ({lib}), which g4v.h does not declare")
    assert not bad, f"{len(bad)} uses of libg4v's internal symbols by the front ends: {bad}"
