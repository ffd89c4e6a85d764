#!/usr/bin/python3
"""check_speed_targets.py - the speed and memory targets of the AVX-512 work, measured on this
machine, as a markdown table with each target's limit, the measurement, the floor (the same FLOPs at 100%
of the instruction peak measured in the same run) and a verdict.

usage: check_speed_targets.py --build DIR --model DIR --work DIR [--quick]

The targets (synthetic e4b, FAST, 2 cores): a 768x768 image (256 tokens) encoded in <= 1.5 s on
2 threads and <= 2.6 s on 1, the whole `g4v encode` process of one 768x768 PNG <= 1.8 s, a
1680x1536 image (1120 tokens) in <= 12 s on 2 threads, peak RSS <= the vision weights + 200 MB at
every budget, 2-thread scaling >= 1.85x at 256 tokens, and on the AVX2 path (G4V_ISA=avx2)
>= 70% of the FMA peak at 256 tokens on 2 threads. A verdict of "no" next to a floor above the
limit means no kernel can meet it on this CPU: the peak itself is too low. Times are medians of
warm encodes (encode_tool --repeat, first encode dropped), the process time the median of 5 runs.
--quick leaves out the 1120-token points (minutes instead of ~10 minutes on 2 cores).
Accuracy (FAST <= 4e-3, PRECISE <= 2e-6 relative RMSE) is bench/accuracy.py's table.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np
from PIL import Image

BUDGETS = (70, 140, 280, 560, 1120)


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode:
        sys.exit(f"check_speed_targets: {' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
    return p


def peaks(build, threads):
    """{threads: {instruction: GFLOP/s}} from one bench_peak run (bench/bench_peaks.h: best of N
    per thread count, measured round-robin, so each thread count is read from its own row)."""
    out = run([os.path.join(build, "bench", "bench_peak"), "--threads",
               ",".join(str(t) for t in threads)]).stdout
    table = {}
    for line in out.splitlines():
        kv = {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", line)}
        if "threads" in kv:
            table[int(kv["threads"])] = kv
    if sorted(table) != sorted(threads):
        sys.exit(f"check_speed_targets: bench_peak gave thread counts {sorted(table)}: {out}")
    if any(kv.get("suspect") for kv in table.values()):
        print("check_speed_targets: WARNING: bench_peak measured a peak on more threads below "
              "one on fewer (busy machine): the floors are not reliable", file=sys.stderr)
    return table


def encode_seconds(build, model, npy, threads, repeat, env=None):
    """Median of the warm encodes of encode_tool (the first of the process dropped)."""
    tool = os.path.join(build, "tests", "encoder", "encode_tool")
    out = os.path.join(os.path.dirname(npy), "out.npy")
    p = run([tool, model, npy, out, "--threads", str(threads), "--repeat", str(repeat)], env)
    ts = [float(t) for t in re.findall(r"encode .*: ([0-9.]+) s", p.stderr)]
    return statistics.median(ts[1:] if len(ts) > 1 else ts)


def process_run(build, model, png, threads, tokens):
    """Wall seconds and peak RSS (MB = 10^6 bytes, as the weights) of one `g4v encode` process."""
    out = os.path.join(os.path.dirname(png), "out-g4v.npy")
    t0 = time.perf_counter()
    p = subprocess.Popen([os.path.join(build, "g4v"), "encode", "--model", model, png, "-o", out,
                          "--threads", str(threads), "--tokens", str(tokens), "--quiet"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if status:
        sys.exit(f"check_speed_targets: g4v encode {png} failed: {err.strip()}")
    return wall, ru.ru_maxrss * 1024 / 1e6  # ru_maxrss is in KiB


def flops(info, w, h):
    """docs/NUMERICS.md §7: FLOPs of one image of w x h pixels already at a budget's size."""
    p, D, I = info["patch_size"], info["hidden_size"], info["intermediate_size"]
    L = (w // p) * (h // p)
    N = L // (info["pooling_kernel_size"] ** 2)
    Hd, Hkvd = info["num_heads"] * info["head_dim"], info["num_kv_heads"] * info["head_dim"]
    layer = 2 * L * (2 * D * Hd + 2 * D * Hkvd + 3 * D * I) + 4 * L * L * Hd
    return info["num_layers"] * layer + 2 * L * 3 * p * p * D + 2 * N * D * info["text_hidden_size"]


def image(work, w, h, ext):
    path = os.path.join(work, f"targets-{w}x{h}.{ext}")
    if not os.path.exists(path):
        rgb = (np.random.default_rng(0).random((h, w, 3)) * 255).astype(np.uint8)
        np.save(path, rgb) if ext == "npy" else Image.fromarray(rgb).save(path)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    info = json.loads(run([os.path.join(a.build, "g4v"), "info", "--model", a.model,
                           "--json"]).stdout)
    flags = open("/proc/cpuinfo").read()
    has_dp = " avx512_bf16" in flags
    pk = peaks(a.build, (1, 2))
    peak = {t: pk[t]["vdpbf16ps"] if has_dp else max(pk[t]["fma_zmm"], pk[t]["fma_ymm"])
            for t in (1, 2)}
    unit = "vdpbf16ps" if has_dp else "FMA"
    weights_mb = info["weight_bytes"] / 1e6

    rows = []

    def row(target, limit, measured, floor, ok, fmt="{:.3f} s"):
        rows.append((target, limit, fmt.format(measured),
                     "-" if floor is None else fmt.format(floor), "yes" if ok else "**no**"))

    n768, n1680 = image(a.work, 768, 768, "npy"), image(a.work, 1680, 1536, "npy")
    f768, f1680 = flops(info, 768, 768), flops(info, 1680, 1536)
    s2 = encode_seconds(a.build, a.model, n768, 2, 4)
    s1 = encode_seconds(a.build, a.model, n768, 1, 3)
    row("768x768 (256 tokens), 2 threads", "<= 1.5 s", s2, f768 / peak[2] * 1e-9, s2 <= 1.5)
    row("768x768 (256 tokens), 1 thread", "<= 2.6 s", s1, f768 / peak[1] * 1e-9, s1 <= 2.6)
    walls = [process_run(a.build, a.model, image(a.work, 768, 768, "png"), 2, 280)[0]
             for _ in range(5)]
    w = statistics.median(walls)  # its floor is the encode's: load and decode come on top
    row("whole `g4v encode` of a 768x768 PNG, 2 threads", "<= 1.8 s", w, f768 / peak[2] * 1e-9,
        w <= 1.8)
    row("2-thread scaling at 256 tokens", ">= 1.85x", s1 / s2, None, s1 / s2 >= 1.85, "{:.2f}x")
    if not a.quick:
        s = encode_seconds(a.build, a.model, n1680, 2, 3)
        row("1680x1536 (1120 tokens), 2 threads", "<= 12 s", s, f1680 / peak[2] * 1e-9, s <= 12)
    png1680 = image(a.work, 1680, 1536, "png")
    for b in BUDGETS if not a.quick else (70, 280):
        rss = process_run(a.build, a.model, png1680, 2, b)[1]
        row(f"peak RSS of `g4v encode` at {b} tokens (1680x1536 PNG)",
            f"<= weights + 200 MB = {weights_mb + 200:.0f} MB", rss, None,
            rss <= weights_mb + 200, "{:.0f} MB")
    if " avx2" in flags and " fma" in flags:
        env = dict(os.environ, G4V_ISA="avx2")
        s = encode_seconds(a.build, a.model, n768, 2, 3, env)
        frac = f768 / s * 1e-9 / pk[2]["fma_ymm"]
        rows.append(("AVX2 path (`G4V_ISA=avx2`), 256 tokens, 2 threads: % of the ymm FMA peak",
                     ">= 70%", f"{100 * frac:.0f}% ({s:.3f} s, peak {pk[2]['fma_ymm']:.0f} GFLOP/s)",
                     "-", "yes" if frac >= 0.70 else "**no**"))

    print(f"Peaks measured in this run ({unit} is what FAST multiplies with here): "
          f"1 thread {peak[1]:.0f} GFLOP/s, 2 threads {peak[2]:.0f} GFLOP/s "
          f"(FMA ymm {pk[1]['fma_ymm']:.0f} / {pk[2]['fma_ymm']:.0f}, zmm {pk[1]['fma_zmm']:.0f} / "
          f"{pk[2]['fma_zmm']:.0f}). Work: 768x768 {f768 * 1e-9:.0f} GFLOP, 1680x1536 "
          f"{f1680 * 1e-9:.0f} GFLOP (docs/NUMERICS.md §7); vision weights {weights_mb:.0f} MB.")
    print()
    print("| target | limit | measured | floor: the FLOPs at 100% of the peak | met |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
