#!/usr/bin/python3
"""test_amx_ref.py - FAST through the AMX kernels (the tile GEMM and the tile attention, run on
the tile emulator: tests/encoder/encode_tool_simde, whose kernel tables offer every x86 variant)
against the float64 reference (tests/reference/reference.py), for the four shapes Gemma 4 ships:
e2b and e4b (D 768, head size 64), 31B (D 1152, head size 72, I = 4304: the K % 32 tail of the
down projection) and the 12B unified embedder (docs/NUMERICS.md §9), each tower cut to 2 layers.

  relative RMSE ||c - ref|| / ||ref|| <= 2e-3 at 70 tokens (630 patches), every case;
  G4V_AMX_REF_FULL=1 (make accuracy-amx) adds 1120 tokens (10,080 patches): ~10x the time.

The tool must say it ran the AMX attention (for the towers), so a table that stopped offering
the tile kernels cannot pass by running another path. The emulated tiles give the bits AMX
hardware gives where it follows the SDM (docs/NUMERICS.md §13); make bench-amx checks that.
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from pyutil import check, gen_checkpoint as gen  # noqa: E402
import reference  # noqa: E402

TOOL = os.environ.get("G4V_ENCODE_TOOL",
                      os.path.join(pyutil.BUILD, "tests", "encoder", "encode_tool_simde"))
BOUND = 2e-3
# (W, H) at the target size of the budget: 70 tokens = 21 x 30 patches, 1120 = 105 x 96.
SIZES = {70: (336, 480), 1120: (1680, 1536)}


def run(ck, img, out):
    r = subprocess.run([TOOL, ck, img, out, "--threads", "2"], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{TOOL} failed ({r.returncode}): {r.stderr}")
    att = [ln.split(":", 1)[1].strip() for ln in r.stderr.splitlines()
           if ln.startswith("attention kernel:")]
    return np.load(out), att[0] if att else None


def case(tmp, name, ck, tokens, unified=False):
    w, h = SIZES[tokens]
    img = np.random.default_rng(tokens).integers(0, 256, (h, w, 3), dtype=np.uint8)
    ipath = os.path.join(tmp, f"{name}_{tokens}.npy")
    np.save(ipath, img)
    t0 = time.time()
    ck_ref = reference.Checkpoint(ck)
    ref = reference.encode_unified(ck_ref, img) if unified else reference.encode(ck_ref, img)
    t_ref = time.time() - t0
    t0 = time.time()
    c, att = run(ck, ipath, os.path.join(tmp, "out.npy"))
    t_c = time.time() - t0
    if not unified:
        check(att == "amx", f"{name} {tokens} tokens: the AMX attention ran (got {att})")
    if c.shape != ref.shape:
        check(False, f"{name} {tokens} tokens: shape {c.shape} != {ref.shape}")
        return
    rel = np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref)
    check(rel <= BOUND, f"{name:8s} {tokens:5d} tokens FAST on AMX tiles: rel_rmse {rel:.3e} <= "
                        f"{BOUND:.0e}  (ref {t_ref:.0f}s, emulated C {t_c:.0f}s)")


def test_amx_ref():
    assert os.path.exists(TOOL), f"encode_tool_simde not found at {TOOL}"
    budgets = (70, 1120) if os.environ.get("G4V_AMX_REF_FULL") == "1" else (70,)
    with tempfile.TemporaryDirectory() as tmp:
        cks = {}
        for name, args in (("e2b", ["--config", "e2b", "--layers", "2", "--seed", "6"]),
                           ("e4b", ["--config", "e4b", "--layers", "2", "--seed", "3"]),
                           ("31b", ["--config", "31b", "--layers", "2", "--seed", "4"]),
                           ("12b", ["--config", "12b", "--seed", "8"])):
            cks[name] = os.path.join(tmp, name)
            gen(cks[name], *args, "--no-decoys")
        for tokens in budgets:
            for name, ck in cks.items():
                case(tmp, name, ck, tokens, unified=(name == "12b"))

