#!/usr/bin/python3
"""llama_backends.py - the language model's prefill of one image (256 rows at budget 280) under
several builds of the same llama.cpp release, in the same run (`make bench-llama-backends`,
docs/CHAT.md §6): scripts/build-llama.sh's default (CPU backend variants chosen at run time), its
--bench build (GGML_NATIVE=ON) and its --avx2 build (the former default).

One g4v binary runs against each library through LD_LIBRARY_PATH. That is sound because the
builds are one commit with the same headers and the same sonames (libllama.so.0, libggml.so.0,
libggml-base.so.0): only the CPU backend behind them differs, and g4v's RUNPATH (not RPATH) yields
to LD_LIBRARY_PATH. Before timing, `g4v chat --version --json` under each LD_LIBRARY_PATH must
report a CPU backend whose file lies in that library's directory, so a build that silently fell
back to another one is refused.

Each run is `g4v chat --json --max-tokens 1 --temp 0` on the same text model, vision model and
image, with one feature cache shared by all runs (the image is encoded once; what differs between
the builds is the text model). Timed: timings.prefill_s, the language model taking the whole
prompt (the 256 image rows and ~20 text tokens). After one untimed run of each build (page
cache), REPS rounds run the builds alternately, the order rotating each round; medians are
reported, and each build's median relative to the first build's.

usage: llama_backends.py --g4v BIN --lib NAME=LIBDIR [--lib NAME=LIBDIR ...] --lm LM.gguf
                         --model VISION --image IMG [--reps 5] [--threads 2] [--json OUT]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def env_for(libdir):
    return dict(os.environ, LD_LIBRARY_PATH=libdir)


def backend(a, name, libdir):
    p = subprocess.run([a.g4v, "chat", "--version", "--json"], capture_output=True, text=True,
                       env=env_for(libdir))
    b = (json.loads(p.stdout) if p.stdout.strip() else {}).get("llama_cpu_backend") or {}
    path = os.path.realpath(b.get("path", ""))
    if p.returncode != 0 or os.path.dirname(path) != os.path.realpath(libdir):
        sys.exit(f"llama_backends: {name}: the CPU backend is not from {libdir} "
                 f"({p.returncode}: {b} {p.stderr[-500:]})")
    return b


def run(a, libdir, cache):
    cmd = [a.g4v, "chat", "--lm", a.lm, "--model", a.model, "--image", a.image, "-p", a.prompt,
           "--max-tokens", "1", "--temp", "0", "--threads", str(a.threads), "--json",
           "--cache", cache]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env_for(libdir))
    if p.returncode != 0:
        sys.exit(f"llama_backends: g4v chat failed ({p.returncode}): {p.stderr[-2000:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    return r["timings"]["prefill_s"], r["tokens"]["image_rows"], r["tokens"]["prompt"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--g4v", required=True)
    ap.add_argument("--lib", action="append", required=True, metavar="NAME=LIBDIR")
    ap.add_argument("--lm", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt", default="Describe the image in one sentence.")
    ap.add_argument("--json")
    a = ap.parse_args()
    libs = [tuple(x.split("=", 1)) for x in a.lib]
    for name, libdir in libs:
        if not os.path.isfile(os.path.join(libdir, "libllama.so.0")):
            sys.exit(f"llama_backends: {name}: no libllama.so.0 in {libdir}")

    cache = tempfile.mkdtemp(prefix="g4v-llama-backends-")
    try:
        which = {name: backend(a, name, libdir) for name, libdir in libs}
        for name, _ in libs:
            b = which[name]
            how = (f"{b.get('variant') or 'one module'}, loaded at run time"
                   if b.get("loaded_at_run_time") else "linked into libggml")
            print(f"{name:10s} {how}: {' '.join(b.get('features', []))}", flush=True)
        rows = prompt = None
        for name, libdir in libs:  # warm-up: page cache, the image into the feature cache
            _, rows, prompt = run(a, libdir, cache)
        times = {name: [] for name, _ in libs}
        for k in range(a.reps):
            order = libs[k % len(libs):] + libs[:k % len(libs)]
            for name, libdir in order:
                times[name].append(run(a, libdir, cache)[0])
            print(f"round {k + 1}: " + ", ".join(f"{n} {times[n][-1]:.3f} s" for n, _ in libs),
                  flush=True)
    finally:
        shutil.rmtree(cache, ignore_errors=True)

    med = {n: statistics.median(v) for n, v in times.items()}
    first = libs[0][0]
    print(f"\nprefill of {prompt} positions ({rows} image rows), {a.threads} threads, "
          f"median of {a.reps}:")
    for name, _ in libs:
        print(f"  {name:10s} {med[name]:7.3f} s   {med[first] / med[name]:5.2f}x the speed of "
              f"{first}   (min {min(times[name]):.3f}, max {max(times[name]):.3f})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"threads": a.threads, "reps": a.reps, "image_rows": rows,
                       "prompt_positions": prompt, "builds": {
                           n: {"libdir": d, "backend": which[n], "prefill_s": times[n],
                               "median_s": med[n]} for n, d in libs}}, f, indent=1)


if __name__ == "__main__":
    main()
