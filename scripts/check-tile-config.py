#!/usr/bin/env python3
"""check-tile-config.py - every AMX tile configuration in these libraries is really filled in.

Usage: check-tile-config.py LIB.so... (or a directory: its lib*.so files)

`ldtilecfg MEM` loads a 64-byte tile configuration: palette, start row, 14 reserved bytes, then
colsb[16] (bytes 16-47) and rows[16] (bytes 48-63). Debian 12's GCC 12 declares in its
_tile_loadconfig intrinsic that the instruction reads 8 bytes only, so when the configuration is
built on the stack the compiler drops the stores of colsb[] and rows[] as dead: the tiles are
configured with 0 rows and the first tile instruction raises SIGILL (docs/CHAT.md §6; the pinned
llama.cpp is patched for it by scripts/llama-patches/amx-tile-config.patch).

This reads the machine code (objdump) and, for each `ldtilecfg OFF(%rsp|%rbp)`, looks in the
instructions before it, back to the previous branch, call or label, for a store that begins inside
bytes 16-63 of that configuration. A configuration whose only stores are the zeroing of all 64
bytes and the palette byte is reported broken. A configuration loaded through another register
(built elsewhere) cannot be judged this way and is reported as such, not as broken.
Exit status: 0 when none is broken (also when there is no ldtilecfg at all), 1 otherwise,
2 on a usage or tool error. Works on any CPU: it reads code, it does not run it.
"""
import glob
import os
import re
import subprocess
import sys

LDTILECFG = re.compile(r"\bldtilecfg\s+(-?0x[0-9a-f]+|-?\d+)?\((%r[sb]p)\)")
STORE = re.compile(r"^\s*\S+\s+(.*),\s*(-?0x[0-9a-f]+|-?\d+)?\((%r[sb]p)\)\s*$")
# where a straight run of instructions begins: the stores before it may not reach ldtilecfg
BARRIER = re.compile(r"^\s*(j[a-z]+|call|ret|jmp)\b")


def instructions(lib):
    """(address, text) of each instruction in the library's code, with labels as None."""
    try:
        out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", lib], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"check-tile-config: objdump -d {lib} failed: {e}")
    for line in out.splitlines():
        if re.match(r"^[0-9a-f]+ <.*>:$", line):
            yield None, line
        else:
            m = re.match(r"^\s*([0-9a-f]+):\s*(.*)$", line)
            if m:
                yield m.group(1), m.group(2)


def as_int(text):
    return int(text, 0) if text else 0


# ldtilecfg is VEX-encoded in map 0F38 (C4 E2 78 49 /0): a file without these bytes has none,
# and is not disassembled
LDTILECFG_BYTES = b"\xc4\xe2\x78\x49"


def check(lib):
    """A list of (address, verdict) for the library's ldtilecfg instructions."""
    with open(lib, "rb") as f:
        if LDTILECFG_BYTES not in f.read():
            return []
    window, found = [], []
    for addr, text in instructions(lib):
        if addr is None or BARRIER.match(text):
            window = []
            continue
        if not re.search(r"\bldtilecfg\b", text):
            window.append(text)
            continue
        m = LDTILECFG.search(text)
        if not m:
            found.append((addr, "loaded through a register: not judged"))
            window = []
            continue
        base_off, base = as_int(m.group(1)), m.group(2)
        filled = False
        for prev in window:
            s = STORE.match(prev)
            if s and s.group(3) == base:
                start = as_int(s.group(2)) - base_off
                if 16 <= start < 64:
                    filled = True
        found.append((addr, "filled" if filled else "BROKEN: colsb[]/rows[] never stored"))
        window = []
    return found


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    libs = []
    for a in argv:
        libs += sorted(glob.glob(os.path.join(a, "lib*.so"))) if os.path.isdir(a) else [a]
    broken = 0
    for lib in libs:
        for addr, verdict in check(lib):
            print(f"{os.path.basename(lib)}: ldtilecfg at 0x{addr}: {verdict}")
            broken += verdict.startswith("BROKEN")
    if broken:
        print(f"check-tile-config: {broken} tile configuration(s) would configure empty tiles "
              "(SIGILL on an AMX CPU)", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
