#!/usr/bin/python3
"""int8_speed.py - the INT8 mode against FAST, side by side in one run, as a ratio.

usage: int8_speed.py --encode-tool PATH --model DIR [--sizes 768x768,1680x1536] [--threads 2]
                     [--rounds 3] [--repeat 2]
For each image size (random RGB already at a target size: 768x768 is 256 soft tokens,
1680x1536 1120) and each round, encode_tool runs FAST then INT8 (each --repeat warm encodes in
one process after the load; the fastest counts), so both modes see the same machine conditions;
the table gives the median over rounds of each and FAST / INT8 (> 1: INT8 is faster). Report
the ratio, not the seconds, on a shared machine.
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
    a = ap.parse_args()
    print(f"model {a.model}, {a.threads} threads, {a.rounds} rounds of FAST then INT8, "
          f"best of {a.repeat} warm encodes each; load: {os.getloadavg()[0]:.1f}")
    print("| image | FAST s | INT8 s | FAST / INT8 |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for size in a.sizes.split(","):
            w, h = (int(v) for v in size.split("x"))
            img = os.path.join(tmp, f"{w}x{h}.npy")
            np.save(img, np.random.default_rng(1).integers(0, 256, (h, w, 3), dtype=np.uint8))
            fast, int8 = [], []
            for _ in range(a.rounds):
                fast.append(encode_seconds(a.encode_tool, a.model, img, a.threads, a.repeat, []))
                int8.append(encode_seconds(a.encode_tool, a.model, img, a.threads, a.repeat,
                                           ["--int8"]))
            f, i = statistics.median(fast), statistics.median(int8)
            print(f"| {w}x{h} | {f:.2f} | {i:.2f} | {f / i:.2f} |", flush=True)
    print(f"load at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
