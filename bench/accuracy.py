#!/usr/bin/python3
"""accuracy.py - the encoder's distance to the float64 reference, as a markdown table.

usage: accuracy.py --encode-tool PATH --work DIR CASE...
  CASE = CONFIG:LAYERS:WxH, e.g. e4b:16:768x768 (256 tokens) or 31b:2:1680x1536 (1120 tokens);
  LAYERS 0 keeps the config's count.
For each case: a synthetic checkpoint (tools/gen_checkpoint.py, seed 0, cached in DIR), a random
image at that target size, the C encoder in FAST and PRECISE mode (2 threads) and
tests/reference/reference.py in float64; one row per case with relative RMSE
||c - ref|| / ||ref|| and max |c - ref| for both modes. The reference holds one L x L float64
score matrix per head: 1120 tokens (L = 10,080) needs ~1 GB and minutes.
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
import reference  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encode-tool", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("cases", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    print("| case | soft tokens | FAST rel RMSE | FAST max abs | PRECISE rel RMSE | PRECISE max abs "
          "| reference s |")
    print("|---|---|---|---|---|---|---|")
    for case in a.cases:
        cfg, layers, size = case.split(":")
        w, h = (int(v) for v in size.split("x"))
        ck = os.path.join(a.work, f"{cfg}-{layers}")
        if not os.path.exists(os.path.join(ck, "config.json")):
            args = [sys.executable, os.path.join(ROOT, "tools", "gen_checkpoint.py"), ck,
                    "--config", cfg, "--seed", "0"]
            if int(layers):
                args += ["--layers", layers]
            subprocess.run(args, check=True, capture_output=True)
        img = np.random.default_rng(1).integers(0, 256, (h, w, 3), dtype=np.uint8)
        ip = os.path.join(a.work, f"img-{w}x{h}.npy")
        np.save(ip, img)
        t0 = time.time()
        ref = reference.encode(reference.Checkpoint(ck), img)
        t_ref = time.time() - t0
        cells = []
        for mode in ("", "--precise"):
            out = os.path.join(a.work, "out.npy")
            subprocess.run([a.encode_tool, ck, ip, out, "--threads", "2"] + ([mode] if mode else []),
                           check=True, capture_output=True)
            c = np.load(out).astype(np.float64)
            rel = np.linalg.norm(c - ref) / np.linalg.norm(ref)
            cells += [f"{rel:.3g}", f"{np.abs(c - ref).max():.3g}"]
        print(f"| {cfg}, {layers or 'all'} layers, {w}x{h} | {ref.shape[0]} | " + " | ".join(cells)
              + f" | {t_ref:.0f} |", flush=True)


if __name__ == "__main__":
    main()
