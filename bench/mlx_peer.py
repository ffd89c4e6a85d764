#!/usr/bin/env python3
"""mlx_peer.py - mlx-vlm's Gemma 4 vision tower on mlx's CPU backend, beside ours, in one run.

The peer from the project's own family (mlx-vlm runs Gemma 4 on Apple GPUs; `mlx[cpu]` is its
Linux CPU build). For one synthetic checkpoint and one image at its target size:

  accuracy  mlx-vlm's VisionModel + MultimodalEmbedder (mlx_vlm/models/gemma4) in float32 and
            bfloat16, and ours FAST and PRECISE, against our float64 reference (rel RMSE);
  speed     the encode alone (weights loaded, one warm-up), median of --reps runs, interleaved:
            mlx-vlm f32 and bf16 vs `g4v encode` (its own reported encode seconds, FAST).

mlx-vlm is fed the pixel values transformers' PIL processor gives (our `g4v preprocess` output,
byte-identical to it, padded to max_patches with (-1, -1) positions as the processor pads).
Run it with scripts/hf-env.sh --mlx's python: `make bench-mlx` does.

usage: mlx_peer.py CHECKPOINT IMAGE_AT_TARGET_SIZE --tokens N [--reps 3] [--threads 2]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import mlx.core as mx
import numpy as np
from mlx_vlm.models.gemma4.config import VisionConfig
from mlx_vlm.models.gemma4.gemma4 import MultimodalEmbedder
from mlx_vlm.models.gemma4.vision import VisionModel
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
import reference  # noqa: E402


def load_mlx(ckpt, dtype):
    cfg = json.load(open(os.path.join(ckpt, "config.json")))
    vc = cfg["vision_config"]
    vision = VisionModel(VisionConfig.from_dict(vc))
    embed = MultimodalEmbedder(vc["hidden_size"], cfg["text_config"]["hidden_size"],
                               vc.get("rms_norm_eps", 1e-6))
    tensors = {}
    for fn in sorted(os.listdir(ckpt)):
        if fn.endswith(".safetensors"):
            for k, v in mx.load(os.path.join(ckpt, fn)).items():
                tensors[k[len("model."):] if k.startswith("model.") else k] = v
    vw = [(k[len("vision_tower."):], v) for k, v in tensors.items()
          if k.startswith("vision_tower.") and "rotary_emb" not in k and "pooler.scale" not in k]
    ew = [(k[len("embed_vision."):], v) for k, v in tensors.items() if k.startswith("embed_vision.")]
    vision.load_weights(vw, strict=True)
    embed.load_weights(ew, strict=True)
    vision.set_dtype(dtype)
    embed.set_dtype(dtype)
    mx.eval(vision.parameters(), embed.parameters())
    return vision, embed


def pixels(g4v, image, tokens, tmp):
    prefix = os.path.join(tmp, "pre")
    subprocess.run([g4v, "preprocess", image, "--tokens", str(tokens), "-o", prefix], check=True)
    p, pos = np.load(prefix + ".npy"), np.load(prefix + ".positions.npy")
    n = tokens * 9
    pv = np.zeros((1, n, p.shape[1]), np.float32)
    pp = np.full((1, n, 2), -1, np.int32)
    pv[0, :len(p)], pp[0, :len(p)] = p, pos
    return mx.array(pv), mx.array(pp)


def run_mlx(model, pv, pp):
    vision, embed = model
    out = embed(vision(pv.astype(vision.patch_embedder.input_proj.weight.dtype), pp))
    mx.eval(out)
    return out


def ours(g4v, ckpt, image, tokens, threads, precise, out):
    cmd = [g4v, "encode", "--model", ckpt, image, "--tokens", str(tokens), "--threads",
           str(threads), "--json", "-o", out] + (["--precise"] if precise else [])
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    info = json.loads(r.stdout.strip().splitlines()[-1])
    return np.load(out), info["seconds"]


def rel(a, ref):
    a = np.asarray(a, np.float64).reshape(ref.shape)
    return np.linalg.norm(a - ref) / np.linalg.norm(ref)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("image", help="an image already at its target size for --tokens")
    ap.add_argument("--tokens", type=int, default=280)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--g4v", default=os.path.join(ROOT, "build", "g4v"))
    a = ap.parse_args()
    img = np.asarray(Image.open(a.image).convert("RGB"))
    ref = reference.encode(reference.Checkpoint(a.checkpoint), img)
    with tempfile.TemporaryDirectory() as tmp:
        pv, pp = pixels(a.g4v, a.image, a.tokens, tmp)
        models = {"mlx-vlm f32": load_mlx(a.checkpoint, mx.float32),
                  "mlx-vlm bf16": load_mlx(a.checkpoint, mx.bfloat16)}
        outs, times = {}, {k: [] for k in ["ours FAST", "ours PRECISE", *models]}
        for name, m in models.items():
            outs[name] = np.array(run_mlx(m, pv, pp).astype(mx.float32))  # warm-up + output
        for _ in range(a.reps):
            for name, m in models.items():
                t0 = time.perf_counter()
                run_mlx(m, pv, pp)
                times[name].append(time.perf_counter() - t0)
            for name, precise in (("ours FAST", False), ("ours PRECISE", True)):
                outs[name], s = ours(a.g4v, a.checkpoint, a.image, a.tokens, a.threads, precise,
                                     os.path.join(tmp, "o.npy"))
                times[name].append(s)
    print(f"{os.path.basename(a.checkpoint.rstrip('/'))}, {img.shape[1]}x{img.shape[0]}, "
          f"{ref.shape[0]} tokens, mlx {mx.__version__} on {mx.default_device()}, ours "
          f"{a.threads} threads; median of {a.reps}")
    base = statistics.median(times["ours FAST"])
    print(f"{'':14s} {'rel RMSE vs float64':>20s} {'encode s':>10s} {'vs ours FAST':>13s}")
    for name in times:
        med = statistics.median(times[name])
        print(f"{name:14s} {rel(outs[name], ref):20.2e} {med:10.3f} {med / base:12.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
