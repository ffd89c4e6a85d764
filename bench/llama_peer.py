#!/usr/bin/python3
"""llama_peer.py - our vision encoder against llama.cpp's gemma4v encoder (llama-mtmd-cli) on the
same synthetic checkpoint, the same image and thread count, in the same run (`make bench`,
`make bench-report`; bench/llama_peer.sh prepares the files).

Both get the same weights: ours the checkpoint directory, llama.cpp the mmproj GGUF converted from
it (tools/gguf_from_checkpoint.py, bf16 matrices as published mmproj files are); the same PNG; the
same token budget (llama.cpp's --image-max-tokens); -t/-tb the thread count. llama-mtmd-cli
also needs a text model: a small synthetic one of the checkpoint's text width (it is loaded, not
timed). The two run alternately, REPS times each per thread count, after one untimed run of each
(page cache); medians are reported.

Measured, each in a fresh process (what a one-shot command costs):
  ours      `g4v encode --json`: "seconds", the first encode of the process (PNG decode +
            resize + encoder)
  llama.cpp llama-mtmd-cli -lv 4: "image slice encoded in N ms" (or "mtmd batch encoding done
            in N ms"), its encoder graph, without the image decode and resize (so the ratio
            slightly favours llama.cpp)
The ratio is llama.cpp's seconds over ours (> 1: we are faster). Prints a markdown table, and with
--json the raw times.

usage: llama_peer.py --g4v BIN --model CKPT_DIR --mtmd-cli BIN --lm LM.gguf --mmproj MMPROJ.gguf
                     --image IMG.png [--threads 1,2] [--reps 3] [--tokens 280] [--json OUT]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile


def run_ours(a, threads, out):
    cmd = [a.g4v, "encode", "--model", a.model, a.image, "--tokens", str(a.tokens), "--threads",
           str(threads), "--json", "-o", out]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"llama_peer: g4v encode failed ({p.returncode}): {p.stderr[-2000:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    return r["seconds"], r["tokens"]


def run_llama(a, threads):
    cmd = [a.mtmd_cli, "-m", a.lm, "--mmproj", a.mmproj, "--image", a.image, "-p", "Describe.",
           "-n", "1", "--temp", "0", "-t", str(threads), "-tb", str(threads), "--no-warmup", "--jinja",
           "--image-max-tokens", str(a.tokens),  # a minimum too would upscale 256 to 289
           "-lv", "4"]  # -lv 4: its timing lines
    p = subprocess.run(cmd, capture_output=True, text=True)
    log = p.stdout + p.stderr
    if p.returncode != 0:
        sys.exit(f"llama_peer: llama-mtmd-cli failed ({p.returncode}): {log[-3000:]}")
    enc = re.findall(r"(?:mtmd batch encoding done|image slice encoded) in (\d+) ms", log)
    ntok = re.findall(r"n_tokens_batch = (\d+)", log)
    if not enc:
        sys.exit("llama_peer: cannot read llama-mtmd-cli's encode time:\n" + log[-3000:])
    return int(enc[0]) / 1000, sum(int(x) for x in ntok)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--g4v", required=True, help="the g4v binary")
    ap.add_argument("--model", required=True, help="the checkpoint directory (ours)")
    ap.add_argument("--mtmd-cli", required=True, help="llama.cpp's llama-mtmd-cli")
    ap.add_argument("--lm", required=True, help="a text-model GGUF of the checkpoint's text width")
    ap.add_argument("--mmproj", required=True, help="the checkpoint as an mmproj GGUF")
    ap.add_argument("--image", required=True, help="the image (PNG)")
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated (1,2)")
    ap.add_argument("--reps", type=int, default=3, help="timed runs of each per thread count (3)")
    ap.add_argument("--tokens", type=int, default=280, help="the token budget (280)")
    ap.add_argument("--json", help="write the raw times here")
    a = ap.parse_args()
    threads = [int(t) for t in a.threads.split(",") if t]
    if a.reps < 1 or not threads or min(threads) < 1:
        ap.error("--reps and every --threads value must be >= 1")
    rows, raw = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "o.npy")
        for t in threads:
            run_ours(a, t, out), run_llama(a, t)  # untimed: page cache
            ours, llama = [], []
            for _ in range(a.reps):
                s, n_ours = run_ours(a, t, out)
                ours.append(s)
                s, n_llama = run_llama(a, t)
                llama.append(s)
            raw[t] = {"ours_s": ours, "llama_s": llama, "tokens_ours": n_ours,
                      "tokens_llama": n_llama}
            mo, ml = statistics.median(ours), statistics.median(llama)
            rows.append((t, f"{n_ours} / {n_llama}", mo, ml, ml / mo))
            print(f"llama_peer: {t} thread(s): ours {ours}, llama.cpp {llama}", file=sys.stderr)
    print(f"llama.cpp's gemma4v encoder (llama-mtmd-cli, mmproj {os.path.basename(a.mmproj)}) "
          f"against ours on {os.path.basename(a.image)}, budget {a.tokens}, medians of {a.reps} "
          f"one-shot processes each, run alternately\n")
    print("| threads | tokens (ours / llama.cpp) | ours: encode s (`g4v encode`) | "
          "llama.cpp: encode s (mtmd-cli) | llama.cpp / ours |")
    print("|---|---|---|---|---|")
    for t, n, mo, ml, r in rows:
        print(f"| {t} | {n} | {mo:.3f} | {ml:.3f} | {r:.2f}x |")
    if any(r[1].split(" / ")[0] != r[1].split(" / ")[1] for r in rows):
        print("\nWARNING: the two produced different token counts: the ratio compares different "
              "work")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(raw, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
