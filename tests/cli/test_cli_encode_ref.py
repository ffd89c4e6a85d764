#!/usr/bin/python3
"""test_cli_encode_ref.py - `g4v encode` end to end: PNG -> soft tokens against Pillow + the float64 reference.

The expected output is computed independently: the target size from the rule of
docs/PREPROCESSING.md §5, the resize by Pillow's BICUBIC (the canonical resampler), then
tests/reference/reference.py. The CLI must agree to PRECISE-mode accuracy (rel RMSE <= 1e-5, as test_encoder_ref.py), print the prompt
span <|image> <|image|> x N <image|> with the config's token ids, and give the documented exit
codes on bad input: 1 usage (bad budget, missing -o), 2 input (missing / corrupt image),
3 model (missing checkpoint), 4 output (unwritable path).
"""
import os
import sys
import tempfile

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from pyutil import check, target_size  # noqa: E402
import reference  # noqa: E402


def g4v(*args):
    return pyutil.g4v("encode", *args)


def test_cli_encode_ref():
    with tempfile.TemporaryDirectory() as tmp:
        ck = os.path.join(tmp, "tiny")
        pyutil.gen_checkpoint(ck, "--config", "tiny", "--seed", "9")
        rng = np.random.default_rng(5)
        src = rng.integers(0, 256, (100, 150, 3), dtype=np.uint8)
        png = os.path.join(tmp, "img.png")
        Image.fromarray(src).save(png)
        out = os.path.join(tmp, "out.npy")

        th, tw = target_size(100, 150, 70)
        resized = pyutil.pillow_resize(src, tw, th)
        ref = reference.encode(reference.Checkpoint(ck), resized)
        r = g4v("--model", ck, png, "--tokens", "70", "--precise", "--threads", "2", "-o", out)
        check(r.returncode == 0, f"encode png exit 0 (got {r.returncode}: {r.stderr.strip()})")
        if r.returncode == 0:
            c = np.load(out)
            check(c.dtype == np.float32 and c.shape == ref.shape,
                  f"output float32 {ref.shape} (got {c.dtype} {c.shape})")
            if c.shape == ref.shape:
                rel = np.linalg.norm(c - ref) / np.linalg.norm(ref)
                check(rel <= 1e-5, f"png 150x100 -> {tw}x{th} precise rel RMSE {rel:.3e} <= 1e-5")
            n = (th // 48) * (tw // 48)
            lines = r.stdout.splitlines()
            span = "<|image>" + "<|image|>" * n + "<image|>"
            check(len(lines) == 2 and lines[0] == span, f"prompt span with {n} image tokens")
            check(len(lines) == 2 and lines[1] == f"ids: 255999 258880x{n} 258882",
                  f"token ids line (got {lines[1:] if len(lines) > 1 else None})")

        # a raw uint8 .npy already at a target size is not resized
        img = rng.integers(0, 256, (96, 144, 3), dtype=np.uint8)
        npy = os.path.join(tmp, "img.npy")
        np.save(npy, img)
        th, tw = target_size(96, 144, 70)
        resized = pyutil.pillow_resize(img, tw, th)
        ref = reference.encode(reference.Checkpoint(ck), resized)
        r = g4v("--model", ck, npy, "--tokens", "70", "-o", out)
        check(r.returncode == 0, f"encode npy exit 0 (got {r.returncode}: {r.stderr.strip()})")
        if r.returncode == 0:
            c = np.load(out)
            rel = np.linalg.norm(c - ref) / np.linalg.norm(ref) if c.shape == ref.shape else 1
            check(rel <= 5e-3, f"npy fast mode rel RMSE {rel:.3e} <= 5e-3")

        bad = os.path.join(tmp, "bad.png")
        with open(png, "rb") as f:
            data = f.read()
        with open(bad, "wb") as f:
            f.write(data[: len(data) // 3])
        cases = [
            ("--help", ["--help"], 0),
            ("missing -o", ["--model", ck, png], 1),
            ("unsupported budget", ["--model", ck, png, "--tokens", "100", "-o", out], 1),
            ("unknown option", ["--model", ck, png, "--frobnicate", "-o", out], 1),
            ("missing image", ["--model", ck, os.path.join(tmp, "none.png"), "-o", out], 2),
            ("truncated png", ["--model", ck, bad, "-o", out], 2),
            ("missing model", ["--model", os.path.join(tmp, "nomodel"), png, "-o", out], 3),
            ("unwritable output", ["--model", ck, png, "-o", os.path.join(tmp, "no", "x.npy")], 4),
        ]
        for name, args, want in cases:
            r = g4v(*args)
            check(r.returncode == want and (want == 0 or r.stderr.strip()),
                  f"{name}: exit {want} with a message (got {r.returncode}: {r.stderr.strip()[:120]})")

