"""test_exports.py - libg4v.so exports exactly the functions include/g4v.h declares with G4V_API.

Arguments (pyutil.arg): LIBG4V_SO G4V_H.

The header's declarations are parsed (every `G4V_API <type> name(`, comments removed); the
library's defined dynamic symbols come from `nm -D --defined-only`. Any name on one side only
fails the test: a G4V_API function the library lacks (a link error waiting for callers) or a
symbol the library exports without declaring it (a leak of an internal name into the ABI). The
header's static inline helpers are not G4V_API and are not exported. docs/API.md gives the
count this test prints.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pyutil import arg  # noqa: E402


def header_functions(path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)  # comments
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#.*$", " ", text, flags=re.M)  # preprocessor lines (#define G4V_API ...)
    decls = re.findall(r"\bG4V_API\b([^;{]*?)\b([A-Za-z_][A-Za-z0-9_]*)\s*\(", text)
    return [name for _, name in decls]


def library_functions(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path], check=True, capture_output=True,
                         text=True).stdout
    names = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        kind, name = parts[-2], parts[-1]
        if kind in ("T", "t", "W", "i"):  # functions
            names.append(name.split("@")[0])
        elif kind in ("D", "B", "R", "V", "G", "S"):  # data: g4v.h exports none
            names.append(name.split("@")[0] + " (data)")
    return names


def test_exports():
    lib, hdr = arg(1), arg(2)
    declared = header_functions(hdr)
    exported = library_functions(lib)
    dup = sorted({n for n in declared if declared.count(n) > 1})
    fails = []
    if dup:
        fails.append("declared twice in g4v.h: " + ", ".join(dup))
    only_h = sorted(set(declared) - set(exported))
    only_lib = sorted(set(exported) - set(declared))
    if only_h:
        fails.append(f"declared G4V_API in {hdr} but not exported by {lib}: " + ", ".join(only_h))
    if only_lib:
        fails.append(f"exported by {lib} but not declared G4V_API in {hdr}: " +
                     ", ".join(only_lib))
    if len(declared) < 10:
        fails.append(f"only {len(declared)} G4V_API declarations parsed from {hdr}: parser broken?")
    assert not fails, "\n".join(fails)
    print(f"test_exports: {len(declared)} functions declared in g4v.h = exported by libg4v.so")
