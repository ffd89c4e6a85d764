#!/bin/sh
# ab_bench.sh - two builds' GEMM, attention and encoder benchmarks, alternating in one command.
#
#   bench/ab_bench.sh BASE_DIR NEW_DIR MODEL [ROUNDS]
#
# BASE_DIR and NEW_DIR each hold bench_gemm, bench_attention and bench_encoder (a build's
# build/bench, or a folder of statically linked copies); MODEL is an e4b checkpoint directory (make
# bench's build/bench-e4b). For ROUNDS rounds (default 2) it runs base then new: bench_gemm (the
# encoder's GEMM shapes, 1 and 2 threads), bench_attention (L = 2304 and 10,080, 1 and 2 threads)
# and bench_encoder (budgets 280 and 1120, 1 and 2 threads), each printing % of the peak measured
# in its own run, so the two builds meet the same load. The load average is printed before each
# run; on a shared machine compare within a round. Takes ~10 minutes per round.
set -eu
if [ "$#" -lt 3 ] || [ "$1" = --help ]; then
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    [ "$#" -ge 1 ] && [ "$1" = --help ] && exit 0
    exit 2
fi
base=$1 new=$2 model=$3 rounds=${4:-2}
for d in "$base" "$new"; do
    for b in bench_gemm bench_attention bench_encoder; do
        [ -x "$d/$b" ] || { echo "ab_bench.sh: $d/$b is missing or not executable" >&2; exit 2; }
    done
done
[ -f "$model/config.json" ] || { echo "ab_bench.sh: $model has no config.json" >&2; exit 2; }
r=1
while [ "$r" -le "$rounds" ]; do
    for side in base new; do
        if [ "$side" = base ]; then d=$base; else d=$new; fi
        echo "=== round $r, $side ($d), load $(cut -d' ' -f1-3 /proc/loadavg)"
        "$d/bench_gemm" --reps 5 | grep -E '^(peaks|WARNING|2304x)' || true
        for t in 1 2; do
            "$d/bench_attention" --L 2304,10080 --threads "$t" | grep -E 'bf16dp|peaks|WARNING' || true
        done
        "$d/bench_encoder" --model "$model" --budgets 280,1120 --threads 1,2 --reps 3 \
            --reps-large 1 | grep -E '^\||peaks|WARNING' || true
    done
    r=$((r + 1))
done
