"""bench_preprocess.py - decode + resize of a 4000x3000 JPEG to the 280-token size: g4v vs Pillow.

Both sides run in this one invocation, alternating, 5 timed rounds each after a warm-up; the
result is the median of 5 and the ratio Pillow / g4v. Timed work:
  g4v     g4v_image_load in process (bench_preprocess binary; decode + EXIF + target size +
          Pillow-exact BICUBIC resize, rows streamed from libjpeg into the resize)
  Pillow  Image.open + load + resize(target size, BICUBIC)   (Debian's Pillow 9.4, libjpeg-turbo)
  Pillow (load_image path) adds what transformers' load_image does: exif_transpose (a copy when
          there is no orientation, a transposition for orientation 6) and convert("RGB") (another
          copy); only this line orients like g4v does
The image is generated (photo-like: gradients + noise, quality 90, 4:2:0) unless one is given.
usage: bench_preprocess.py [--bin BENCH_BINARY] [--image FILE] [--tokens N] [--rounds N]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from PIL import Image, ImageOps

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "image"))
import pillow_ref as ref  # noqa: E402


def make_image(path):
    rng = np.random.default_rng(0)
    h, w = 3000, 4000
    y, x = np.mgrid[0:h, 0:w]
    a = np.stack([x * 255 // w, y * 255 // h, (x + y) * 255 // (w + h)], -1).astype(np.float32)
    a += rng.normal(0, 20, (h, w, 3))
    Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).save(path, quality=90)


def pillow_once(path, tokens, full):
    t = time.perf_counter()
    im = Image.open(path)
    if full:
        im = ImageOps.exif_transpose(im).convert("RGB")
    else:
        im.load()
    th, tw = ref.target_size(im.size[1], im.size[0], tokens)
    im.resize((tw, th), Image.BICUBIC)
    return (time.perf_counter() - t) * 1e3


def ours_once(binary, path, tokens):
    r = subprocess.run([binary, path, str(tokens), "2", "load"], capture_output=True, text=True,
                       check=True)
    line = [l for l in r.stdout.splitlines() if l.startswith("times load:")][0]
    return float(line.split()[-1]), r.stdout  # the second repetition (the first warms up)


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--bin", default=os.path.join(here, "..", "build-img", "tests", "image",
                                                  "bench_preprocess"))
    ap.add_argument("--image")
    ap.add_argument("--tokens", type=int, default=280)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    path = a.image
    if not path:
        path = os.path.join(tempfile.mkdtemp(), "bench_4000x3000.jpg")
        make_image(path)
    w, h = Image.open(path).size
    th, tw = ref.target_size(h, w, a.tokens)
    pillow_once(path, a.tokens, False)  # warm-up
    ours_once(a.bin, path, a.tokens)
    tp, tf, to = [], [], []
    for _ in range(a.rounds):
        tp.append(pillow_once(path, a.tokens, False))
        tf.append(pillow_once(path, a.tokens, True))
        t, out = ours_once(a.bin, path, a.tokens)
        to.append(t)
    mp, mf, mo = (statistics.median(x) for x in (tp, tf, to))
    print(f"image {w}x{h} -> {tw}x{th} ({a.tokens} tokens), {a.rounds} rounds, median:")
    print(f"  g4v  decode+resize            {mo:8.1f} ms   {out.splitlines()[0]}")
    print(f"  Pillow decode+resize          {mp:8.1f} ms   ratio Pillow/g4v = {mp / mo:.2f}")
    print(f"  Pillow load_image path        {mf:8.1f} ms   ratio Pillow/g4v = {mf / mo:.2f}")
    # where the time goes on each side (informational)
    r = subprocess.run([a.bin, path, str(a.tokens), "5"], capture_output=True, text=True)
    for l in r.stdout.splitlines():
        if "median" in l:
            print("  g4v   " + l)
    td, tr = [], []
    for _ in range(a.rounds):
        t0 = time.perf_counter()
        im = Image.open(path)
        im.load()
        t1 = time.perf_counter()
        im.resize((tw, th), Image.BICUBIC)
        td.append((t1 - t0) * 1e3)
        tr.append((time.perf_counter() - t1) * 1e3)
    print(f"  Pillow decode median {statistics.median(td):8.2f} ms, resize median "
          f"{statistics.median(tr):8.2f} ms")


if __name__ == "__main__":
    main()
