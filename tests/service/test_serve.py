#!/usr/bin/python3
"""test_serve.py - `g4v serve` with real HTTP clients against servers this test starts on
127.0.0.1 (ephemeral ports; nothing else is contacted).

Every endpoint and format (JSON base64 f32/bf16, .npy, safetensors; by Accept and by format=),
bit-identical to `g4v encode`; the cache shared with the CLI; bad requests (garbage, truncated
image, bad budget, empty, oversized by Content-Length and chunked, wrong method, unknown path,
unservable Accept); a body cut short; a client that sends half a request and stalls (it holds no
context and is timed out); 429 at once when the one context and the queue are taken; SIGTERM
with one request encoding and one queued: both answered in full, new connections refused, exit 0.
examples/g4v_client.py is one of the clients.
"""
import base64
import http.client
import io
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from serveutil import ServeProcess, with_servers  # noqa: E402
from pyutil import BIN, SRC, check, g4v, gen_checkpoint  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "examples"))
import g4v_client  # noqa: E402


class Server(ServeProcess):
    def __init__(self, tmp, name, *args):
        super().__init__(tmp, name, [BIN, "serve", "--port", "0", *args])


def st_tensor(body):
    """(header, the bytes of tensor "features") of a safetensors response body."""
    h, meta, data, _ = pyutil.st_parse(body)
    h["__metadata__"] = meta
    b, e = h["features"]["data_offsets"]
    return h, data[b:e]


def test_serve():
    with_servers("g4v_serve_", run)


