#!/bin/bash
# merge_corpus.sh - folds what fuzzing campaigns found back into the committed corpora, minimized,
# so that the next campaign (on any machine) starts where this one stopped.
#
#   fuzz/merge_corpus.sh BUILD_DIR [TARGET...]      (after `make fuzz`; `make fuzz-merge`)
#
# For each target: libFuzzer's -merge=1 starts from the hand-made seeds (fuzz/corpus/<t>, always
# kept, written by make_seeds.py) and adds, from the committed grown corpus (fuzz/grown/<t>) and
# the working corpus of local runs (BUILD_DIR/fuzz-work/corpus/<t>), only the inputs that reach
# coverage the set does not have yet, smallest first. fuzz/grown/<t> becomes exactly those
# additions (named by their SHA-1, as libFuzzer names them). Inputs above MAX_FILE bytes are not
# kept (default 16384, the harnesses' -max_len); the script prints each target's file count and
# bytes, so that a commit stays small (a few MB in all). Commit fuzz/grown afterwards; the
# fuzz_replay_<t> ctests replay it in every build.
set -eu
B=${1:?usage: merge_corpus.sh BUILD_DIR [TARGET...]}
shift
SRC=$(cd "$(dirname "$0")" && pwd)
BIN=$B/fuzz-bin
W=$B/fuzz-work
TARGETS=${*:-safetensors config index gguf image encode video serve chat_request hub_listing hub_header}
MAX_FILE=${MAX_FILE:-16384}

for t in $TARGETS; do
    [ -x "$BIN/fuzz_$t" ] || { echo "merge_corpus: $BIN/fuzz_$t missing (make fuzz-build)" >&2; exit 2; }
    tmp=$(mktemp -d)
    mkdir -p "$tmp/set" "$tmp/in"
    cp "$SRC/corpus/$t"/* "$tmp/set/"
    for d in "$SRC/grown/$t" "$W/corpus/$t"; do
        [ -d "$d" ] && find "$d" -type f -size -"$((MAX_FILE + 1))"c -exec cp -t "$tmp/in" {} +
    done
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} "$BIN/fuzz_$t" -merge=1 -timeout=10 \
        -rss_limit_mb=2048 -malloc_limit_mb=512 "$tmp/set" "$tmp/in" >"$tmp/log" 2>&1 || {
        echo "merge_corpus: $t: merge failed (log: $tmp/log)" >&2
        tail -5 "$tmp/log" >&2
        exit 1
    }
    rm -rf "$SRC/grown/$t"
    mkdir -p "$SRC/grown/$t"
    for f in "$tmp/set"/*; do
        [ -e "$SRC/corpus/$t/$(basename "$f")" ] || cp "$f" "$SRC/grown/$t/"
    done
    n=$(find "$SRC/grown/$t" -type f | wc -l)
    bytes=$(du -sb "$SRC/grown/$t" | cut -f1)
    printf "merge_corpus: %-12s %5d inputs kept in fuzz/grown/%s (%d bytes); %s\n" "$t" "$n" "$t" \
        "$bytes" "$(grep -m1 -oE 'MERGE-OUTER: [0-9]+ new files with [0-9]+ new features' "$tmp/log")"
    rm -rf "$tmp"
done
