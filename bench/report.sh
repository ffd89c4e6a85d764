#!/usr/bin/env bash
# report.sh - one markdown report of this machine's speed and accuracy (make bench-report).
#
# Prints, measured in one run: the CPU and its flags, the kernel table chosen for it, the GEMM on
# the encoder's shapes against the measured instruction peaks for every ISA level the CPU runs
# (G4V_ISA caps), each attention variant, whole-encoder seconds / GFLOP/s / % of peak / peak RSS /
# load time at several budgets on 1 and 2 threads (synthetic e4b), llama.cpp's gemma4v encoder on
# the same checkpoint beside ours (bench/llama_peer.sh; BENCH_LLAMA=0 skips it, the first run
# builds llama.cpp natively, ~10 min), the speed and memory targets
# of the AVX-512 work with their floors (bench/check_speed_targets.py), and the distance of both modes
# to the float64 reference. Meant to be run as is on a machine we cannot reach otherwise (an
# AVX-512 BF16 one, say) and pasted into bench/RESULTS.md. REPORT_QUICK=1 runs small budgets and
# skips the 1120-token points (a few minutes instead of ~10 on a 2-core Zen 4; longer on a CPU
# without AVX512-BF16).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
MODEL=${BENCH_MODEL:-$BUILD/bench-e4b}
WORK=${REPORT_WORK:-$BUILD/report}
if [ "${REPORT_QUICK:-0}" = 1 ]; then
  BUDGETS=70,280; ACC_CASES="e4b:16:768x768"; ATT_L=2304
else
  BUDGETS=70,280,1120; ACC_CASES="e4b:16:768x768 31b:2:1680x1536"; ATT_L=2304,10080
fi
mkdir -p "$WORK"
[ -f "$MODEL/config.json" ] || "$PYTHON" tools/gen_checkpoint.py "$MODEL" --config e4b --seed 0 >/dev/null

echo "# gemma4-vision report: $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs;" \
     "load before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
# x86 'flags', ARM64 Linux 'Features' (asimd, bf16, i8mm, sve)
echo "Flags: $(grep -m1 -E '^(flags|Features)' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|avx512[a-z_0-9]*|amx[a-z_0-9]*|asimd|bf16|i8mm|sve|sve2)$' | tr '\n' ' ')"
echo
echo "Kernel table: $("$BUILD"/tests/kernels/test_variants | grep '^kernel table' | cut -d: -f2-)"
echo
echo "## GEMM (bench_gemm, M = 2304, BF16 weights, FAST), per ISA level"
for isa in avx2 avx512 neon neon-bf16; do
  case "$isa" in
    avx2) grep -qw avx2 /proc/cpuinfo || continue ;;
    avx512) grep -qw avx512f /proc/cpuinfo || continue ;;
    neon) [ "$(uname -m)" = aarch64 ] || [ "$(uname -m)" = arm64 ] || continue ;;
    neon-bf16) "$BUILD"/tests/kernels/test_variants | grep -q '^kernel table for neon-bf16' || continue ;;
  esac
  echo
  echo "### G4V_ISA=$isa"
  echo
  G4V_ISA=$isa "$BUILD"/bench/bench_gemm --reps 3
done
echo
echo "## Attention (bench_attention, e4b heads: H = Hkv = 12, d = 64), every variant"
for t in 1 2; do
  echo
  "$BUILD"/bench/bench_attention --L "$ATT_L" --threads "$t" --reps 3
done
echo
echo "## Encoder (bench_encoder, synthetic e4b, FAST)"
echo
"$BUILD"/bench/bench_encoder --model "$MODEL" --budgets "$BUDGETS" --threads 1,2 --reps 3 --reps-large 1
echo
echo "## llama.cpp's gemma4v encoder beside ours (bench/llama_peer.sh, same checkpoint and image)"
echo
if [ "${BENCH_LLAMA:-1}" = 0 ]; then
  echo "Skipped (BENCH_LLAMA=0)."
else
  PYTHON="$PYTHON" bench/llama_peer.sh "$BUILD" "$MODEL" 1,2 \
    "$([ "${REPORT_QUICK:-0}" = 1 ] && echo 1 || echo 3)" ||
    echo "The llama.cpp peer could not run (its messages above); the rest of the report follows."
fi
echo
echo "## The speed targets (bench/check_speed_targets.py: limit, measurement, floor at 100% of the peak)"
echo
"$PYTHON" bench/check_speed_targets.py --build "$BUILD" --model "$MODEL" --work "$WORK" \
  $([ "${REPORT_QUICK:-0}" = 1 ] && echo --quick)
echo
echo "## Accuracy against the float64 reference (bench/accuracy.py)"
echo
"$PYTHON" bench/accuracy.py --encode-tool "$BUILD"/tests/encoder/encode_tool --work "$WORK" $ACC_CASES
echo
echo "Load after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
