#!/usr/bin/python3
"""test_call_graph.py - no two source files of one library call each other in a circle.

Layers call down, never up (docs/ARCHITECTURE.md §1), and within one library the same holds
for its files: when a.c calls b.c and b.c (directly or through other files) calls a.c, neither
can be read, tested or moved without the other, and the circle tends to grow. This reads the
object files of libg4v and of the front ends' libraries (common/, tools/service,
chat/, the g4v CLI) from a manifest CMake writes (one "LIBRARY OBJECT" line per object,
tests/docs/CMakeLists.txt), takes each object's defined and undefined global symbols with nm,
draws an edge a -> b when a uses a symbol b defines (a call, or a reference to b's data), and
fails on every strongly connected set of two or more files in one library, naming the edges.

usage: pytest test_call_graph.py --arg=MANIFEST
"""
import os
import subprocess
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402

def source_of(obj):
    """CMake's object path .../CMakeFiles/TARGET.dir/src/io/checkpoint.c.o -> src/io/checkpoint.c
    (a generated source outside the tree keeps its build-relative path)."""
    p = obj.replace(os.sep, "/")
    if ".dir/" in p:
        p = p.split(".dir/", 1)[1]
    return p[:-2] if p.endswith(".o") else p


def symbols(objs):
    """{object: (defined globals, undefined globals)} from one nm run over all objects."""
    out = subprocess.run(["nm", "-A", "-P", "-g", *objs], capture_output=True, text=True,
                         check=True).stdout
    res = {o: (set(), set()) for o in objs}
    for line in out.splitlines():
        head, _, rest = line.rpartition(": ")
        f = rest.split()
        if not head or len(f) < 2 or head not in res:
            continue
        name, kind = f[0], f[1]
        if kind in "Uvw":  # undefined (weak undefined included)
            res[head][1].add(name)
        else:
            res[head][0].add(name)
    return res


def circles(edges, nodes):
    """Strongly connected sets of two or more nodes (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def library_circles(objs):
    """The circles among one library's objects, each with the symbols along its edges."""
    syms = symbols(objs)
    owner = {}
    for o, (defined, _) in syms.items():
        for s in defined:
            owner.setdefault(s, o)
    edges, via = defaultdict(set), defaultdict(set)
    for o, (_, undefined) in syms.items():
        for s in undefined:
            d = owner.get(s)
            if d and d != o:
                a, b = source_of(o), source_of(d)
                edges[a].add(b)
                via[(a, b)].add(s)
    nodes = {source_of(o) for o in objs}
    for n in nodes:
        edges[n]  # every node present
    found = []
    for comp in circles(edges, nodes):
        detail = ["%s -> %s (%s)" % (a, b, ", ".join(sorted(via[(a, b)])[:4]))
                  for a in sorted(comp) for b in sorted(edges[a]) if b in comp]
        found.append((comp, detail))
    return found


def read_manifest(path):
    libs = defaultdict(list)
    with open(path) as f:
        for line in f:
            if line.strip():
                lib, obj = line.split(None, 1)
                libs[lib].append(obj.strip())
    return libs


def test_call_graph():
    libs = read_manifest(pyutil.arg(1))
    assert libs.get("libg4v"), "the manifest lists no object of libg4v"
    bad = []
    for lib, objs in sorted(libs.items()):
        objs = [o for o in objs if os.path.exists(o)]
        print(f"{lib}: {len(objs)} objects")
        for comp, detail in library_circles(objs):
            bad.append(f"{lib}: {' <-> '.join(sorted(comp))}:\n    " + "\n    ".join(detail))
    for b in bad:
        print("call circle in " + b)
    assert not bad, f"{len(bad)} call circles (break each: one file depends on the other, or " \
                    f"both on a third): {bad}"
