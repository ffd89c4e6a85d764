#!/usr/bin/env python3
"""check-tile-config.py - every AMX tile configuration in these libraries is really filled in.

Usage: check-tile-config.py LIB.so|OBJ.o... (or a directory: its lib*.so files)

`ldtilecfg MEM` loads a 64-byte tile configuration: palette, start row, 14 reserved bytes, then
colsb[16] (bytes 16-47) and rows[16] (bytes 48-63). Debian 12's GCC 12 declares in its
_tile_loadconfig intrinsic that the instruction reads 8 bytes only, so when the configuration is
built on the stack the compiler drops the stores of colsb[] and rows[] as dead: the tiles are
configured with 0 rows and the first tile instruction raises SIGILL (docs/CHAT.md §6; the pinned
llama.cpp is patched for it by scripts/llama-patches/amx-tile-config.patch). Our own kernels
configure through src/kernels/x86_amx/amx_tile.h, whose ldtilecfg names the whole struct; this
holds that in libg4v too (docs/NUMERICS.md §13.4).

This reads the machine code (objdump) and, for each `ldtilecfg OFF(%rsp|%rbp)`, looks in the
instructions before it, back to the previous branch, call or label, for stores into that
configuration: it is filled when they write some of colsb[0..7] (bytes 16-31) and some of
rows[0..7] (bytes 48-55). A store's size comes from its source register or its mnemonic's
suffix; a `rep movs` into it (a struct copy, -Os) counts, a `rep stos` (zeroing) does not; an
instruction that changes the base register ends the run. When that run has no such
stores and the function read the configuration back with `sttilecfg` before (amx_tile.h's
g4v_tile_configure: sttilecfg, compare, then ldtilecfg only when it differs), the run that ends
at that sttilecfg is judged instead. A configuration whose only stores are the palette's bytes
is reported broken. A configuration loaded through another register (built elsewhere) cannot be
judged this way and is reported as such, not as broken. A configuration in static storage,
`ldtilecfg OFF(%rip)` (our kernels' constant configurations), is judged by its 64 bytes as the
file holds them (objdump -s): palette 1, zero reserved bytes, and every tile with both or neither
of rows and colsb, at least one configured. Nor is one whose address was an argument
of a call before the load (-Os leaves g4v_tile_config_make out of line): the callee's stores
are not the caller's to delete; the script follows which registers hold addresses in the frame
to see it.
Exit status: 0 when none is broken (also when there is no ldtilecfg at all), 1 otherwise,
2 on a usage or tool error. Works on any CPU: it reads code, it does not run it.
"""
import glob
import os
import re
import subprocess
import sys

LDTILECFG = re.compile(r"\bldtilecfg\s+(-?0x[0-9a-f]+|-?\d+)?\((%r[sb]p)\)")
STORE = re.compile(r"^\s*(\S+)\s+(.*),\s*(-?0x[0-9a-f]+|-?\d+)?\((%r[sb]p)\)\s*$")
# where a straight run of instructions begins: the stores before it may not reach ldtilecfg
BARRIER = re.compile(r"^\s*(j[a-z]+|call|ret|jmp)\b")
# instructions with a memory destination that do not write it
NOT_STORE = re.compile(r"^(cmp|test|bt|ucomis|comis|vucomis|vcomis|prefetch)")
# bytes of the configuration that must be written: some of colsb[0..7], some of rows[0..7]
COLSB = range(16, 32)
ROWS = range(48, 56)


def writes(text, reg):
    """Whether the instruction changes the base register reg (%rsp or %rbp)."""
    m = re.match(r"^\s*(\S+)\s*(.*)$", text)
    if not m:
        return False
    op, args = m.group(1), m.group(2)
    if reg == "%rsp" and re.match(r"(push|pop|call|ret|enter|leave)", op):
        return True
    if reg == "%rbp" and (op.startswith("leave") or (op.startswith("pop") and args == reg)):
        return True
    return re.search(r",\s*" + re.escape(reg) + r"\s*$", args) is not None


