#!/usr/bin/env bash
# load.sh BUILD_DIR [SECONDS] - `make load`: g4v serve under wrk, on loopback only, bounded in time.
#
# A synthetic tiny checkpoint and a 640x480 PNG are generated into BUILD_DIR/load (once). Three runs
# against a server this script starts on 127.0.0.1 (ephemeral port) and stops with SIGTERM:
#   1. overhead: 200 sequential requests (one client); the client's latency against the library's
#      own time for the call (X-G4V-Encode-Seconds) gives the service's cost per request;
#   2. encode-bound: wrk, 2 threads, 8 connections, SECONDS (default 10), no cache: every request
#      is encoded (2 contexts x 1 thread, queue 16 > 8 connections: no 429 expected);
#   3. cache-bound: the same with --cache: after the first request every one is a hit.
# wrk must report 0 errors and 0 non-2xx responses (a failure exits 1).
set -euo pipefail
BUILD=${1:-build}
SECONDS_=${2:-10}
PY=${PYTHON:-/usr/bin/python3}
G4V="$BUILD/g4v"
D="$BUILD/load"
mkdir -p "$D"
[ -f "$D/model/config.json" ] || $PY tools/gen_checkpoint.py "$D/model" --config tiny --seed 0 >/dev/null
[ -f "$D/image.png" ] || $PY -c "
import numpy as np; from PIL import Image
Image.fromarray(np.random.default_rng(0).integers(0, 256, (480, 640, 3), dtype=np.uint8)).save('$D/image.png')"
command -v wrk >/dev/null || { echo "load: wrk is not installed (scripts/install-deps.sh --load)"; exit 1; }

fail=0
run_server() { # args...; sets PID, PORT
    rm -f "$D/serve.out"
    "$G4V" serve --model "$D/model" --port 0 --contexts 2 --threads 1 --queue 16 "$@" \
        >"$D/serve.out" 2>"$D/serve.err" &
    PID=$!
    for _ in $(seq 100); do grep -q listening "$D/serve.out" 2>/dev/null && break; sleep 0.1; done
    PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$D/serve.out" | cut -d: -f2)
    [ -n "$PORT" ] || { cat "$D/serve.err"; exit 1; }
}
stop_server() {
    kill -TERM "$PID"
    wait "$PID" || { echo "load: server exit $?"; fail=1; }
}
wrk_run() {
    G4V_LOAD_IMAGE="$D/image.png" G4V_LOAD_PATH="/v1/encode?format=npy" \
        timeout $((SECONDS_ + 30)) wrk -t2 -c8 -d"${SECONDS_}s" --timeout 10s -s scripts/load.lua \
        "http://127.0.0.1:$PORT" | tee "$D/wrk.out" | grep '^load:'
    grep -q 'errors: connect 0, read 0, write 0, timeout 0, non-2xx 0' "$D/wrk.out" || fail=1
    curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^g4v_(http_requests_total\{code="(200|429)"\}|cache_hits_total)'
}

echo "load: $(nproc) CPUs; $(uptime)"
run_server
echo "== 1. service overhead: 200 sequential requests, one connection"
$PY - "$PORT" "$D/image.png" <<'PYEOF'
import http.client, sys, time
port, img = int(sys.argv[1]), open(sys.argv[2], "rb").read()
c = http.client.HTTPConnection("127.0.0.1", port)
lat, lib = [], []
for i in range(220):
    t0 = time.perf_counter()
    c.request("POST", "/v1/encode?format=npy", body=img,
              headers={"Content-Type": "image/png"})
    r = c.getresponse(); r.read()
    dt = time.perf_counter() - t0
    assert r.status == 200, r.status
    if i >= 20:  # warm-up
        lat.append(dt); lib.append(float(r.getheader("X-G4V-Encode-Seconds")))
lat.sort(); over = sorted(a - b for a, b in zip(lat, lib))
m = lambda v: sum(v) / len(v) * 1000
print(f"load: sequential: client latency mean {m(lat):.2f} ms (p50 {lat[len(lat)//2]*1000:.2f}), "
      f"library call mean {m(lib):.2f} ms, service overhead mean {m(over):.2f} ms "
      f"(p50 {over[len(over)//2]*1000:.2f}, p99 {over[int(len(over)*0.99)]*1000:.2f})")
PYEOF
echo "== 2. encode-bound: wrk -t2 -c8 -d${SECONDS_}s, no cache"
wrk_run
stop_server
rm -rf "$D/cache"
run_server --cache "$D/cache"
echo "== 3. cache-bound: wrk -t2 -c8 -d${SECONDS_}s, --cache (hits)"
wrk_run
stop_server
[ "$fail" = 0 ] && echo "load: ok (0 errors, 0 non-2xx)" || { echo "load: FAILED (see above)"; exit 1; }
