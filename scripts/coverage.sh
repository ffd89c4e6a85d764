#!/bin/bash
# coverage.sh - line and branch coverage of src/io and src/image (clang source-based coverage)
# over the unit tests, the fuzz corpora replays (seeds, fuzz/grown, regressions) and the
# allocation-failure sweep (so the out-of-memory paths count).
#
#   scripts/coverage.sh [BUILD_DIR] [JOBS]        (make coverage; default build-cov, nproc)
#
# Configures BUILD_DIR with clang, -DG4V_COVERAGE=ON and -DG4V_FAULT_INJECTION=ON, builds, runs
# `ctest -L 'unit|fault'` with every
# process writing a raw profile (LLVM_PROFILE_FILE), merges them (llvm-profdata) and prints, per
# file of src/io and src/image, the lines and branches covered (llvm-cov export), then the
# totals. The HTML report of every file is in BUILD_DIR/coverage/html (llvm-cov show). What stays
# uncovered, and why, is listed in fuzz/CAMPAIGNS.md.
set -eu
B=${1:-build-cov}
J=${2:-$(nproc)}
PY=${PYTHON:-/usr/bin/python3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LLVM_PROFDATA=${LLVM_PROFDATA:-$(command -v llvm-profdata || true)}
LLVM_COV=${LLVM_COV:-$(command -v llvm-cov || true)}
if [ -z "$LLVM_PROFDATA" ] || [ -z "$LLVM_COV" ]; then
    echo "coverage: llvm-profdata and llvm-cov are needed (apt-get install llvm)" >&2
    exit 2
fi
# No -Werror: clang warns (-Wpsabi) on the SIMDe emulation tests, which gcc builds cleanly.
cmake -S "$ROOT" -B "$B" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DG4V_COVERAGE=ON \
    -DG4V_FAULT_INJECTION=ON -DG4V_WERROR=OFF >/dev/null
cmake --build "$B" -j "$J"
P=$(cd "$B" && pwd)/coverage
rm -rf "$P"
mkdir -p "$P/raw"
# %m: one file per binary (merged in place across its runs), %p: per process.
(cd "$B" && LLVM_PROFILE_FILE="$P/raw/%p-%m.profraw" ctest -L 'unit|fault' -j "$J" --output-on-failure \
    ${CTEST_FLAGS:-}) || echo "coverage: some tests failed (coverage is still reported)" >&2
"$LLVM_PROFDATA" merge -sparse -o "$P/all.profdata" "$P"/raw/*.profraw
# Every executable that ran: the test binaries and the tools the Python tests call.
objs=() # the first one positional, the others as -object
while IFS= read -r f; do
    if [ ${#objs[@]} -eq 0 ]; then objs=("$f"); else objs+=(-object "$f"); fi
done < <(
    find "$B" -type f -perm -u+x \( -name 'test_*' -o -name '*_replay' -o -name '*_tool' \
        -o -name g4v \) ! -name '*.sh' ! -name '*.py' | sort)
"$LLVM_COV" export -format=text -summary-only -instr-profile "$P/all.profdata" "${objs[@]}" \
    "$ROOT/src/io" "$ROOT/src/image" >"$P/summary.json"
"$LLVM_COV" show -format=html -output-dir "$P/html" -instr-profile "$P/all.profdata" \
    "${objs[@]}" "$ROOT/src/io" "$ROOT/src/image" >/dev/null 2>&1 || true
"$PY" - "$P/summary.json" "$ROOT" <<'PYEOF'
import json, sys
data = json.load(open(sys.argv[1]))["data"][0]
root = sys.argv[2].rstrip("/") + "/"
print("%-28s %17s %19s" % ("file", "lines", "branches"))
def pct(s):
    return 100.0 * s["covered"] / s["count"] if s["count"] else 100.0
for f in sorted(data["files"], key=lambda f: f["filename"]):
    name = f["filename"].replace(root, "")
    l, b = f["summary"]["lines"], f["summary"]["branches"]
    print("%-28s %5.1f%% %5d/%-5d %5.1f%% %5d/%-5d" % (name, pct(l), l["covered"], l["count"],
                                                      pct(b), b["covered"], b["count"]))
t = data["totals"]
print("%-28s %5.1f%% %5d/%-5d %5.1f%% %5d/%-5d" % ("total (src/io + src/image)", pct(t["lines"]),
      t["lines"]["covered"], t["lines"]["count"], pct(t["branches"]),
      t["branches"]["covered"], t["branches"]["count"]))
PYEOF
echo "coverage: HTML per file in $P/html/index.html"