def store_size(op, src):
    """Bytes written by a store of src with mnemonic op (1 when it cannot tell)."""
    op = op.lstrip("v")
    if op in ("movq", "movlps", "movhps", "movlpd", "movhpd", "movsd", "movnti"):
        return 8
    if op in ("movd", "movss"):
        return 4
    src = src.split(",")[0].strip()
    for prefix, size in (("%zmm", 64), ("%ymm", 32), ("%xmm", 16)):
        if src.startswith(prefix):
            return size
    if src.startswith("$"):
        return {"b": 1, "w": 2, "l": 4, "q": 8}.get(op[-1], 1)
    r = src[1:]
    if re.fullmatch(r"r\d+", r) or re.fullmatch(r"r[a-z]{2}", r):
        return 8
    if re.fullmatch(r"r\d+d", r) or re.fullmatch(r"e[a-z]{2}", r):
        return 4
    if re.fullmatch(r"r\d+w", r) or re.fullmatch(r"[a-ds][xip]|[bs]p", r):
        return 2
    return 1


def filled(run, base, base_off):
    """Whether the stores in run (oldest first) write colsb[] and rows[] of the configuration
    at base_off(base)."""
    covered, rdi, rcx = set(), None, None
    for text in run:
        if writes(text, base):  # earlier offsets meant another frame position
            covered, rdi = set(), None
            continue
        # a block copy into it (rep movs, as -Os copies a struct); not rep stos, which only
        # zeroes
        lea = re.match(r"^\s*lea\s+(-?0x[0-9a-f]+|-?\d+)?\((%r[sb]p)\),%rdi\s*$", text)
        count = re.match(r"^\s*mov\s+\$(0x[0-9a-f]+|\d+),%[er]cx\s*$", text)
        movs = re.match(r"^\s*rep\s+movs([bwlq])\b", text)
        if lea:
            rdi = as_int(lea.group(1)) - base_off if lea.group(2) == base else None
            continue
        if count:
            rcx = as_int(count.group(1))
            continue
        if movs and rdi is not None and rcx is not None:
            covered.update(range(rdi, rdi + rcx * {"b": 1, "w": 2, "l": 4, "q": 8}[movs.group(1)]))
            continue
        if writes(text, "%rdi"):
            rdi = None
        if writes(text, "%rcx") or writes(text, "%ecx"):
            rcx = None
        s = STORE.match(text)
        if not s or s.group(4) != base or NOT_STORE.match(s.group(1).lstrip("v")):
            continue
        start = as_int(s.group(3)) - base_off
        covered.update(range(start, start + store_size(s.group(1), s.group(2))))
    return bool(covered.intersection(COLSB)) and bool(covered.intersection(ROWS))


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


REG64 = {}
for _r in ("ax", "bx", "cx", "dx", "si", "di", "bp", "sp"):
    for _n in ("%r" + _r, "%e" + _r, "%" + _r):
        REG64[_n] = "%r" + _r
for _i in range(8, 16):
    for _s in ("", "d", "w", "b"):
        REG64[f"%r{_i}{_s}"] = f"%r{_i}"
ARG_REGS = ("%rdi", "%rsi", "%rdx", "%rcx", "%r8", "%r9")
CALL_CLOBBERED = ARG_REGS + ("%rax", "%r10", "%r11")


class Frame:
    """Which registers hold addresses in this function's stack frame, as offsets from the
    stack pointer at its entry, and which of those addresses were handed to a call."""

    def __init__(self):
        self.depth, self.regs, self.escaped = 0, {}, set()

    def key(self, base, off):
        """The entry-relative offset of off(base), or None."""
        if base == "%rsp":
            return None if self.depth is None else off - self.depth
        k = self.regs.get(base)
        return None if k is None else k + off

    def step(self, text):
        m = re.match(r"^\s*(\S+)\s*(.*?)\s*$", text)
        if not m:
            return
        op, args = m.group(1), m.group(2)
        ops = [a.strip() for a in re.split(r",(?![^(]*\))", args)] if args else []
        dst = REG64.get(ops[-1]) if ops else None
        if op.startswith("call"):
            for r in ARG_REGS:
                if r in self.regs:
                    self.escaped.add(self.regs[r])
            for r in CALL_CLOBBERED:
                self.regs.pop(r, None)
            return
        if op.startswith("push") or op.startswith("pop"):
            if self.depth is not None:
                self.depth += 8 if op.startswith("push") else -8
            if op.startswith("pop") and dst:
                self.regs.pop(dst, None)
            return
        if dst == "%rsp":
            imm = re.match(r"^\$(0x[0-9a-f]+|\d+)$", ops[0]) if len(ops) == 2 else None
            if imm and self.depth is not None and op in ("sub", "add"):
                self.depth += as_int(imm.group(1)) * (1 if op == "sub" else -1)
            else:  # realigned or restored: offsets from here on are not comparable
                self.depth, self.regs, self.escaped = None, {}, set()
            return
        if dst is None:
            return
        lea = re.match(r"^(-?0x[0-9a-f]+|-?\d+)?\((%r\w+)\)$", ops[0]) if op.startswith(
            "lea") else None
        if lea:
            k = self.key(lea.group(2), as_int(lea.group(1)))
        elif op in ("mov", "movq") and len(ops) == 2 and ops[0] in ("%rsp",) + tuple(self.regs):
            k = self.key(ops[0], 0)
        else:
            k = None
        if k is None:
            self.regs.pop(dst, None)
        else:
            self.regs[dst] = k


