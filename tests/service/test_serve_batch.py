#!/usr/bin/python3
"""test_serve_batch.py - `g4v serve --batch B`: requests that wait together for the one context
are taken by it together and encoded by one g4v_encode_batch, and every one of them gets the
answer a server without --batch gives: the same status, body (features bit for bit, errors word
for word) and X-G4V-* headers (the encode time apart).

Each server (--batch 1, then --batch 8; one context, one thread) is first given a large image at
1120 tokens, which holds its context; while it is encoding, ten requests are sent at once (sizes,
budgets, bf16, torchvision resize, a body that is no image, an empty body): they wait in the queue
and, with --batch 8, the context takes up to eight of them at once (g4v_encode_batched_total
counts them; 0 without --batch).
"""
import os
import sys
import threading
import time

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from serveutil import ServeProcess, with_servers  # noqa: E402
from pyutil import BIN, check, gen_checkpoint  # noqa: E402


class Server(ServeProcess):
    def __init__(self, tmp, name, *args):
        super().__init__(tmp, name, [BIN, "serve", "--port", "0", *args])


def png(path, rng, h, w):
    Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(path)
    return open(path, "rb").read()


def requests_of(tmp):
    rng = np.random.default_rng(11)
    reqs = []
    for k, (h, w) in enumerate([(150, 230), (90, 90), (300, 120), (64, 500), (200, 200),
                                (77, 131), (240, 320), (33, 47)]):
        body = png(os.path.join(tmp, f"i{k}.png"), rng, h, w)
        query = ["tokens=70", "tokens=140", "tokens=70&dtype=bf16", "tokens=280",
                 "tokens=70&resize=torchvision", "tokens=140&format=json", "tokens=70",
                 "tokens=560"][k]
        if "format" not in query:
            query += "&format=npy"
        reqs.append((f"/v1/encode?{query}", body))
    reqs.append(("/v1/encode?tokens=70&format=npy", b"this is not an image"))
    reqs.append(("/v1/encode?tokens=70&format=npy", b""))
    return reqs


def answers(server, big, reqs):
    """The answers to reqs, all sent while big is being encoded."""
    hold = threading.Thread(target=server.request,
                            args=("POST", "/v1/encode?tokens=1120&format=npy", big))
    hold.start()
    end = time.time() + 30
    while time.time() < end and server.metrics().get("g4v_encodes_in_progress") != 1:
        time.sleep(0.005)
    out = [None] * len(reqs)

    def send(i):
        path, body = reqs[i]
        st, headers, data = server.request("POST", path, body)
        keep = {k: v for k, v in headers.items()
                if k.lower().startswith("x-g4v-") and k.lower() != "x-g4v-encode-seconds"}
        out[i] = (st, keep, data)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(reqs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    hold.join()
    return out, server.metrics().get("g4v_encode_batched_total")


def run(tmp, servers):
    model = os.path.join(tmp, "tiny")
    gen_checkpoint(model, "--config", "tiny", "--seed", "21", quiet=True)
    big = png(os.path.join(tmp, "big.png"), np.random.default_rng(5), 900, 1000)
    reqs = requests_of(tmp)
    got = {}
    for batch in (1, 8):
        s = Server(tmp, f"batch{batch}", "--model", model, "--contexts", "1", "--threads", "1",
                   "--queue", "32", "--batch", str(batch))
        servers.append(s)
        got[batch] = answers(s, big, reqs)
        check(s.stop() == 0, f"--batch {batch}: the server stops cleanly")
    one, batched_one = got[1]
    many, batched_many = got[8]
    check(batched_one == 0, f"without --batch no request is batched ({batched_one})")
    check(batched_many is not None and batched_many >= 2,
          f"with --batch 8 the waiting requests are taken together ({batched_many} batched)")
    print(f"--batch 8: {batched_many:.0f} of {len(reqs)} requests encoded together with others")
    for i, (a, b) in enumerate(zip(one, many)):
        check(a[0] == b[0], f"request {i} ({reqs[i][0]}): status {b[0]}, alone {a[0]}")
        check(a[1] == b[1], f"request {i}: the same X-G4V headers")
        check(a[2] == b[2], f"request {i}: the same body ({len(b[2])} bytes; alone {len(a[2])})")
    check(all(a[0] == 200 for a in one[:8]), f"the eight images are encoded: {[a[0] for a in one]}")
    check(one[8][0] >= 400 and one[9][0] >= 400, "the bad bodies are refused")


def test_serve_batch():
    with_servers("g4v_serve_batch_", run)

