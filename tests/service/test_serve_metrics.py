#!/usr/bin/python3
"""test_serve_metrics.py - `g4v serve`'s GET /metrics, as an interface: every metric family with
its HELP and TYPE lines, in order, every sample name and label set, and the value format, against
the list below. Dashboards and alerts read these names; the service's code may move
(tools/service), the text may not change. A new metric is added here; a renamed or dropped one
fails.
"""
import http.client
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pyutil import BIN, check, gen_checkpoint  # noqa: E402

CODES = [200, 204, 400, 401, 403, 404, 405, 406, 413, 415, 421, 422, 429, 500, 503]
BUCKETS = ["0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5",
           "5", "10", "30", "60", "+Inf"]
# (name, type, help), in the order GET /metrics prints them
FAMILIES = [
    ("g4v_http_requests_total", "counter", "HTTP requests answered, by status code."),
    ("g4v_encode_request_seconds", "histogram",
     "Time from the request's arrival to its answer (POST /v1/encode)."),
    ("g4v_queue_depth", "gauge", "Complete encode requests waiting for a context."),
    ("g4v_queue_capacity", "gauge", "Waiting requests allowed before 429."),
    ("g4v_encodes_in_progress", "gauge", "Contexts encoding now."),
    ("g4v_contexts", "gauge", "Encode contexts."),
    ("g4v_requests_in_flight", "gauge", "HTTP requests begun and not yet completed."),
    ("g4v_encodes_total", "counter", "Images encoded or served from the cache."),
    ("g4v_encode_batched_total", "counter",
     "Encode requests taken by a context together with others (--batch)."),
    ("g4v_cache_hits_total", "counter", "Encode requests served from the feature cache."),
    ("g4v_cache_misses_total", "counter", "Cache lookups that found no valid entry."),
    ("g4v_cache_corrupt_total", "counter",
     "Damaged cache entries found (recomputed, never served)."),
    ("g4v_cache_evictions_total", "counter", "Cache entries removed to stay under the size bound."),
    ("g4v_cache_errors_total", "counter", "Failed cache writes or scans."),
]


def expected_samples():
    out = []
    for c in CODES + ["other"]:
        out.append(f'g4v_http_requests_total{{code="{c}"}}')
    for b in BUCKETS:
        out.append(f'g4v_encode_request_seconds_bucket{{le="{b}"}}')
    out += ["g4v_encode_request_seconds_sum", "g4v_encode_request_seconds_count"]
    out += [f[0] for f in FAMILIES[2:]]
    return out


def get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.getheader("Content-Type"), r.read().decode()
    finally:
        c.close()


def test_metrics():
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "tiny")
        gen_checkpoint(model, "--config", "tiny", "--seed", "3", quiet=True)
        p = subprocess.Popen([BIN, "serve", "--model", model, "--port", "0", "--queue", "7",
                              "--contexts", "2", "--threads", "1", "--cache",
                              os.path.join(tmp, "cache")],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            m = re.search(r"http://127\.0\.0\.1:(\d+)", p.stdout.readline())
            check(m is not None, "the server starts and prints its address")
            if not m:
                return
            port = int(m.group(1))
            get(port, "/nope")  # one 404, counted before /metrics is read
            # The 404's connection is completed (and leaves g4v_requests_in_flight) by the
            # server after the client has its answer: read /metrics until only this request
            # is in flight (a few ms), then check that answer.
            for reads in range(1, 101):
                st, ctype, text = get(port, "/metrics")
                if re.search(r"^g4v_requests_in_flight 1$", text, re.M):
                    break
                time.sleep(0.02)
        finally:
            p.terminate()
            rc = p.wait(timeout=60)
        check(st == 200 and ctype == "text/plain; version=0.0.4", "GET /metrics: 200, text 0.0.4")
        check(rc == 0, "SIGTERM: exit 0")
        lines = text.splitlines()
        meta = [ln for ln in lines if ln.startswith("#")]
        want_meta = []
        for name, typ, hlp in FAMILIES:
            want_meta += [f"# HELP {name} {hlp}", f"# TYPE {name} {typ}"]
        check(meta == want_meta, "every family's HELP and TYPE lines, in order")
        for a, b in zip(meta, want_meta):
            if a != b:
                print(f"  got  {a!r}\n  want {b!r}")
                break
        samples = [ln.rsplit(" ", 1) for ln in lines if not ln.startswith("#")]
        names = [s[0] for s in samples]
        check(names == expected_samples(), "every sample name and label set, in order")
        values = dict((s[0], s[1]) for s in samples)
        check(all(re.fullmatch(r"\d+", values[n]) for n in names
                  if n.startswith("g4v_http_requests_total") or "_bucket" in n
                  or n == "g4v_encode_request_seconds_count"),
              "counts print as integers")
        total = values.get("g4v_encode_request_seconds_sum", "")
        check(re.fullmatch(r"\d+\.\d{6}", total) is not None,
              "the latency sum prints with 6 decimals")
        check(values.get('g4v_http_requests_total{code="404"}') == "1"
              and int(values.get('g4v_http_requests_total{code="200"}', "-1")) in range(reads),
              "the 404 before is counted; this request not yet (earlier /metrics reads may be)")
        check(values.get("g4v_queue_capacity") == "7" and values.get("g4v_contexts") == "2"
              and values.get("g4v_requests_in_flight") == "1",
              "gauges: --queue, --contexts, this request in flight")
