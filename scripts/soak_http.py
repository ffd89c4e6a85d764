#!/usr/bin/python3
"""soak_http.py - `g4v serve` under load and over time (`make soak`, after the library soak).

    soak_http.py --g4v BUILD/g4v --fixtures DIR [--seconds 600] [--clients 4] [--contexts 2]

Starts `g4v serve` on the tiny checkpoint of DIR (tests/api/make_fixtures.py) on a free loopback
port with --contexts K (one thread each), records a serial reference (one request at a time: every
fixture image at budgets 70/140/280, f32 and bf16, as .npy, and the bad requests' status codes),
then runs --clients threads for --seconds, each sending a random mix of:
  - good encodes (the body must equal the serial one byte for byte: same floats, same header);
  - bad requests (a truncated image, random bytes, an empty body, tokens=100, dtype=f64, an
    unknown path, GET on /v1/encode): the serial status code and a JSON error body;
  - clients that hang up: after half the body, right after a complete request without reading
    the answer, or after connecting without sending anything.
Meanwhile the server's RSS (/proc/PID/status VmRSS) is sampled ~30 times and printed. At the end:
every answer was right, RSS after the warm-up (20% of the run, at least 5 s) stayed within
8 MB + 3% of its value at the end of the warm-up, /metrics shows no request in flight once the
clients stop (those that hung up included), /health answers, and SIGTERM exits 0.
Exit status 0 when all of that held.
"""
import argparse
import http.client
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time

