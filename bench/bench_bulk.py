#!/usr/bin/python3
"""bench_bulk.py - images/s of bulk encoding on a Dask LocalCluster (gemma4_vision.bulk) for 1
and 2 worker processes x 1 and 2 task threads per worker, against a plain loop of `g4v encode`
(one process per image, as a shell loop would run it) and one `g4v encode DIR` batch, on the same
directory of mixed images, in the same run. `make bench-python` runs it.

    bench_bulk.py --model DIR --images DIR [--tokens 140] [--configs 1x1,1x2,2x1,2x2] [--g4v BIN]

--images is created if missing (24 images: JPEG, PNG and WebP, 160x120 up to 1280x960, some
portrait; drawn from a fixed seed). Each bulk run starts its own LocalCluster and gets a fresh
output directory; its g4v threads per task are the CPUs divided among the tasks that run at once.
Two rates are shown: over the encoding phase (first task sent to last shard written) and over
the whole call (cluster start, model load on every worker, manifest). Each bulk output is checked
bit for bit against the batch CLI's. Prints a Markdown table and the load average before and
after, since other work on the machine changes the numbers.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from PIL import Image

from gemma4_vision import bulk
from gemma4_vision import safetensors as st


def make_images(d, n=24, seed=0):
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(seed)
    sizes = [(120, 160), (240, 320), (480, 640), (960, 1280), (640, 480), (300, 500)]
    for i in range(n):
        h, w = sizes[i % len(sizes)]
        # smooth content (a gradient plus noise) so JPEG and WebP sizes are realistic
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([(x * 255 // w), (y * 255 // h), ((x + y) * 127 // (w + h))], -1)
        a = np.clip(base + rng.normal(0, 20, (h, w, 3)), 0, 255).astype(np.uint8)
        ext = ("jpg", "png", "webp")[i % 3]
        Image.fromarray(a).save(os.path.join(d, f"img{i:03d}.{ext}"))


def load():
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--images", required=True)
    p.add_argument("--tokens", type=int, default=140)
    p.add_argument("--configs", default="1x1,1x2,2x1,2x2")
    p.add_argument("--g4v", default=os.path.join("build", "g4v"))
    a = p.parse_args()
    if not os.path.isdir(a.images) or not os.listdir(a.images):
        make_images(a.images)
    files = bulk.expand_inputs([a.images])
    n = len(files)
    cpus = len(os.sched_getaffinity(0))
    print(f"bench_bulk: {n} images in {a.images}, model {a.model}, --tokens {a.tokens}, "
          f"{cpus} CPUs; {load()}", flush=True)
    rows = []
    tmp = tempfile.mkdtemp(prefix="bench_bulk-")
    try:
        t = time.time()
        for f in files:
            subprocess.run([a.g4v, "encode", "--model", a.model, f, "--tokens", str(a.tokens),
                            "--quiet", "-o", os.path.join(tmp, "one.npy")], check=True)
        dt = time.time() - t
        rows.append(("`g4v encode` loop, one process per image", f"{cpus}", dt, n / dt, n / dt))
        print(rows[-1], flush=True)
        ref = os.path.join(tmp, "cli.safetensors")
        t = time.time()
        subprocess.run([a.g4v, "encode", "--model", a.model, a.images, "--tokens",
                        str(a.tokens), "--quiet", "-o", ref], check=True)
        dt = time.time() - t
        rows.append(("`g4v encode DIR`, one process", f"{cpus}", dt, n / dt, n / dt))
        print(rows[-1], flush=True)
        for cfg in a.configs.split(","):
            w, tpw = map(int, cfg.split("x"))
            out = os.path.join(tmp, f"bulk-{cfg}")
            s = bulk.encode([a.images], a.model, out, tokens=a.tokens, workers=w,
                            threads_per_worker=tpw, shard_size=2, progress=False)
            assert s.encoded == n and s.failed == 0, s
            ds = bulk.open_output(out)
            for row in ds:  # the same bits as the CLI (which names tensors after the files)
                name = os.path.splitext(os.path.basename(row["source"]))[0]
                assert ds.features(row).tobytes() == st.tensor(ref, name).tobytes(), row
            et = max(1, cpus // (w * tpw))
            rows.append((f"bulk, {w} worker{'s' if w > 1 else ''} x {tpw} thread"
                         f"{'s' if tpw > 1 else ''}", f"{w}x{tpw}x{et}", s.wall_seconds,
                         s.images_per_s, n / s.wall_seconds))
            print(rows[-1], flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nbench_bulk: done; {load()}\n")
    print("| run | threads (workers x tasks x g4v) | wall s | images/s, encoding | "
          "images/s, whole call |")
    print("|---|---|---:|---:|---:|")
    for name, thr, wall, r1, r2 in rows:
        print(f"| {name} | {thr} | {wall:.1f} | {r1:.2f} | {r2:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
