#!/usr/bin/python3
"""test_encoder_ref.py - the C encoder against the float64 reference (tests/reference/reference.py).

Synthetic checkpoints come from tools/gen_checkpoint.py (real names and shapes, random weights),
random images are already at their target size (no resize), and the C side runs through
tests/encoder/encode_tool. For each case we print relative RMSE ||c - ref|| / ||ref|| and the max
abs error, and require

  PRECISE (f32 activations, f32 GEMM inputs): rel RMSE <= 1e-5
      measured 2.8e-7 .. 1.0e-6 (1.5e-6 with the sharpened attention of tiny-mlx-f16)
  INT8 (int8 block linears, kernels/gemm_q8.h): rel RMSE <= 1.5 x that case's measured error
      (INT8_MEASURED; it is deterministic across kernels: every INT8 GEMM kernel gives the
      portable one's bits, so only the attention kernel moves it), and the same bits for 1
      and 2 threads
  INT8 per 32-block (int8b, --int8=blocks): the same, with INT8B_MEASURED; and never above the
      modes' targets, 2.5e-2 (INT8) and 1.5e-2 (INT8 per block)
  FAST (bf16 GEMM inputs):                     rel RMSE <= 1.5 x that case's measured error
      (FAST_MEASURED: 1.4e-3 .. 2.3e-3, the same to 3% for the portable, AVX2 and AVX-512
      kernels; FAST_MEASURED_BF16_ATTENTION: 1.7e-3 .. 3.7e-3 where the CPU has AVX512-BF16 and
      FAST attention runs on it; encode_tool names the attention kernel it ran). A flat 5e-3 sat just above what an approximate kernel costs (quick-GELU moved
      FAST to 5.0-5.5e-3), so each case now has its own bound. A change that moves the FAST
      error on purpose (a new rounding) must remeasure (each case's error is printed).

Every subtle bug tried against this test moved PRECISE by orders of magnitude (tiny / e4b / 31B
cases; rel RMSE): RoPE pairing (2t, 2t+1) 0.27-0.37; RoPE x/y halves swapped 0.22-0.28; norm
weight as 1+w 0.70-0.95; pooling column-major 0.49-0.59 (only on grids with >1 pooled row and
column); input clip dropped 0.09-0.12; down_proj output clip dropped 0.011-0.022; GQA head
h % Hkv 0.88-1.17; standardize skipped 0.08-0.10; attention scale 1/sqrt(d) 0.22-0.29; position
planes swapped 0.74-1.2; v_norm missing 0.05-0.21. The FAST bound is below all of them too.

Cases: the tiny config (every option: clipped linears, standardize, GQA 4 heads / 2 kv heads) at
48x48, 96x48, 48x144, 144x96 and 240x192 (W x H; the last spans several attention tiles) in
both modes; a tiny variant stored differently (mlx names, f16, optiq sidecar, q/k norms x2: sharp
attention, FAST within 4e-3 through its f32 path, docs/NUMERICS.md §6.5, 1 and 2 threads equal);
the e4b shape with q/k norms x2 (FAST, the same 4e-3 bound);
tiny-oddk (D = 60, I = 120: every GEMM but the patch embedding has K % 16 != 0, the SIMD GEMM's
K tail, and head_dim 20, the attention's channel tail) at 144x96;
the e4b shape (bf16, single file) and the 31B shape (f32, two shards) cut to 2 layers, on
144x144 and 144x96 images. Output for 1 and 2 threads must be bit-identical.
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from pyutil import fail, gen_checkpoint as gen  # noqa: E402
import reference  # noqa: E402

TOOL = os.environ.get("G4V_ENCODE_TOOL",
                      os.path.join(pyutil.BUILD, "tests", "encoder", "encode_tool"))
TOL = {"precise": 1e-5}
# FAST rel RMSE per case, measured, per FAST attention kernel: the f32 attention kernels (the
# largest over G4V_ISA=portable, avx2, avx512 on a 2-core AVX-512 machine without BF16, and the
# same on AMD Zen 4), and the bf16 one that AVX512-BF16 CPUs run for FAST models (the largest of
# native Zen 4 and the SIMDe-emulated encode_tool_simde; it rounds q, k, v and P to bf16 and
# costs 1.1-1.6x the error). The bound is 1.5x it.
FAST_MEASURED = {
    "tiny 48x48": 2.33e-3, "tiny 96x48": 1.88e-3, "tiny 48x144": 1.68e-3,
    "tiny 144x96": 2.08e-3, "tiny 240x192": 1.69e-3, "tiny-oddk 144x96": 1.43e-3,
    "e4b-2layers 144x144": 1.54e-3, "31b-2layers 144x96": 1.74e-3,
}
FAST_MEASURED_BF16_ATTENTION = {
    "tiny 48x48": 3.72e-3, "tiny 96x48": 2.49e-3, "tiny 48x144": 2.07e-3,
    "tiny 144x96": 2.50e-3, "tiny 240x192": 1.93e-3, "tiny-oddk 144x96": 1.77e-3,
    "e4b-2layers 144x144": 1.90e-3, "31b-2layers 144x96": 2.05e-3,
}
# INT8 rel RMSE per case (default INT8 linears, docs/NUMERICS.md §12), measured with the f32
# attention kernels (the largest of G4V_ISA=avx512-nobf16 and portable) and with the bf16 one;
# the bound is 1.5x it. Every linear in int8 (v and o too) measures 1.4e-2 .. 2.0e-2 here and
# fails it; rounding codes toward zero instead of to nearest fails 2 of the 4 cases (a uniform
# scale error would not: the norms after every branch remove it).
INT8_MEASURED = {
    "tiny 144x96": 9.54e-3, "tiny-oddk 144x96": 8.18e-3, "e4b-2layers 144x144": 1.02e-2,
    "31b-2layers 144x96": 1.37e-2,
}
INT8_MEASURED_BF16_ATTENTION = {
    "tiny 144x96": 9.34e-3, "tiny-oddk 144x96": 8.10e-3, "e4b-2layers 144x144": 1.03e-2,
    "31b-2layers 144x96": 1.37e-2,
}
# INT8 with per-32-block scales (--int8=blocks, docs/NUMERICS.md §12.4), measured the same way
# (f32 attention: the larger of G4V_ISA=avx512-nobf16 and portable, which agree to 0.2%); the
# bound is 1.5x it as for INT8. The tiny config (K = 64 and 128: two to four blocks) gains
# nothing over INT8; the real shapes gain 27-42%.
INT8B_MEASURED = {
    "tiny 144x96": 1.00e-2, "tiny-oddk 144x96": 7.67e-3, "e4b-2layers 144x144": 7.42e-3,
    "31b-2layers 144x96": 7.95e-3,
}
INT8B_MEASURED_BF16_ATTENTION = {
    "tiny 144x96": 1.03e-2, "tiny-oddk 144x96": 7.51e-3, "e4b-2layers 144x144": 7.46e-3,
    "31b-2layers 144x96": 8.12e-3,
}
# The INT8 modes' targets (issue 37, restated from the W8A8 floor measured in issue 25): every
# case must also stay under them, whatever its measured error.
INT8_TARGET, INT8B_TARGET = 2.5e-2, 1.5e-2
BF16_ATTENTION = "avx512-bf16dp"
ALL_MODES = ("precise", "fast", "int8", "int8b")
FAST_MARGIN = 1.5
# Sharp attention (q/k norm weights x2): FAST takes its f32 path in those layers (docs/NUMERICS.md
# §6.5) and must stay within FAST's 4e-3 target as on the other checkpoints; without that path
# these cases measured 8e-3 .. 1.2e-2.
SHARP = {"tiny-mlx-f16 96x96", "e4b-2layers-sharp 144x144"}
FAST_SHARP_BOUND = 4e-3


def tolerance(name, w, h, mode, attention):
    if mode == "precise":
        return TOL[mode]
    if f"{name} {w}x{h}" in SHARP:
        return FAST_SHARP_BOUND
    if mode == "int8":
        table = INT8_MEASURED_BF16_ATTENTION if attention == BF16_ATTENTION else INT8_MEASURED
        return min(FAST_MARGIN * table[f"{name} {w}x{h}"], INT8_TARGET)
    if mode == "int8b":
        table = INT8B_MEASURED_BF16_ATTENTION if attention == BF16_ATTENTION else INT8B_MEASURED
        return min(FAST_MARGIN * table[f"{name} {w}x{h}"], INT8B_TARGET)
    table = FAST_MEASURED_BF16_ATTENTION if attention == BF16_ATTENTION else FAST_MEASURED
    return FAST_MARGIN * table[f"{name} {w}x{h}"]


def run_c(ck, img, out, mode, threads=2):
    """Runs encode_tool; returns its output and the attention kernel it ran."""
    cmd = [TOOL, ck, img, out, "--threads", str(threads)] + {"precise": ["--precise"],
                                                             "int8": ["--int8"],
                                                             "int8b": ["--int8=blocks"]
                                                             }.get(mode, [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr}")
    attention = [ln.split(":", 1)[1].strip() for ln in r.stderr.splitlines()
                 if ln.startswith("attention kernel:")]
    if not attention:
        raise RuntimeError(f"{TOOL} did not say which attention kernel ran: {r.stderr}")
    return np.load(out), attention[0]


def errors(c, ref):
    return np.linalg.norm(c - ref) / np.linalg.norm(ref), np.abs(c - ref).max()


def case(tmp, name, ck, w, h, modes=("precise", "fast"), seed=0, check_threads=False):
    check_threads = check_threads or "int8" in modes or "int8b" in modes
    img = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    ipath = os.path.join(tmp, f"{name}_{w}x{h}.npy")
    np.save(ipath, img)
    t0 = time.time()
    ref = reference.encode(reference.Checkpoint(ck), img)
    t_ref = time.time() - t0
    for mode in modes:
        t0 = time.time()
        c, attention = run_c(ck, ipath, os.path.join(tmp, "out.npy"), mode)
        t_c = time.time() - t0
        if c.shape != ref.shape:
            fail(f"{name} {w}x{h} {mode}: shape {c.shape} != {ref.shape}")
            continue
        rel, mx = errors(c.astype(np.float64), ref)
        tol = tolerance(name, w, h, mode, attention)
        pyutil.check(rel <= tol,
                     f"{name:14s} {w:4d}x{h:<4d} {mode:8s} rel_rmse {rel:.3e} <= {tol:.2e}, "
                     f"max_abs {mx:.3e}  (attention {attention}; ref {t_ref:.1f}s, C {t_c:.1f}s)")
        if check_threads:
            c1, _ = run_c(ck, ipath, os.path.join(tmp, "out1.npy"), mode, threads=1)
            pyutil.check(np.array_equal(c, c1), f"{name} {w}x{h} {mode}: 1 and 2 threads agree")


def test_encoder_ref():
    assert os.path.exists(TOOL), f"encode_tool not found at {TOOL}"
    with tempfile.TemporaryDirectory() as tmp:
        tiny = os.path.join(tmp, "tiny")
        gen(tiny, "--config", "tiny", "--seed", "1")
        for i, (w, h) in enumerate([(48, 48), (96, 48), (48, 144), (144, 96), (240, 192)]):
            case(tmp, "tiny", tiny, w, h, seed=10 + i, check_threads=(i == 4),
                 modes=ALL_MODES if (w, h) == (144, 96) else ("precise", "fast"))
        alt = os.path.join(tmp, "tiny_alt")
        gen(alt, "--config", "tiny", "--seed", "2", "--naming", "mlx", "--dtype", "f16", "--sidecar",
            "--qk-scale", "2")
        # q/k norms x2 sharpen the attention, which amplifies bf16 rounding (docs/NUMERICS.md
        # §8.4); FAST detects it and takes its f32 path there (§6.5): same bound as elsewhere
        case(tmp, "tiny-mlx-f16", alt, 96, 96, seed=20, check_threads=True)
        oddk = os.path.join(tmp, "tiny_oddk")
        gen(oddk, "--config", "tiny-oddk", "--seed", "5")
        case(tmp, "tiny-oddk", oddk, 144, 96, seed=50, modes=ALL_MODES)
        if os.environ.get("G4V_EMULATED"):  # a cross build under qemu (make test-arm64)
            print("skip the e4b and 31B shapes: ~10 min each under " + os.environ["G4V_EMULATED"]
                  + "; the tiny cases cover every kernel path and tail")
            return
        e4b = os.path.join(tmp, "e4b")
        gen(e4b, "--config", "e4b", "--layers", "2", "--seed", "3", "--no-decoys")
        case(tmp, "e4b-2layers", e4b, 144, 144, seed=30, modes=ALL_MODES)
        sharp = os.path.join(tmp, "e4b_sharp")
        gen(sharp, "--config", "e4b", "--layers", "2", "--seed", "3", "--no-decoys",
            "--qk-scale", "2")
        case(tmp, "e4b-2layers-sharp", sharp, 144, 144, modes=("fast",), seed=30)
        big = os.path.join(tmp, "31b")
        gen(big, "--config", "31b", "--layers", "2", "--seed", "4", "--no-decoys", "--shards", "2",
            "--dtype", "f32")
        case(tmp, "31b-2layers", big, 144, 96, seed=40, modes=ALL_MODES)

