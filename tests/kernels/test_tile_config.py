#!/usr/bin/python3
"""test_tile_config.py - every ldtilecfg in libg4v loads a configuration whose colsb[] and rows[]
were stored (scripts/check-tile-config.py, docs/NUMERICS.md §13.4), and the checker itself tells
a filled configuration from an empty one: a probe compiled here from the tile kernels' own pattern
(src/kernels/x86_amx/amx_tile.h: g4v_tile_config_make on the stack, then g4v_tile_configure) must
be judged filled at every optimisation level, and hand-written code that loads an empty
configuration must be judged broken, as must GCC 12's own _tile_loadconfig on a stack
configuration (the dead-store bug that broke llama.cpp's AMX path). x86-64 only: it reads code,
it runs none.

usage: pytest test_tile_config.py --arg=SOURCE_DIR --arg=C_COMPILER --arg=LIBG4V
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from pyutil import check  # noqa: E402

SRC = pyutil.arg(1) if pyutil.ARGS else pyutil.SRC
CC = pyutil.arg(2) if len(pyutil.ARGS) > 1 else "cc"
LIB = pyutil.arg(3) if len(pyutil.ARGS) > 2 else os.path.join(pyutil.BUILD, "libg4v.so")
SCRIPT = os.path.join(SRC, "scripts", "check-tile-config.py")

# The kernels' pattern: a configuration made on the stack, configured unless already loaded.
PROBE = r"""
#include "kernels/x86_amx/amx_tile.h"
void probe_configure(int m, int n, int k);
void probe_configure(int m, int n, int k) {
    const int rows[8] = {m, m, k / 2, k / 2, m, m, m, m};
    const int colsb[8] = {k * 2, k * 2, n * 4, n * 4, n * 4, n * 4, n * 4, n * 4};
    g4v_tile_config cfg = g4v_tile_config_make(8, rows, colsb);
    g4v_tile_configure(&cfg);
    TILE_ZERO(4);
    TILE_RELEASE();
}
void probe_fixed(void);
void probe_fixed(void) {
    static const int rows[4] = {16, 16, 16, 16}, colsb[4] = {64, 64, 64, 64};
    g4v_tile_config cfg = g4v_tile_config_make(4, rows, colsb);
    TILE_LOADCONFIG(&cfg);
    TILE_ZERO(0);
    TILE_RELEASE();
}
"""

# Hand-written functions, each loading one configuration at -0x40(%rsp); (name, verdict).
CASES = [
    ("palette_only", "BROKEN", """
    movb $1, -0x40(%rsp)
    movq $0, -0x3f(%rsp)
    ldtilecfg -0x40(%rsp)
    ret"""),
    ("colsb_only", "BROKEN", """
    movb $1, -0x40(%rsp)
    movw $64, -0x30(%rsp)
    ldtilecfg -0x40(%rsp)
    ret"""),
    ("rows_only", "BROKEN", """
    movb $1, -0x40(%rsp)
    movb $16, -0x10(%rsp)
    ldtilecfg -0x40(%rsp)
    ret"""),
    ("stores_then_push", "BROKEN", """
    movw $64, -0x30(%rsp)
    movb $16, -0x10(%rsp)
    push %rbx
    ldtilecfg -0x40(%rsp)
    pop %rbx
    ret"""),
    ("stores_then_branch", "BROKEN", """
    movw $64, -0x30(%rsp)
    movb $16, -0x10(%rsp)
    test %edi, %edi
    je 1f
    ldtilecfg -0x40(%rsp)
1:  ret"""),
    ("readback_without_stores", "BROKEN", """
    movb $1, -0x40(%rsp)
    sttilecfg -0x80(%rsp)
    mov -0x80(%rsp), %rax
    cmp -0x40(%rsp), %rax
    je 1f
    ldtilecfg -0x40(%rsp)
1:  ret"""),
    ("field_stores", "filled", """
    pxor %xmm0, %xmm0
    movups %xmm0, -0x40(%rsp)
    movb $1, -0x40(%rsp)
    movw $64, -0x30(%rsp)
    movb $16, -0x10(%rsp)
    ldtilecfg -0x40(%rsp)
    ret"""),
    ("vector_stores", "filled", """
    movaps %xmm1, -0x30(%rsp)
    movq %xmm2, -0x10(%rsp)
    ldtilecfg -0x40(%rsp)
    ret"""),
    ("readback", "filled", """
    movaps %xmm1, -0x30(%rsp)
    movq %xmm2, -0x10(%rsp)
    sttilecfg -0x80(%rsp)
    mov -0x80(%rsp), %rax
    cmp -0x40(%rsp), %rax
    je 1f
    ldtilecfg -0x40(%rsp)
