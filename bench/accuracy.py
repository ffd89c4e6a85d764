#!/usr/bin/python3
"""accuracy.py - the encoder's distance to the float64 reference, as a markdown table.

usage: accuracy.py --encode-tool PATH [--encode-tool PATH2 ...] [--modes fast,precise,int8]
                   --work DIR CASE...
  MODE = fast, precise, int8, or int8+LIN+LIN... (INT8 with those block linears kept FAST, e.g.
  int8+down; LIN is q, k, v, o, gate, up or down; int8+none: every linear int8); int8b and
  int8b+LIN... the same in the per-32-block INT8 mode (encode_tool --int8=blocks).
  CASE = CONFIG:LAYERS:WxH[:qk=S], e.g. e4b:16:768x768 (256 tokens) or 31b:2:1680x1536 (1120
  tokens); LAYERS 0 keeps the config's count; qk=S generates the checkpoint with --qk-scale S
  (sharper attention). Several --encode-tool (e.g. the native tool and encode_tool_simde, whose
  FAST mode runs the AVX512_BF16 kernels emulated) are compared on the same reference, one pair
  of columns per tool and mode.
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


def mode_args(mode):
    """encode_tool's options for one --modes entry."""
    if mode == "precise":
        return ["--precise"]
    if mode.startswith("int8"):
        keep = mode.split("+")[1:]
        flag = "--int8=blocks" if mode.split("+")[0] == "int8b" else "--int8"
        return [flag] + (["--int8-fast", ",".join(keep)] if keep else [])
    return []


def prepare_case(work, case):
    """CASE = CONFIG:LAYERS:WxH[:qk=S]: its synthetic checkpoint (generated once into work) and a
    random image at that size saved as .npy. Returns (label, checkpoint dir, image, image path)."""
    cfg, layers, size, *opts = case.split(":")
    qk = next((o[3:] for o in opts if o.startswith("qk=")), None)
    w, h = (int(v) for v in size.split("x"))
    ck = os.path.join(work, f"{cfg}-{layers}" + (f"-qk{qk}" if qk else ""))
    if not os.path.exists(os.path.join(ck, "config.json")):
        args = [sys.executable, os.path.join(ROOT, "tools", "gen_checkpoint.py"), ck,
                "--config", cfg, "--seed", "0"]
        if int(layers):
            args += ["--layers", layers]
        if qk:
            args += ["--qk-scale", qk]
        subprocess.run(args, check=True, capture_output=True)
    img = np.random.default_rng(1).integers(0, 256, (h, w, 3), dtype=np.uint8)
    ip = os.path.join(work, f"img-{w}x{h}.npy")
    np.save(ip, img)
    label = (f"{cfg}, {layers if int(layers) else 'all'} layers, {w}x{h}" +
             (f", qk-scale {qk}" if qk else ""))
    return label, ck, img, ip


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encode-tool", required=True, action="append")
    ap.add_argument("--modes", default="fast,precise")
    ap.add_argument("--work", required=True)
    ap.add_argument("cases", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    modes = a.modes.split(",")
    several = len(a.encode_tool) > 1
    heads = []
    for tool in a.encode_tool:
        for mode in modes:
            name = (os.path.basename(tool) + " " if several else "") + mode.upper()
            heads += [f"{name} rel RMSE", f"{name} max abs"]
    print("| case | soft tokens | " + " | ".join(heads) + " | reference s |")
    print("|---|---|" + "---|" * len(heads) + "---|")
    for case in a.cases:
        label, ck, img, ip = prepare_case(a.work, case)
        t0 = time.time()
        ref = reference.encode(reference.Checkpoint(ck), img)
        t_ref = time.time() - t0
        cells = []
        for tool in a.encode_tool:
            for mode in modes:
                out = os.path.join(a.work, "out.npy")
                subprocess.run([tool, ck, ip, out, "--threads", "2"] + mode_args(mode),
                               check=True, capture_output=True)
                c = np.load(out).astype(np.float64)
                rel = np.linalg.norm(c - ref) / np.linalg.norm(ref)
                cells += [f"{rel:.3g}", f"{np.abs(c - ref).max():.3g}"]
        print(f"| {label} | {ref.shape[0]} | " + " | ".join(cells) + f" | {t_ref:.0f} |",
              flush=True)


if __name__ == "__main__":
    main()
