#!/usr/bin/python3
"""chat_ttft.py - time to first token: `g4v chat` against llama.cpp's own `llama-mtmd-cli`, on the
same files in the same run (docs/CHAT.md §5.4.2; `make bench-chat`, part of `make bench`).

Both programs get the same text-model GGUF, the same mmproj GGUF (g4v reads it as its vision
model source), the same image, prompt, thread count and greedy sampling, and stop after one new
token. They run alternately, REPS times each, after one untimed warm-up run of each (page cache);
medians are reported. Both link the same libllama (scripts/build-llama.sh --bench: one native
build), so the text model's prefill is the same code and what differs is the vision path:
decode + resize + encoder.

Measured per run:
  wall      the whole command, start to exit (model loads, image, encoder, prefill, one token):
            what a user waits for a one-shot answer
  encode    the vision encoder, as each reports it (g4v: media[0].seconds, image decode +
            resize + encode; llama.cpp: "mtmd batch encoding done in N ms", its encoder graph
            without the image decode and resize)
  prefill   the language model taking the image rows, as each reports it (g4v:
            timings.prefill_s, the whole prompt; llama.cpp: "image decoded (batch k/n) in N ms",
            the image rows only)
The claim checked: our wall-clock time to first token is lower than llama-mtmd-cli's by at least
the difference of the two encoders (within 10% of that difference, for the machine's noise).

usage: chat_ttft.py --g4v BIN --mtmd-cli BIN --lm LM.gguf --mmproj MMPROJ.gguf --image IMG
                    [--reps 5] [--threads 2] [--prompt TEXT] [--json OUT]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time


def run_g4v(a):
    cmd = [a.g4v, "chat", "--lm", a.lm, "--model", a.mmproj, "--image", a.image, "-p", a.prompt,
           "--max-tokens", "1", "--temp", "0", "--threads", str(a.threads), "--tokens",
           str(a.tokens), "--json", "--cache", a.cache]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"chat_ttft: g4v chat failed ({p.returncode}): {p.stderr[-2000:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    if r["media"][0]["cache_hit"]:
        sys.exit("chat_ttft: the image came from g4v's feature cache: clear --cache between runs")
    return {"wall": wall, "encode": r["media"][0]["seconds"], "prefill": r["timings"]["prefill_s"],
            "rows": r["tokens"]["image_rows"]}


def run_mtmd(a):
    cmd = [a.mtmd_cli, "-m", a.lm, "--mmproj", a.mmproj, "--image", a.image, "-p", a.prompt,
           "-n", "1", "--temp", "0", "-t", str(a.threads), "-tb", str(a.threads),
           "--no-warmup", "--jinja", "-lv", "4"]  # -lv 4: its timing lines
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"chat_ttft: llama-mtmd-cli failed ({p.returncode}): {p.stderr[-2000:]}")
    log = p.stdout + p.stderr
    enc = re.findall(r"(?:mtmd batch encoding done|image slice encoded) in (\d+) ms", log)
    dec = re.findall(r"image decoded \(batch \d+/\d+\) in (\d+) ms", log)
    ntok = re.findall(r"n_tokens_batch = (\d+)", log)
    if not enc or not dec:
        sys.exit("chat_ttft: cannot read llama-mtmd-cli's timings:\n" + log[-3000:])
    return {"wall": wall, "encode": sum(int(x) for x in enc) / 1000,
            "prefill": sum(int(x) for x in dec) / 1000, "rows": sum(int(x) for x in ntok)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--g4v", required=True)
    ap.add_argument("--mtmd-cli", required=True)
    ap.add_argument("--lm", required=True)
    ap.add_argument("--mmproj", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=280, help="g4v's budget (llama.cpp's default cap)")
    ap.add_argument("--prompt", default="Describe this image in one sentence.")
    ap.add_argument("--cache", default=None, help="g4v's feature cache dir (emptied per run)")
    ap.add_argument("--json", help="write the runs and medians here")
    a = ap.parse_args()
    a.cache = a.cache or f"/tmp/g4v-chat-ttft-{os.getpid()}"

    def g4v_once():
        subprocess.run(["rm", "-rf", a.cache], check=True)
        return run_g4v(a)

    print(f"chat_ttft: {os.path.basename(a.lm)} + {os.path.basename(a.mmproj)}, "
          f"{os.path.basename(a.image)}, {a.threads} threads, {a.reps} runs each (+1 warm-up)")
    g4v_once()
    run_mtmd(a)
    runs = {"g4v": [], "llama.cpp": []}
    for i in range(a.reps):
        runs["g4v"].append(g4v_once())
        runs["llama.cpp"].append(run_mtmd(a))
        print(f"  run {i + 1}: g4v wall {runs['g4v'][-1]['wall']:.2f} s, "
              f"llama-mtmd-cli wall {runs['llama.cpp'][-1]['wall']:.2f} s", flush=True)
    subprocess.run(["rm", "-rf", a.cache])
    med = {k: {m: statistics.median(r[m] for r in v) for m in ("wall", "encode", "prefill")}
           for k, v in runs.items()}
    g, l = med["g4v"], med["llama.cpp"]
    print(f"\n| median of {a.reps} | g4v chat | llama-mtmd-cli | llama.cpp / g4v |")
    print("|---|---:|---:|---:|")
    for m, what in (("wall", "wall clock to first token (s)"), ("encode", "vision encoder (s)"),
                    ("prefill", "LM prefill (s; g4v: whole prompt, llama.cpp: image rows)")):
        print(f"| {what} | {g[m]:.3f} | {l[m]:.3f} | {l[m] / g[m]:.2f}x |")
    print(f"| image rows | {runs['g4v'][0]['rows']} | {runs['llama.cpp'][0]['rows']} | |")
    gain, enc_gain = l["wall"] - g["wall"], l["encode"] - g["encode"]
    ok = gain >= 0.9 * enc_gain
    print(f"\nwall-clock gain {gain:.3f} s; encoder difference {enc_gain:.3f} s: "
          f"{'OK' if ok else 'NOT MET'} (gain >= 90% of the encoder difference)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"runs": runs, "median": med, "ok": ok}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
