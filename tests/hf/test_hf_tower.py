#!/usr/bin/env python3
"""test_hf_tower.py - our soft tokens against transformers' own Gemma 4 vision code.

For every vision variant (e2b, e4b, 26B-A4B, 31B towers at their real shapes, the 12B unified
embedder, and our small test shapes with GQA and odd K), a synthetic checkpoint is made with
tools/gen_checkpoint.py and encoded five ways from the same image:

  ours PRECISE, ours FAST      `g4v encode` (the CLI a user runs)
  HF float32, HF bfloat16      transformers 5.23's Gemma4VisionModel + Gemma4MultimodalEmbedder
                               (Gemma4UnifiedVisionEmbedder for the 12B), fed by its own image
                               processor (pixel_values padded to max_patches, as users get them)
  float64                      tests/reference/reference.py, our independent oracle

The image is a real photo, resized once (Pillow BICUBIC) to the exact target size of the budget
so that no implementation resizes it: this test is about the model, test_hf_preprocess.py about
the pixels. Bounds (relative RMS error, ||a - b|| / ||b||):

  ours PRECISE vs HF float32     <= 1e-5   both are float32 computations of the same math
  float64 vs HF float32          <= 1e-5   if they disagree, one of them misreads the model
  ours PRECISE vs float64        <= 2e-6   (docs/NUMERICS.md)
  ours FAST vs float64           <= 4e-3   (docs/NUMERICS.md)
  ours FAST vs HF bfloat16       measured only (HF bf16 rounds every activation: its own error
                                 against float64 is printed beside it)

usage: test_hf_tower.py [--quick] [--only NAME[,NAME]] [--json OUT.json]
  --quick   the small shapes and one real shape (e4b) only
"""
import argparse
import os
import sys
import time

import numpy as np
import torch
from PIL import Image

import hfutil
from hfutil import check, rel

import hf_models
import reference
import pillow_ref

from transformers.models.gemma4.image_processing_pil_gemma4 import Gemma4ImageProcessorPil
from transformers.models.gemma4_unified.image_processing_gemma4_unified import (
    Gemma4UnifiedImageProcessor)

# name, gen_checkpoint.py arguments, photo, budget
CASES = [
    ("tiny", ["--config", "tiny", "--seed", "1"], "chelsea.png", 280),
    ("tiny-oddk", ["--config", "tiny-oddk", "--seed", "2"], "coffee.png", 70),
    ("tiny-unclipped", ["--config", "tiny", "--seed", "3", "--clipped", "0", "--standardize", "0",
                        "--naming", "mlx", "--dtype", "f16"], "rocket.jpg", 140),
    ("e2b", ["--config", "e2b", "--seed", "4"], "astronaut.png", 140),
    ("e4b", ["--config", "e4b", "--seed", "5"], "motorcycle_left.png", 280),
    ("26b-a4b", ["--config", "26b-a4b", "--seed", "6", "--shards", "3"], "hubble_deep_field.jpg", 70),
    ("31b", ["--config", "31b", "--seed", "7", "--dtype", "f32"], "retina.jpg", 70),
    ("unified-tiny", ["--config", "unified-tiny", "--seed", "8"], "chelsea.png", 70),
    ("12b", ["--config", "12b", "--seed", "9"], "coffee.png", 280),
    ("12b-transformers-names", ["--config", "12b", "--seed", "9", "--spelling", "transformers",
                                "--naming", "mlx"], "coffee.png", 140),
]
QUICK = {"tiny", "tiny-oddk", "tiny-unclipped", "e4b", "unified-tiny"}

BOUND_PRECISE_HF32 = 1e-5
BOUND_REF_HF32 = 1e-5
BOUND_PRECISE_REF = 2e-6
BOUND_FAST_REF = 4e-3


def at_target_size(photo, budget, out_png):
    """The photo resized (Pillow BICUBIC, RGB) to the Gemma 4 target size of budget."""
    im = Image.open(photo).convert("RGB")
    th, tw = pillow_ref.target_size(im.height, im.width, budget)
    im = im.resize((tw, th), Image.BICUBIC)
    assert pillow_ref.target_size(th, tw, budget) == (th, tw), "target size is not a fixed point"
    im.save(out_png)
    return np.asarray(im)


def ours(ckpt, png, budget, precise, out):
    cmd = [hfutil.G4V, "encode", "--model", ckpt, png, "--tokens", str(budget), "--quiet",
           "-o", out] + (["--precise"] if precise else [])
    t0 = time.time()
    hfutil.run(cmd)
    return np.load(out), time.time() - t0


