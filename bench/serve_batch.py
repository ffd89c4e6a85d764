#!/usr/bin/python3
"""serve_batch.py - `g4v serve --batch`: CLIENTS clients posting images at once, each request
answered before the client sends its next, against servers that encode them one at a time, or
take what waits together (g4v_encode_batch), or run two contexts of half the threads each; the
servers started fresh and taking turns REPS times in one run (docs/SERVICE.md "Batching";
`make bench-serve-batch`).

Every request carries an image of its own (a 640x480 PNG, 70 tokens by default), so no server
reuses an encoding, and the feature cache is off. Per server (medians over the reps):
  img/s       images answered per second, from the first request sent to the last answer
  latency     a request's time from sending to its whole answer, median and p95 over all
  batched     requests a context took together with others (g4v_encode_batched_total)
The answers of every server are compared: the features must be the same bytes.

usage: serve_batch.py --g4v BIN --model DIR [--clients 8] [--requests 4] [--tokens 70]
                      [--threads 2] [--reps 2] [--json OUT]
"""
import argparse
import hashlib
import http.client
import io
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
from PIL import Image


def images(n, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    base = rng.integers(0, 256, (480, 640, 3), dtype=np.uint8)
    for k in range(n):
        a = base.copy()
        a[k % 480, :, :] = k % 256  # a line of its own: different bytes, the same size
        a[:, (7 * k) % 640, 0] = 255 - k % 256
        b = io.BytesIO()
        Image.fromarray(a).save(b, format="PNG")
        out.append(b.getvalue())
    return out


class Server:
    def __init__(self, g4v, model, args, log):
        self.p = subprocess.Popen([g4v, "serve", "--model", model, "--port", "0", *args],
                                  stdout=subprocess.PIPE, stderr=log, text=True)
        m = re.search(r"http://[^ ]*:(\d+)", self.p.stdout.readline())
        if not m:
            raise RuntimeError("the server did not start")
        self.port = int(m.group(1))

    def post(self, path, body):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        try:
            c.request("POST", path, body=body,
                      headers={"Content-Type": "application/octet-stream"})
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def metric(self, name):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
        m = re.search(rf"^{name} (\S+)$", text, re.M)
        return float(m.group(1)) if m else None

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=120)


def run_one(g4v, model, args, imgs, clients, tokens, log):
    s = Server(g4v, model, args, log)
    try:
        path = f"/v1/encode?tokens={tokens}&format=npy"
        st, _ = s.post(path, imgs[-1])  # warm-up (not one of the measured images)
        assert st == 200, st
        per = (len(imgs) - 1) // clients
        lat, digests = [], {}
        lock = threading.Lock()

        def client(c):
            for k in range(per):
                i = c * per + k
                t0 = time.perf_counter()
                st, body = s.post(path, imgs[i])
                dt = time.perf_counter() - t0
                with lock:
                    lat.append(dt)
                    digests[i] = (st, hashlib.sha256(body).hexdigest())

        ts = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        span = time.perf_counter() - t0
        return {"img_s": len(lat) / span, "latency_median": statistics.median(lat),
                "latency_p95": sorted(lat)[max(0, int(0.95 * len(lat)) - 1)],
                "batched": s.metric("g4v_encode_batched_total"), "digests": digests}
    finally:
        s.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--g4v", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=4, help="per client")
    ap.add_argument("--tokens", type=int, default=70)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--json")
    a = ap.parse_args()
    t = a.threads
    servers = [
        ("one at a time", ["--contexts", "1", "--threads", str(t)]),
        (f"--batch {a.clients}", ["--contexts", "1", "--threads", str(t), "--batch",
                                  str(a.clients)]),
        (f"{t} contexts x 1 thread", ["--contexts", str(t), "--threads", "1"]),
    ]
    imgs = images(a.clients * a.requests + 1)
    res = {name: [] for name, _ in servers}
    with tempfile.TemporaryFile("w+") as log:
        for rep in range(a.reps):
            for name, args in servers:
                r = run_one(a.g4v, a.model, args, imgs, a.clients, a.tokens, log)
                res[name].append(r)
                print(f"rep {rep + 1} {name:>24}: {r['img_s']:.3f} img/s, latency median "
                      f"{r['latency_median']:.2f} s, p95 {r['latency_p95']:.2f} s, batched "
                      f"{r['batched']:.0f}", flush=True)
    ref = res[servers[0][0]][0]["digests"]
    same = all(r["digests"] == ref for rs in res.values() for r in rs)
    base = statistics.median(r["img_s"] for r in res[servers[0][0]])
    print(f"\n{a.clients} clients x {a.requests} requests, {a.tokens} tokens, {t} threads, "
          f"median of {a.reps}:")
    print(f"{'server':>24} {'img/s':>7} {'/ one':>6} {'lat med':>8} {'lat p95':>8}")
    summary = {}
    for name, _ in servers:
        rs = res[name]
        v = {k: statistics.median(r[k] for r in rs)
             for k in ("img_s", "latency_median", "latency_p95", "batched")}
        v["over_one_at_a_time"] = v["img_s"] / base
        summary[name] = v
        print(f"{name:>24} {v['img_s']:7.3f} {v['over_one_at_a_time']:6.3f} "
              f"{v['latency_median']:7.2f}s {v['latency_p95']:7.2f}s")
    print(f"answers the same bytes on every server: {'yes' if same else 'NO'}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "servers": summary, "same_answers": same}, f, indent=1)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
