#!/usr/bin/python3
"""campaign_totals.py - sums fuzz/campaigns.tsv (one line per target per run_fuzz.sh run) into the
per-target table of fuzz/CAMPAIGNS.md.

    /usr/bin/python3 fuzz/campaign_totals.py [fuzz/campaigns.tsv]

Per target: runs, CPU time in total (user + sys of the fuzzer processes: what a shared machine
really gave), executions in total, the edges and features of the latest run (libFuzzer's cov: and
ft: over the instrumented code, which is ours, not the image libraries), the working-corpus size
of the latest run, and findings in total. A target counts as done at 3600 CPU seconds.
"""
import collections
import os
import sys

HOUR = 3600
TARGETS = ["safetensors", "config", "index", "gguf", "image", "encode", "video", "serve"]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                              "campaigns.tsv")
    rows = collections.defaultdict(list)
    with open(path) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            if line.strip():
                rows[line.split("\t")[1]].append(dict(zip(header, line.rstrip("\n").split("\t"))))
    print("| target | runs | CPU time | executions | edges (latest) | features (latest) | "
          "corpus (latest) | findings | CPU-hour goal |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    total = 0
    for t in TARGETS + sorted(set(rows) - set(TARGETS)):
        r = rows.get(t, [])
        cpu = sum(int(x["cpu_s"]) for x in r)
        total += cpu
        execs = sum(int(x["execs"]) for x in r)
        last = r[-1] if r else {}
        found = sum(int(x["findings"]) for x in r)
        goal = "reached" if cpu >= HOUR else "%.0f%%" % (100.0 * cpu / HOUR)
        print(f"| {t} | {len(r)} | {cpu // 60} min {cpu % 60} s | {execs:,} | "
              f"{last.get('edges', '-')} | {last.get('features', '-')} | "
              f"{last.get('corpus', '-')} | {found} | {goal} |")
    print(f"\nAll targets: {total / HOUR:.2f} CPU-hours.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
