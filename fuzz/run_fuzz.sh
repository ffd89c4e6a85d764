#!/bin/bash
# run_fuzz.sh - runs every libFuzzer target for a fixed time and prints one line per target.
#
#   fuzz/run_fuzz.sh BUILD_DIR SECONDS [PARALLEL] [TARGET...]
#
# Targets come from BUILD_DIR/fuzz-bin (built by `make fuzz`). Each runs single-threaded for
# SECONDS with its seed corpus (fuzz/corpus/<t>), the corpus earlier campaigns grew
# (fuzz/grown/<t>, committed) and the committed regressions (fuzz/regressions/<t>) as input, all
# read-only, and BUILD_DIR/fuzz-work/corpus/<t> as its working corpus, where new inputs go (kept
# between runs; fuzz/merge_corpus.sh folds it into fuzz/grown); PARALLEL targets run at once
# (default 2).
# Crash, leak, timeout and OOM inputs land in BUILD_DIR/fuzz-work/artifacts/<t>/; the log of each
# run is BUILD_DIR/fuzz-work/logs/<t>.log. Per target we print executions, exec/s, edge
# coverage ("cov" of libFuzzer's final line), the working-corpus size and the findings; the
# exit status is non-zero when any target found something. To turn a finding into a regression:
# minimize it (fuzz_<t> -minimize_crash=1 -runs=10000 CRASH), copy it to fuzz/regressions/<t>/,
# fix, and the fuzz_replay_<t> ctest keeps it fixed.
#
# Every run also appends one line per target to fuzz/campaigns.tsv (committed; FUZZ_LOG
# overrides): date, target, wall and CPU seconds (user + sys of the fuzzer, which is what counts
# on a shared machine), executions, edges, features, working-corpus files, findings. fuzz/
# campaign_totals.py sums it per target for fuzz/CAMPAIGNS.md; fuzz/merge_corpus.sh folds the
# working corpus back into the committed one, minimized, so the next campaign starts from it.
set -u
B=${1:?usage: run_fuzz.sh BUILD_DIR SECONDS [PARALLEL] [TARGET...]}
S=${2:?seconds}
P=${3:-2}
shift 3 2>/dev/null || shift $#
SRC=$(cd "$(dirname "$0")" && pwd)
BIN=$B/fuzz-bin
W=$B/fuzz-work
TARGETS=${*:-safetensors config index gguf image encode video serve chat_request hub_listing hub_header}
LOG=${FUZZ_LOG:-$SRC/campaigns.tsv}

# per-target options: dictionary and input size cap (bytes)
opts() {
    case $1 in
    safetensors) echo "-dict=$SRC/dict/safetensors.dict -max_len=16384" ;;
    gguf) echo "-dict=$SRC/dict/gguf.dict -max_len=16384" ;;
    config | index) echo "-dict=$SRC/dict/json.dict -max_len=8192" ;;
    hub_listing) echo "-dict=$SRC/dict/hub.dict -max_len=16384" ;;
    hub_header) echo "-dict=$SRC/dict/hub.dict -max_len=16384" ;;
    image) echo "-dict=$SRC/dict/image.dict -max_len=16384" ;;
    encode) echo "-dict=$SRC/dict/image.dict -max_len=8192" ;;
    video) echo "-dict=$SRC/dict/video.dict -max_len=20480" ;;
    serve) echo "-dict=$SRC/dict/http.dict -max_len=16384" ;;
    esac
}

run_one() {
    local t=$1
    mkdir -p "$W/corpus/$t" "$W/artifacts/$t" "$W/logs"
    touch "$W/logs/$t.start" # artifacts newer than this are this run's findings
    local regs=()
    [ -d "$SRC/regressions/$t" ] && regs=("$SRC/regressions/$t")
    local grown=() # what earlier campaigns found, merged and committed (merge_corpus.sh)
    [ -d "$SRC/grown/$t" ] && grown=("$SRC/grown/$t")
    # -rss_limit_mb/-malloc_limit_mb: any single allocation above 512 MB or a process above
    # 2 GB is a finding (the harness limits allow ~1 MB images). -timeout: 10 s per input.
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        /usr/bin/time -o "$W/logs/$t.time" -f "%U %S" "$BIN/fuzz_$t" $(opts "$t") -max_total_time="$S" -print_final_stats=1 \
        -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=10 \
        -artifact_prefix="$W/artifacts/$t/" \
        "$W/corpus/$t" "${grown[@]}" "$SRC/corpus/$t" "${regs[@]}" >"$W/logs/$t.log" 2>&1
    echo $? >"$W/logs/$t.rc"
}

for t in $TARGETS; do
    if [ ! -x "$BIN/fuzz_$t" ]; then
        echo "run_fuzz: $BIN/fuzz_$t missing (run make fuzz)" >&2
        exit 2
    fi
done
echo "fuzz: $S s per target, $P at a time: $TARGETS"
for t in $TARGETS; do
    while [ "$(jobs -rp | wc -l)" -ge "$P" ]; do wait -n; done
    run_one "$t" &
done
wait

fail=0
printf "%-12s %12s %10s %8s %8s %9s  %s\n" target executions exec/s "cov" corpus "cpu s" findings
for t in $TARGETS; do
    log=$W/logs/$t.log
    rc=$(cat "$W/logs/$t.rc" 2>/dev/null || echo 1)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -oE '(DONE|INITED|REDUCE|NEW|pulse) +cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$')
    corp=$(find "$W/corpus/$t" -type f | wc -l)
    found=$(find "$W/artifacts/$t" -type f -newer "$W/logs/$t.start" | wc -l)
    wall=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
    cpu=$(tail -1 "$W/logs/$t.time" 2>/dev/null | awk '{printf "%.0f", $1 + $2}')
    ft=$(grep -oE '(DONE|INITED|REDUCE|NEW|pulse) +cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$')
    what="none"
    if [ "$rc" != 0 ] || [ "$found" != 0 ]; then
        fail=1
        what="rc=$rc, $found artifact(s) in $W/artifacts/$t: $(grep -m1 -E 'ERROR: |FUZZ INVARIANT|runtime error' "$log" | cut -c1-120)"
    fi
    printf "%-12s %12s %10s %8s %8s %9s  %s\n" "$t" "${execs:-?}" "${eps:-?}" "${cov:-?}" "$corp" "${cpu:-?}" "$what"
    [ -f "$LOG" ] || printf "date\ttarget\twall_s\tcpu_s\texecs\tedges\tfeatures\tcorpus\tfindings\n" >"$LOG"
    printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$(date -u +%Y-%m-%dT%H:%MZ)" "$t" "${wall:-0}" \
        "${cpu:-0}" "${execs:-0}" "${cov:-0}" "${ft:-0}" "$corp" "$found" >>"$LOG"
done
exit $fail