# `ldtilecfg 0x1d814(%rip)        # 74220 <tiles_cfg>`: objdump's comment gives the address
RIP_TARGET = re.compile(r"\bldtilecfg\s+-?0x[0-9a-f]+\(%rip\)\s+#\s+([0-9a-f]+)")


def static_bytes(lib, addr, n=64):
    """The n bytes the file holds at virtual address addr (objdump -s), or None."""
    try:
        out = subprocess.run(["objdump", "-s", f"--start-address=0x{addr:x}",
                              f"--stop-address=0x{addr + n:x}", lib], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    data = {}
    for line in out.splitlines():
        m = re.match(r"^\s+([0-9a-f]+) ((?:[0-9a-f]{2,8} ){1,4})", line + " ")
        if not m:
            continue
        at = int(m.group(1), 16)
        for b in bytes.fromhex("".join(m.group(2).split())):
            data[at] = b
            at += 1
    got = [data.get(addr + i) for i in range(n)]
    return None if None in got else bytes(got)


def static_verdict(lib, addr):
    """The verdict on a configuration in static storage at addr, from its bytes."""
    b = static_bytes(lib, addr)
    if b is None:
        return f"static at 0x{addr:x}: its bytes are not in the file (bss?): not judged"
    colsb = [b[16 + 2 * t] | b[17 + 2 * t] << 8 for t in range(16)]
    rows = list(b[48:64])
    if b[0] != 1 or any(b[1:16]):
        return f"BROKEN: static at 0x{addr:x}: palette {b[0]} or reserved bytes set"
    if any((r == 0) != (c == 0) for r, c in zip(rows, colsb)) or not any(rows):
        return f"BROKEN: static at 0x{addr:x}: rows {rows[:8]} colsb {colsb[:8]}"
    n = sum(1 for r in rows if r)
    return f"filled (static: {n} tiles, rows {rows[:n]}, colsb {colsb[:n]})"


def check(lib):
    """A list of (address, verdict) for the library's ldtilecfg instructions."""
    with open(lib, "rb") as f:
        if LDTILECFG_BYTES not in f.read():
            return []
    window, before_readback, found, frame = [], None, [], Frame()
    for addr, text in instructions(lib):
        if addr is None:  # a new function
            window, before_readback, frame = [], None, Frame()
            continue
        frame.step(text)
        if BARRIER.match(text):
            window = []
            continue
        if re.search(r"\bsttilecfg\b", text):
            before_readback = list(window)
            window.append(text)
            continue
        if not re.search(r"\bldtilecfg\b", text):
            window.append(text)
            continue
        m = LDTILECFG.search(text)
        rip = RIP_TARGET.search(text)
        if not m and rip:
            found.append((addr, static_verdict(lib, int(rip.group(1), 16))))
            window = []
            continue
        if not m:
            found.append((addr, "loaded through a register: not judged"))
            window = []
            continue
        base_off, base = as_int(m.group(1)), m.group(2)
        if filled(window, base, base_off):
            verdict = "filled"
        elif before_readback is not None and filled(before_readback + window, base, base_off):
            verdict = "filled (before its sttilecfg read-back)"
        elif frame.key(base, base_off) in frame.escaped:
            verdict = "filled by a call (its address was an argument: stores the caller cannot drop)"
        else:
            verdict = "BROKEN: colsb[]/rows[] never stored"
        found.append((addr, verdict))
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
        found = check(lib)
        if not found:
            print(f"{os.path.basename(lib)}: no ldtilecfg found")
        for addr, verdict in found:
            print(f"{os.path.basename(lib)}: ldtilecfg at 0x{addr}: {verdict}")
            broken += verdict.startswith("BROKEN")
    if broken:
        print(f"check-tile-config: {broken} tile configuration(s) would configure empty tiles "
              "(SIGILL on an AMX CPU)", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