def hf(ckpt, png, budget, unified, dtype):
    model = (hf_models.Unified if unified else hf_models.Tower)(ckpt, dtype)
    proc = Gemma4UnifiedImageProcessor if unified else Gemma4ImageProcessorPil
    feats = proc(max_soft_tokens=budget)(images=Image.open(png), return_tensors="pt")
    t0 = time.time()
    rows = model(feats["pixel_values"], feats["image_position_ids"])
    return rows[0], time.time() - t0


def run_case(name, args, photo, budget, tmp):
    ckpt = hfutil.checkpoint(name, *args, "--no-decoys") if name.startswith("12b") else \
        hfutil.checkpoint(name, *args)
    unified = "unified" in args[1] or args[1] == "12b"
    png = os.path.join(tmp, f"{name}.png")
    img = at_target_size(hfutil.photo(photo), budget, png)
    print(f"{name}: {photo} at {img.shape[1]}x{img.shape[0]} (budget {budget})", flush=True)

    ck = reference.Checkpoint(ckpt)
    t0 = time.time()
    ref = (reference.encode_unified if unified else reference.encode)(ck, img)
    t_ref = time.time() - t0
    precise, t_p = ours(ckpt, png, budget, True, os.path.join(tmp, "p.npy"))
    fast, t_f = ours(ckpt, png, budget, False, os.path.join(tmp, "f.npy"))
    h32, t_h32 = hf(ckpt, png, budget, unified, torch.float32)
    h16, t_h16 = hf(ckpt, png, budget, unified, torch.bfloat16)
    shapes = {a.shape for a in (ref, precise, fast, h32, h16)}
    row = dict(case=name, budget=budget, size=f"{img.shape[1]}x{img.shape[0]}", tokens=ref.shape[0],
               seconds=dict(ref64=t_ref, precise=t_p, fast=t_f, hf_f32=t_h32, hf_bf16=t_h16))
    if len(shapes) != 1:
        check(False, f"{name}: shapes agree {shapes}", **row)
        return
    e = {
        "precise_vs_hf32": rel(precise, h32), "ref64_vs_hf32": rel(ref, h32),
        "precise_vs_ref64": rel(precise, ref), "fast_vs_ref64": rel(fast, ref),
        "fast_vs_hfbf16": rel(fast, h16), "hfbf16_vs_ref64": rel(h16, ref),
        "hf32_vs_ref64": rel(h32, ref),
    }
    row["errors"] = {k: v[0] for k, v in e.items()}
    row["max_abs"] = {k: v[1] for k, v in e.items()}
    print(f"  rel RMSE: PRECISE-HF32 {e['precise_vs_hf32'][0]:.2e}  f64-HF32 "
          f"{e['ref64_vs_hf32'][0]:.2e}  PRECISE-f64 {e['precise_vs_ref64'][0]:.2e}  FAST-f64 "
          f"{e['fast_vs_ref64'][0]:.2e}  HFbf16-f64 {e['hfbf16_vs_ref64'][0]:.2e}  FAST-HFbf16 "
          f"{e['fast_vs_hfbf16'][0]:.2e}", flush=True)
    check(e["precise_vs_hf32"][0] <= BOUND_PRECISE_HF32,
          f"{name}: ours PRECISE vs HF float32 {e['precise_vs_hf32'][0]:.2e} <= {BOUND_PRECISE_HF32:.0e}", **row)
    check(e["ref64_vs_hf32"][0] <= BOUND_REF_HF32,
          f"{name}: float64 reference vs HF float32 {e['ref64_vs_hf32'][0]:.2e} <= {BOUND_REF_HF32:.0e}")
    check(e["precise_vs_ref64"][0] <= BOUND_PRECISE_REF,
          f"{name}: ours PRECISE vs float64 {e['precise_vs_ref64'][0]:.2e} <= {BOUND_PRECISE_REF:.0e}")
    check(e["fast_vs_ref64"][0] <= BOUND_FAST_REF,
          f"{name}: ours FAST vs float64 {e['fast_vs_ref64'][0]:.2e} <= {BOUND_FAST_REF:.0e}")
    check(e["fast_vs_ref64"][0] < e["hfbf16_vs_ref64"][0],
          f"{name}: ours FAST closer to float64 than HF bfloat16 ({e['fast_vs_ref64'][0]:.2e} < "
          f"{e['hfbf16_vs_ref64'][0]:.2e})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only")
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.manual_seed(0)
    os.makedirs(hfutil.WORK, exist_ok=True)
    tmp = os.path.join(hfutil.WORK, "tower")
    os.makedirs(tmp, exist_ok=True)
    only = set(a.only.split(",")) if a.only else None
    for name, args, photo, budget in CASES:
        if (only and name not in only) or (a.quick and name not in QUICK):
            continue
        run_case(name, args, photo, budget, tmp)
    return hfutil.finish("test_hf_tower", a.json)


if __name__ == "__main__":
    sys.exit(main())
