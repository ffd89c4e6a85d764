#!/usr/bin/python3
"""int8_speed.py - the INT8 modes against FAST, side by side in one run, as ratios.

usage: int8_speed.py --encode-tool PATH --model DIR [--sizes 768x768,1680x1536] [--threads 2]
                     [--rounds 3] [--repeat 2] [--modes int8,int8b]
For each image size (random RGB already at a target size: 768x768 is 256 soft tokens,
1680x1536 1120) and each round, encode_tool runs FAST then each mode (int8: --int8, per
channel; int8b: --int8=blocks, per 32-block; each --repeat warm encodes in one process after the
load; the fastest counts), so all modes see the same machine conditions; the table gives the
median over rounds of each and FAST / mode (> 1: the mode is faster). Report the ratios, not the
seconds, on a shared machine.
"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile

import numpy as np


def encode_seconds(tool, model, img, threads, repeat, args):
    r = subprocess.run([tool, model, img, os.devnull, "--threads", str(threads),
                        "--repeat", str(repeat)] + args, capture_output=True, text=True, check=True)
    return min(float(m) for m in re.findall(r"^encode [^:]*: ([0-9.]+) s", r.stderr, re.M))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encode-tool", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--sizes", default="768x768,1680x1536")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--modes", default="int8,int8b")
    a = ap.parse_args()
    modes = a.modes.split(",")
    flags = {"int8": ["--int8"], "int8b": ["--int8=blocks"]}
    for m in modes:
        if m not in flags:
            ap.error(f"unknown mode {m!r} (int8 or int8b)")
    print(f"model {a.model}, {a.threads} threads, {a.rounds} rounds of FAST then "
          f"{', '.join(m.upper() for m in modes)}, best of {a.repeat} warm encodes each; "
          f"load: {os.getloadavg()[0]:.1f}")
    print("| image | FAST s | " + " | ".join(f"{m.upper()} s" for m in modes) + " | " +
          " | ".join(f"FAST / {m.upper()}" for m in modes) + " |")
    print("|---|---|" + "---|---|" * len(modes))
    with tempfile.TemporaryDirectory() as tmp:
        for size in a.sizes.split(","):
            w, h = (int(v) for v in size.split("x"))
            img = os.path.join(tmp, f"{w}x{h}.npy")
            np.save(img, np.random.default_rng(1).integers(0, 256, (h, w, 3), dtype=np.uint8))
            fast, secs = [], {m: [] for m in modes}
            for _ in range(a.rounds):
                fast.append(encode_seconds(a.encode_tool, a.model, img, a.threads, a.repeat, []))
                for m in modes:
                    secs[m].append(encode_seconds(a.encode_tool, a.model, img, a.threads,
                                                  a.repeat, flags[m]))
            f = statistics.median(fast)
            med = [statistics.median(secs[m]) for m in modes]
            print(f"| {w}x{h} | {f:.2f} | " + " | ".join(f"{t:.2f}" for t in med) + " | " +
                  " | ".join(f"{f / t:.2f}" for t in med) + " |", flush=True)
    print(f"load at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