1:  ret"""),
    ("made_by_a_call", "filled by a call", """
    sub $0x48, %rsp
    lea 0x8(%rsp), %rbx
    mov %rbx, %rdi
    call made_by_a_call
    ldtilecfg 0x8(%rsp)
    add $0x48, %rsp
    ret"""),
    ("other_address_to_a_call", "BROKEN", """
    sub $0x48, %rsp
    lea 0x10(%rsp), %rdi
    call other_address_to_a_call
    movb $1, 0x8(%rsp)
    ldtilecfg 0x8(%rsp)
    add $0x48, %rsp
    ret"""),
    ("through_register", "not judged", """
    ldtilecfg (%rdi)
    ret"""),
]


def run_script(path):
    r = subprocess.run([sys.executable, SCRIPT, path], capture_output=True, text=True)
    return r.returncode, r.stdout


def compile_c(tmp_path, name, source, flags):
    c, o = tmp_path / f"{name}.c", tmp_path / f"{name}.o"
    c.write_text(source)
    r = subprocess.run([CC, "-std=c11", "-fPIC", "-c", *flags, "-I", os.path.join(SRC, "src"),
                        str(c), "-o", str(o)], capture_output=True, text=True)
    return o if r.returncode == 0 else None, r.stderr


def test_libg4v():
    code, out = run_script(LIB)
    check(code == 0, f"check-tile-config.py {LIB}: no broken configuration ({code}: {out[-600:]})")
    lines = [ln for ln in out.splitlines() if ln.strip()]
    check(lines and all("no ldtilecfg found" in ln or ": filled" in ln or "not judged" in ln
                        for ln in lines), f"every ldtilecfg of libg4v judged ({out[-600:]})")
    print(out)


def test_kernel_pattern(tmp_path):
    for level in ("-O1", "-O2", "-O3", "-Os"):
        obj, err = compile_c(tmp_path, f"probe{level}", PROBE, [level])
        if not check(obj is not None, f"the probe compiles at {level} ({err[-400:]})"):
            continue
        code, out = run_script(str(obj))
        verdicts = [ln for ln in out.splitlines() if "ldtilecfg at" in ln]
        check(code == 0 and len(verdicts) == 2 and all(": filled" in v for v in verdicts),
              f"{level}: both ldtilecfg of the kernels' pattern filled ({code}: {out})")


def test_hand_written(tmp_path):
    for name, want, body in CASES:
        s, o = tmp_path / f"{name}.s", tmp_path / f"{name}.o"
        s.write_text(f"    .text\n    .globl {name}\n{name}:{body}\n")
        r = subprocess.run([CC, "-c", str(s), "-o", str(o)], capture_output=True, text=True)
        if not check(r.returncode == 0, f"{name} assembles ({r.stderr[-300:]})"):
            continue
        code, out = run_script(str(o))
        check(f": {want}" in out and code == (1 if want == "BROKEN" else 0),
              f"{name}: {want} (exit {code}: {out.strip()})")


def test_gcc_intrinsic(tmp_path):
    """GCC 12's _tile_loadconfig on a stack configuration: the stores are dropped (reported
    broken); other compilers may keep them, which is then judged filled."""
    src = r"""
#include <immintrin.h>
#include <stdint.h>
struct cfg { uint8_t palette, start; uint8_t res[14]; uint16_t colsb[16]; uint8_t rows[16]; };
void intrinsic_config(int m);
void intrinsic_config(int m) {
    struct cfg c = {0};
    c.palette = 1;
    for (int i = 0; i < 8; i++) { c.rows[i] = (uint8_t)m; c.colsb[i] = 64; }
    _tile_loadconfig(&c);
    _tile_zero(0);
}
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
int gcc12 = 1;
#endif
"""
    obj, err = compile_c(tmp_path, "intrinsic", src, ["-O2", "-mamx-tile"])
    if obj is None:
        print(f"note: the compiler has no AMX intrinsics ({err[-200:]})")
        return
    code, out = run_script(str(obj))
    nm = subprocess.run(["nm", str(obj)], capture_output=True, text=True).stdout
    if " gcc12" in nm:
        check(code == 1 and "BROKEN" in out, f"GCC 12's _tile_loadconfig reported broken ({out})")
    else:
        check("ldtilecfg at" in out, f"the intrinsic's ldtilecfg judged ({out})")


# Configurations in static storage, as the GEMM kernels keep theirs: judged by their bytes.
STATIC = r"""
#include "kernels/x86_amx/amx_tile.h"
static const g4v_tile_config good = {.palette = 1, .colsb = {64, 64, 32}, .rows = {16, 16, 8}};
static const g4v_tile_config bad = {.palette = 1, .colsb = {64, 0}, .rows = {16, 16}};
void load_good(void);
void load_good(void) {
    TILE_LOADCONFIG(&good);
}
void load_bad(void);
void load_bad(void) {
    TILE_LOADCONFIG(&bad);
}
"""


def test_static_configs(tmp_path):
    c, so = tmp_path / "static.c", tmp_path / "libstatic.so"
    c.write_text(STATIC)
    r = subprocess.run([CC, "-std=c11", "-fPIC", "-shared", "-O2", "-I", os.path.join(SRC, "src"),
                        str(c), "-o", str(so)], capture_output=True, text=True)
    if not check(r.returncode == 0, f"the static configurations compile ({r.stderr[-400:]})"):
        return
    code, out = run_script(str(so))
    verdicts = [ln for ln in out.splitlines() if "ldtilecfg at" in ln]
    check(code == 1 and len(verdicts) == 2
          and sum("filled (static: 3 tiles, rows [16, 16, 8], colsb [64, 64, 32])" in v
                  for v in verdicts) == 1
          and sum("BROKEN: static" in v for v in verdicts) == 1,
          f"a static configuration judged by its bytes: one filled, one broken ({code}: {out})")
    # libg4v's tile GEMMs load theirs so (x86_amx/gemm_amx*.c): judged, not skipped -- where
    # amx_tile.h's wrapper is inlined (optimized builds). Unoptimized (the ASan build's -O0) the
    # wrapper is a function of its own whose operand is its argument: not judged, said so.
    code, out = run_script(LIB)
    syms = subprocess.run(["nm", LIB], capture_output=True, text=True).stdout
    if "g4v_tile_ldtilecfg_" in syms and "filled (static:" not in out:
        print(f"{LIB}: amx_tile.h's ldtilecfg wrapper is not inlined (an -O0 build): its "
              "static configurations reach it through a register; not judged here")
    else:
        check(out.count("filled (static:") >= 3, f"libg4v's static configurations judged ({out})")