IMAGES = ["img0.png", "img1.png", "img2.png", "img3.png", "img4.png", "img5.png", "rot6.jpg"]


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def request(port, method, path, body=b"", timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=body if method == "POST" else None,
                  headers={"Content-Type": "image/png"} if method == "POST" else {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def hang_up(port, kind, body):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        head = (b"POST /v1/encode?format=npy HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: image/png\r\nContent-Length: %d\r\n\r\n" % len(body))
        if kind == "mid-body":
            s.sendall(head + body[: len(body) // 2])
        elif kind == "no-read":
            s.sendall(head + body)
        # "connect-only": nothing sent
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--g4v", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--contexts", type=int, default=2)
    a = ap.parse_args()

    imgs = {n: open(os.path.join(a.fixtures, n), "rb").read() for n in IMAGES}
    srv = subprocess.Popen([a.g4v, "serve", "--model", os.path.join(a.fixtures, "tiny"), "--port",
                            "0", "--contexts", str(a.contexts), "--threads", "1", "--queue", "256",
                            "--timeout", "3", "--drain-seconds", "5"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = srv.stdout.readline()
    m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
    if not m:
        print("soak_http: the server did not start:", line.strip())
        srv.kill()
        return 2
    port = int(m.group(1))

    good = []  # (name, path, body)
    for n, data in imgs.items():
        for t in (70, 140, 280):
            for dt in ("f32", "bf16"):
                good.append((f"{n} t{t} {dt}", f"/v1/encode?tokens={t}&dtype={dt}&format=npy", data))
    png = imgs["img0.png"]
    bad = [("truncated png", "POST", "/v1/encode", png[: len(png) * 6 // 10]),
           ("random bytes", "POST", "/v1/encode", bytes(random.Random(5).randrange(256)
                                                         for _ in range(512))),
           ("empty body", "POST", "/v1/encode", b""),
           ("tokens=100", "POST", "/v1/encode?tokens=100", png),
           ("dtype=f64", "POST", "/v1/encode?dtype=f64", png),
           ("unknown path", "GET", "/v1/nothing", b""),
           ("GET /v1/encode", "GET", "/v1/encode", b"")]
    ref_good, ref_bad = {}, {}
    for name, path, body in good:
        st, out = request(port, "POST", path, body)
        if st != 200:
            print(f"soak_http: serial {name}: HTTP {st}: {out[:200]!r}")
            srv.kill()
            return 1
        ref_good[name] = out
    for name, method, path, body in bad:
        st, out = request(port, method, path, body)
        if st < 400 or st >= 500 or b'"error"' not in out:
            print(f"soak_http: serial {name}: HTTP {st} {out[:200]!r}: expected a 4xx JSON error")
            srv.kill()
            return 1
        ref_bad[name] = st
    print(f"soak_http: {len(good)} good and {len(bad)} bad requests, {a.clients} clients, "
          f"{a.contexts} contexts, {a.seconds:.0f} s")

    stop = threading.Event()
    lock = threading.Lock()
    counts = {"good": 0, "bad": 0, "hang-ups": 0}
    errors = []

    def client(seed):
        rng = random.Random(seed)
        while not stop.is_set():
            r = rng.random()
            try:
                if r < 0.70:
                    name, path, body = rng.choice(good)
                    st, out = request(port, "POST", path, body)
                    ok = st == 200 and out == ref_good[name]
                    what = "good"
                elif r < 0.90:
                    name, method, path, body = rng.choice(bad)
                    st, out = request(port, method, path, body)
                    ok = st == ref_bad[name] and b'"error"' in out
                    what = "bad"
                else:
                    name = rng.choice(["mid-body", "no-read", "connect-only"])
                    hang_up(port, name, rng.choice(list(imgs.values())))
                    ok, st, what = True, 0, "hang-ups"
            except (OSError, http.client.HTTPException) as e:
                ok, st, what = False, repr(e), "error"
            with lock:
                counts[what] = counts.get(what, 0) + 1
                if not ok and len(errors) < 10:
                    errors.append(f"{name}: {st}")

    threads = [threading.Thread(target=client, args=(100 + i,)) for i in range(a.clients)]
    t0 = time.time()
    for t in threads:
        t.start()
    samples = []
    every = max(1.0, a.seconds / 30)
    print("soak_http: %8s %9s %8s %8s %9s" % ("t (s)", "RSS (MB)", "good", "bad", "hang-ups"))
    while True:
        t = time.time() - t0
        samples.append((t, rss_mb(srv.pid)))
        with lock:
            print("soak_http: %8.1f %9.1f %8d %8d %9d" % (t, samples[-1][1], counts["good"],
                                                         counts["bad"], counts["hang-ups"]))
        sys.stdout.flush()
        if t >= a.seconds:
            break
        time.sleep(max(0.0, min(len(samples) * every, a.seconds) - (time.time() - t0)))
    stop.set()
    for t in threads:
        t.join()
    failures = 0
    if errors:
        print("soak_http: wrong answers (first 10):", *errors, sep="\n  ")
        failures += 1

    warm = max(5.0, 0.2 * a.seconds)
    k0 = max(i for i, (t, _) in enumerate(samples) if t <= warm) if samples[0][0] <= warm else 0
    base = samples[k0][1]
    peak = max(r for _, r in samples[k0:])
    allowed = 8 + 0.03 * base
    print(f"soak_http: RSS after warm-up ({samples[k0][0]:.0f} s) {base:.1f} MB, peak after "
          f"{peak:.1f} MB (+{peak - base:.1f}, allowed +{allowed:.1f})")
    if peak - base > allowed:
        print("soak_http: server RSS grew after the warm-up: a leak?")
        failures += 1

    # Hung-up connections are closed by the server within --timeout (3 s).
    inflight = None
    for _ in range(40):
        st, out = request(port, "GET", "/metrics")
        m = re.search(rb"^g4v_requests_in_flight (\d+)", out, re.M)
        inflight = int(m.group(1)) if m else None
        if inflight == 1:  # this /metrics request itself
            break
        time.sleep(0.25)
    if inflight != 1:
        print(f"soak_http: {inflight} requests in flight after the clients stopped (expected only "
              "the /metrics request itself)")
        failures += 1
    st, out = request(port, "GET", "/health")
    if st != 200:
        print(f"soak_http: /health answered {st}")
        failures += 1
    srv.send_signal(signal.SIGTERM)
    try:
        rc = srv.wait(timeout=30)
    except subprocess.TimeoutExpired:
        srv.kill()
        rc = "timeout"
    if rc != 0:
        print(f"soak_http: SIGTERM: exit {rc}, expected 0")
        failures += 1
    print(f"soak_http: {counts['good']} good, {counts['bad']} bad, {counts['hang-ups']} hang-ups"
          f" in {a.seconds:.0f} s: " + ("FAILED" if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