def run(tmp, servers):
    model = os.path.join(tmp, "tiny")
    gen_checkpoint(model, "--config", "tiny", "--seed", "21", quiet=True)
    rng = np.random.default_rng(5)
    img = os.path.join(tmp, "a.png")
    Image.fromarray(rng.integers(0, 256, (150, 230, 3), dtype=np.uint8)).save(img)
    big = os.path.join(tmp, "big.png")  # ~1 s at 1120 tokens on one thread: slow on purpose
    Image.fromarray(rng.integers(0, 256, (900, 1000, 3), dtype=np.uint8)).save(big)
    png = open(img, "rb").read()

    # references from the CLI
    ref = {}
    for tokens in ("280", "70"):
        for bf in ((), ("--bf16",)):
            out = os.path.join(tmp, f"ref{tokens}{''.join(bf)}.npy")
            r = g4v("encode", "--model", model, img, "--tokens", tokens, "--json", "-o", out, *bf)
            check(r.returncode == 0, f"g4v encode --tokens {tokens} {' '.join(bf)}")
            ref[(tokens, bool(bf))] = (np.load(out), json.loads(r.stdout), open(out, "rb").read())
    out = os.path.join(tmp, "ref70tv.npy")
    r = g4v("encode", "--model", model, img, "--tokens", "70", "--resize", "torchvision", "-o", out)
    check(r.returncode == 0, "g4v encode --tokens 70 --resize torchvision")
    ref_tv = open(out, "rb").read()
    info = json.loads(g4v("info", "--model", model, "--json").stdout)

    cache = os.path.join(tmp, "cache")
    s = Server(tmp, "main", "--model", model, "--contexts", "1", "--threads", "1", "--queue", "1",
               "--timeout", "2", "--max-body-bytes", "3000000", "--cache", cache)
    servers.append(s)

    # -- GET endpoints ---------------------------------------------------------------------------
    st, h, body = s.request("GET", "/health")
    check(st == 200 and body == b"ok\n", "GET /health: 200 ok")
    st, h, body = s.request("GET", "/v1/info")
    j = json.loads(body)
    check(st == 200 and j["fingerprint"] == info["fingerprint"], "GET /v1/info: the fingerprint g4v info gives")
    check(j["budgets"] == [70, 140, 280, 560, 1120] and j["dim"] == info["text_hidden_size"]
          and j["service"]["contexts"] == 1, "GET /v1/info: budgets, dim, contexts")
    check(j.get("kernel_rule") == info["kernel_rule"] and j.get("amx") == info["amx"]
          and "AMX" in j["amx"]["reason"],
          f"GET /v1/info: the kernel rule and AMX's reason g4v info gives ({j.get('amx')})")
    check(j["amx"].get("self_test", "").startswith(("passed: ", "failed: ", "not run: ")),
          f"GET /v1/info: the AMX self-test's verdict ({j['amx']})")
    # docs/NUMERICS.md §6.5: each layer's sharpness and which run as PRECISE, as g4v info gives
    sh = j.get("sharpness", {})
    check(sh == info.get("sharpness") and len(sh.get("layers", [])) == j["num_layers"]
          and sh.get("threshold") == 2.0
          and all(lr["runs_precise"] == lr["sharp"] for lr in sh["layers"]),
          f"GET /v1/info: sharpness per layer as g4v info gives ({sh})")
    st, h, body = s.request("GET", "/metrics")
    check(st == 200 and "text/plain" in h["Content-Type"] and b"g4v_queue_depth 0" in body,
          "GET /metrics: Prometheus text")
    # a server packs its BF16 weights at load (the CLI reads them in place: the bits below are
    # the CLI's all the same); --in-place-weights keeps them in the checkpoint's pages
    check(j.get("weights") == "packed", f"GET /v1/info: weights packed by default ({j.get('weights')})")
    ip = Server(tmp, "inplace", "--model", model, "--contexts", "1", "--threads", "1",
                "--in-place-weights")
    servers.append(ip)
    st, h, body = ip.request("GET", "/v1/info")
    want = "in place" if platform.machine() in ("x86_64", "AMD64") else "packed"
    check(st == 200 and json.loads(body).get("weights") == want,
          f"--in-place-weights: /v1/info says {want!r} ({body[:80]!r})")
    st, h, body = ip.request("POST", "/v1/encode", png, {"Accept": "application/x-npy"})
    check(st == 200 and body == ref[("280", False)][2],
          "--in-place-weights: the same .npy bytes as g4v encode")
    ip.stop()

    # -- every format, bit-identical to g4v encode -----------------------------------------------
    f32, meta, npy_bytes = ref[("280", False)]
    bf16 = ref[("280", True)][0]
    st, h, body = s.request("POST", "/v1/encode", png, {"Accept": "application/x-npy"})
    check(st == 200 and h["Content-Type"] == "application/x-npy", "npy: 200")
    check(body == npy_bytes, "npy (Accept): the very bytes of g4v encode -o x.npy")
    check(h["X-G4V-Cache"] == "miss", "first request: a cache miss")
    check(h["X-G4V-Grid"] == "%dx%d" % tuple(meta["grid"]) and int(h["X-G4V-Tokens"]) == meta["tokens"]
          and h["X-G4V-Original-Size"] == "%dx%d" % tuple(meta["original_size"])
          and h["X-G4V-Target-Size"] == "%dx%d" % tuple(meta["target_size"]), "npy: headers give grid and sizes")
    ids = meta["prompt_ids"]
    check(h["X-G4V-Prompt-Ids"] == f"{ids['boi']} {ids['image']}x{meta['tokens']} {ids['eoi']}", "npy: prompt ids header")
    st, h, body = s.request("POST", "/v1/encode?format=npy&dtype=bf16", png)
    check(st == 200 and body == ref[("280", True)][2], "npy bf16 (format=): the bytes of g4v encode --bf16")
    check(h["X-G4V-Cache"] == "hit", "same image again: a cache hit")

    for dtype, want in (("f32", f32), ("bf16", bf16)):
        st, h, body = s.request("POST", f"/v1/encode?dtype={dtype}", png, {"Accept": "application/json"})
        j = json.loads(body)
        raw = base64.b64decode(j["features"])
        got = np.frombuffer(raw, dtype=np.float32 if dtype == "f32" else np.uint16).reshape(j["tokens"], j["dim"])
        check(st == 200 and np.array_equal(got.view(np.uint8), want.view(np.uint8)),
              f"json {dtype}: base64 features bit-identical")
        check(j["grid"] == meta["grid"] and j["original_size"] == meta["original_size"]
              and j["target_size"] == meta["target_size"] and j["budget"] == 280
              and j["prompt_ids"] == [ids["boi"]] + [ids["image"]] * meta["tokens"] + [ids["eoi"]]
              and j["token_ids"] == ids, f"json {dtype}: grid, sizes, budget, prompt ids")
        st, h, body = s.request("POST", f"/v1/encode?dtype={dtype}", png,
                                {"Accept": "application/x-safetensors"})
        hd, data = st_tensor(body)
        check(st == 200 and data == want.tobytes() and hd["features"]["shape"] == list(want.shape)
              and hd["features"]["dtype"] == ("F32" if dtype == "f32" else "BF16"),
              f"safetensors {dtype}: tensor bit-identical")
        md = hd["__metadata__"]
        check(md["grid"] == "%dx%d" % tuple(meta["grid"]) and md["fingerprint"] == info["fingerprint"]
              and md["prompt_ids"] == h["X-G4V-Prompt-Ids"], f"safetensors {dtype}: metadata")
    st, h, body = s.request("POST", "/v1/encode", png)  # no Accept: JSON
    check(st == 200 and h["Content-Type"] == "application/json", "no Accept: JSON")
    st, h, body = s.request("POST", "/v1/encode?tokens=70", png, {"Accept": "text/html, application/x-npy;q=0.9"})
    check(st == 200 and body == ref[("70", False)][2], "tokens=70 and an Accept list: as g4v encode --tokens 70")
    st, h, body = s.request("POST", "/v1/encode?tokens=70&resize=torchvision&format=npy", png)
    check(st == 200 and body == ref_tv and body != ref[("70", False)][2] and h["X-G4V-Cache"] == "miss",
          "resize=torchvision: as g4v encode --resize torchvision, not the Pillow entry of the cache")
    st, h, body = s.request("POST", "/v1/encode?resize=bilinear", png)
    check(st == 400 and b"resize=bilinear" in body, "resize=bilinear: 400")

    features, m = g4v_client.encode(s.url, png, tokens=70)
    check(np.array_equal(features, ref[("70", False)][0]) and m["grid"] == tuple(ref[("70", False)][1]["grid"]),
          "examples/g4v_client.py: the same features and grid")
    r = g4v("encode", "--model", model, img, "-o", os.path.join(tmp, "c.npy"), "--json", "--cache", cache)
    check(json.loads(r.stdout)["cache"] == "hit", "g4v encode --cache on the server's cache: a hit")

    # -- bad requests ----------------------------------------------------------------------------
    def err(method, path, body=None, headers=None):
        st, h, b = s.request(method, path, body, headers)
        try:  # OpenAI's error object, every route's (docs/SERVICE.md "Errors")
            e = json.loads(b)["error"]
            return st, {"error": e["message"], "status": e["code"], "type": e["type"],
                        "param": e["param"]}
        except (ValueError, KeyError, TypeError):
            return st, {"error": b.decode(errors="replace"), "status": "?"}

    st, j = err("POST", "/v1/encode", b"this is not an image")
    check(st == 415 and "unknown image format" in j["error"] and j["status"] == "G4V_ERR_UNSUPPORTED"
          and j["type"] == "invalid_request_error" and j["param"] is None,
          f"garbage body: 415 with the library's message ({st} {j['error']})")
    st, j = err("POST", "/v1/encode", png[: len(png) // 2])
    check(st == 422 and j["status"] == "G4V_ERR_IMAGE" and "memory buffer" in j["error"],
          f"truncated PNG: 422 with the library's message ({st} {j['error']})")
    st, j = err("POST", "/v1/encode?tokens=300", png)
    check(st == 400 and "unsupported token budget" in j["error"], "tokens=300: 400")
    st, j = err("POST", "/v1/encode?dtype=f64", png)
    check(st == 400 and "dtype" in j["error"], "dtype=f64: 400")
    st, j = err("POST", "/v1/encode", b"")
    check(st == 400 and "empty body" in j["error"], "empty body: 400")
    st, j = err("GET", "/v1/encode")
    check(st == 405, "GET /v1/encode: 405")
    st, j = err("POST", "/health", b"x")
    check(st == 405, "POST /health: 405")
    st, j = err("GET", "/nope")
    check(st == 404 and "no such endpoint" in j["error"] and j["type"] == "not_found_error",
          "unknown path: 404")
    st, j = err("POST", "/v1/encode", png, {"Accept": "image/png"})
    check(st == 406, "Accept: image/png: 406")
    # a path that is not UTF-8, quoted back in the error: the answer is still JSON (strict UTF-8)
    c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    c.sendall(b"GET /nope\xff\xc3\x28\xed\xa0\x80\xc3\xa9 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    raw = b""
    while (part := c.recv(65536)):
        raw += part
    c.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    try:
        j = json.loads(body.decode("utf-8", errors="strict"))
        j = {"error": j["error"]["message"]}
    except (ValueError, KeyError, TypeError) as e:
        j = {"error": f"not JSON: {e}: {body[:80]!r}"}
    check(head.startswith(b"HTTP/1.1 404") and "/nope?" in j["error"] and "\u00e9" in j["error"],
          f"non-UTF-8 path: 404 with JSON that decodes ({j['error'][:60]!r})")

    # oversized: refused on the Content-Length alone, before any body byte is sent
    c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    c.sendall(b"POST /v1/encode HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: image/png\r\nContent-Length: 50000000\r\n\r\n")
    head = c.recv(65536).decode(errors="replace")
    c.close()
    check(head.startswith("HTTP/1.1 413") and "--max-body-bytes" in head, "Content-Length over the limit: 413 at once")
    # oversized without a length (chunked): read, dropped, 413
    chunk = b"\0" * 1000000

    def chunks():
        for _ in range(4):
            yield chunk
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
    conn.request("POST", "/v1/encode", body=chunks(), encode_chunked=True,
                 headers={"Transfer-Encoding": "chunked", "Content-Type": "image/png"})
    r = conn.getresponse()
    check(r.status == 413, f"chunked body over the limit: 413 ({r.status})")
    r.read()
    conn.close()

    # a body cut short: the client says 100000 bytes, sends 1000 and closes
    c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    c.sendall(b"POST /v1/encode HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: image/png\r\nContent-Length: 100000\r\n\r\n" + png[:1000])
    c.close()
    st, h, body = s.request("GET", "/health")
    check(st == 200, "after a body cut short: still healthy")

    # half a request, then silence: holds no context (another encode goes through meanwhile)
    # and is closed after --timeout 2
    stall = socket.create_connection(("127.0.0.1", s.port), timeout=15)
    stall.sendall(b"POST /v1/encode HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: image/png\r\nContent-Length: 5000\r\n\r\n" + png[:2000])
    t0 = time.time()
    st, h, body = s.request("POST", "/v1/encode?format=npy&tokens=70", png)
    check(st == 200 and body == ref[("70", False)][2], "an encode while a client stalls: served")
    try:
        closed = stall.recv(100) == b""
    except (ConnectionResetError, socket.timeout):
        closed = True  # reset counts; a timeout is checked below
    waited = time.time() - t0
    check(closed and waited < 10, f"the stalled client was disconnected after {waited:.1f} s (timeout 2 s)")
    stall.close()

    m = s.metrics()
    check(m.get('g4v_http_requests_total{code="413"}') == 2 and m.get('g4v_http_requests_total{code="415"}') == 1
          and m.get("g4v_cache_hits_total", 0) >= 1 and m.get("g4v_encode_request_seconds_count", 0) >= 10,
          "metrics count requests by status, cache hits and latencies")

    # -- saturation and SIGTERM on a server of one context, one queue slot, no cache -------------
    s2 = Server(tmp, "busy", "--model", model, "--contexts", "1", "--threads", "1", "--queue", "1")
    servers.append(s2)
    bigb = open(big, "rb").read()
    ref_big = os.path.join(tmp, "big.npy")
    g4v("encode", "--model", model, big, "--tokens", "1120", "-o", ref_big, "--quiet")
    ref_big = open(ref_big, "rb").read()
    results = {}

    def slow(tag):
        results[tag] = s2.request("POST", "/v1/encode?tokens=1120&format=npy", bigb, timeout=600)
    ta = threading.Thread(target=slow, args=("a",))
    ta.start()
    check(s2.wait_metric("g4v_encodes_in_progress", 1), "A is encoding")
    tb = threading.Thread(target=slow, args=("b",))
    tb.start()
    check(s2.wait_metric("g4v_queue_depth", 1), "B is queued")
    t0 = time.time()
    st, h, body = s2.request("POST", "/v1/encode?tokens=1120", bigb)
    dt = time.time() - t0
    busy = s2.metrics().get("g4v_encodes_in_progress") == 1
    check(st == 429 and b"retry later" in body and h.get("Retry-After") == "1",
          f"C with the context and the queue taken: 429 ({st})")
    check(busy, f"the 429 came while A was still encoding ({dt:.2f} s)")

    s2.p.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    refused = False
    try:
        socket.create_connection(("127.0.0.1", s2.port), timeout=5).close()
    except OSError:
        refused = True
    check(refused, "after SIGTERM new connections are refused")
    ta.join(600)
    tb.join(600)
    for tag in ("a", "b"):
        st, h, body = results.get(tag, (None, None, None))
        check(st == 200 and body == ref_big, f"request {tag.upper()} in flight at SIGTERM: answered in full")
    try:
        rc = s2.p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        rc = None
    check(rc == 0, f"SIGTERM: exit 0 ({rc})")
    errtext = open(s2.err_path).read()
    check("finishing the requests in flight" in errtext and "stopped" in errtext, "SIGTERM: drain reported on stderr")

    rc = s.stop()
    check(rc == 0, f"main server: SIGTERM when idle, exit 0 ({rc})")

    # -- usage ---------------------------------------------------------------------------------
    r = g4v("serve", "--help")
    check(r.returncode == 0 and "POST /v1/encode" in r.stdout, "g4v serve --help")
    r = g4v("serve")
    check(r.returncode == 1 and "--model DIR is required" in r.stderr, "g4v serve without --model: usage error")
    r = g4v("serve", "--model", model, "--host", "no.such.host.invalid", "--port", "0")
    check(r.returncode == 4 and "--host" in r.stderr, f"unresolvable --host: exit 4 ({r.returncode} {r.stderr.strip()[-80:]})")

