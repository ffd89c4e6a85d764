#!/usr/bin/python3
"""int8_accuracy.py - the INT8 mode's error next to FAST's, with PRECISE as the reference.

usage: int8_accuracy.py --encode-tool PATH --work DIR [--modes fast,int8,int8+none] CASE...
  CASE = CONFIG:LAYERS:WxH[:qk=S] as in bench/accuracy.py; MODE as there.
PRECISE is within ~1e-6 of the float64 reference on every case we measured (docs/NUMERICS.md §8.3),
three orders of magnitude below the INT8 and FAST errors, so it stands in for it here: one f32
encode instead of a float64 pass that takes minutes per case at 256 tokens. bench/accuracy.py
gives the same columns against float64 (make accuracy-int8). Prints a markdown table: relative
RMSE ||c - p|| / ||p|| per mode, and the seconds of each encode (2 threads, one run each: a
loaded machine blurs them).
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from accuracy import mode_args, prepare_case  # noqa: E402


def run(tool, ck, img, out, args):
    t0 = time.time()
    subprocess.run([tool, ck, img, out, "--threads", "2"] + args, check=True, capture_output=True)
    return np.load(out).astype(np.float64), time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encode-tool", required=True)
    ap.add_argument("--modes", default="fast,int8,int8+none")
    ap.add_argument("--work", required=True)
    ap.add_argument("cases", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    modes = a.modes.split(",")
    print("| case | soft tokens | " + " | ".join(m.upper() + " rel RMSE" for m in modes) +
          " | seconds (PRECISE, " + ", ".join(m.upper() for m in modes) + ") |")
    print("|---|---|" + "---|" * len(modes) + "---|")
    for case in a.cases:
        label, ck, _, ip = prepare_case(a.work, case)
        out = os.path.join(a.work, "out.npy")
        p, tp = run(a.encode_tool, ck, ip, out, ["--precise"])
        cells, secs = [], [f"{tp:.1f}"]
        for mode in modes:
            c, t = run(a.encode_tool, ck, ip, out, mode_args(mode))
            cells.append(f"{np.linalg.norm(c - p) / np.linalg.norm(p):.3g}")
            secs.append(f"{t:.1f}")
        print(f"| {label} | {p.shape[0]} | " + " | ".join(cells) + " | " + ", ".join(secs) + " |",
              flush=True)


if __name__ == "__main__":
    main()
