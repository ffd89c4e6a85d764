#!/bin/sh
# bench-amx.sh - make bench-amx: one command for a machine with Intel AMX (issue 58, item 9).
# Builds, then bench/bench_amx.c: the hardware against our tile emulator bit for bit (the
# discriminating TDPBF16PS vectors, 10^6 random tiles and the INT8 tile products, one full layer
# of each tower shape through the tile GEMM and attention against their emulated twins, attention
# over 2304 and 10080 keys), then GEMM and attention GFLOP/s and % of the tile peak measured in
# the same run (a 4-accumulator TDPBF16PS loop), 1 and 2 threads, with the AVX-512 GEMM beside
# it. Then the e4b and the 31B-shape encode at 256 and 1089 soft tokens (budgets 280 and 1120) in
# one run: ours (AMX), PyPI PyTorch bf16 (bench/torch_peer.py in the venv of scripts/hf-env.sh;
# BENCH_HF=0 leaves it out) and our own AVX-512 path (G4V_ISA=avx512-noamx).
# On a CPU without AMX (or where the OS, G4V_ISA or the start-up self-test leaves it out) it says
# so, runs only the emulator's checks and exits 0: it never reports a hardware result it did not
# measure. AMX_ARGS go to bench_amx (e.g. AMX_ARGS="--tiles 100000 --threads 1,2,4");
# AMX_THREADS (default 1,2) and AMX_REPS (default 3) to the encodes.
. scripts/make/lib.sh
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD" bench_amx bench_encoder g4v_cli
status=0
"$BUILD/bench/bench_amx" ${AMX_ARGS-} || status=$?
bench_model
usable=$("$BUILD/g4v" info --json --model "$BENCH_MODEL" |
    $PYTHON -c 'import json, sys; a = json.load(sys.stdin)["amx"]; print(int(a["usable"]), a["reason"])')
case $usable in
1*) ;;
*)
    echo
    echo "bench-amx: AMX is not used here (${usable#? }): the encode comparison (AMX against"
    echo "PyTorch and our AVX-512 path) is NOT RUN; no AMX speed is claimed."
    exit "$status" ;;
esac
model31=${BENCH_MODEL_31B:-$BUILD/bench-31b}
[ -f "$model31/config.json" ] || $PYTHON tools/gen_checkpoint.py "$model31" --config 31b --seed 0
peer=""
if [ "${BENCH_HF:-1}" != 0 ]; then
    hfpy=$(scripts/hf-env.sh | tail -1) &&
        peer="env GLIBC_TUNABLES=glibc.malloc.hugetlb=1 $hfpy bench/torch_peer.py" ||
        echo "bench-amx: no PyPI torch venv (scripts/hf-env.sh): no torch columns"
fi
for m in "$BENCH_MODEL" "$model31"; do
    echo
    echo "== $m: ours with AMX (default table), PyPI torch bf16 beside it =="
    "$BUILD/bench/bench_encoder" --model "$m" --budgets 280,1120 --threads "${AMX_THREADS:-1,2}" \
        --reps "${AMX_REPS:-3}" --reps-large "${AMX_REPS:-3}" ${peer:+--peer "$peer"} || status=1
    echo
    echo "== $m: ours, AVX-512 path (G4V_ISA=avx512-noamx), same run =="
    G4V_ISA=avx512-noamx "$BUILD/bench/bench_encoder" --model "$m" --budgets 280,1120 \
        --threads "${AMX_THREADS:-1,2}" --reps "${AMX_REPS:-3}" --reps-large "${AMX_REPS:-3}" ||
        status=1
done
exit "$status"
