#!/usr/bin/python3
"""chat_vision_budget.py - `g4v serve --lm --lm-slots 4`: four image conversations arriving
together, each with a new image, against one conversation alone, for two binaries in one run
(`make bench-chat-vision`; docs/SERVICE.md "Threads"): a baseline (before the chat images went
through the encode contexts and the CPU gate) and this one, default thread counts on both.

Per binary, per rep: a fresh server, one warm-up conversation, then one conversation alone, then
four sent at once; every image is a variant of IMAGE of its own (no feature-cache hit). The
first-token time is the server's (g4v.time_to_first_token_s: from the turn's start, encode and
prefill included). Printed: alone, the four sorted, their mean; and the three ratios of the
issue (57):
  first / alone     the first of the four against one alone, the same binary (target <= 1.3)
  mean / baseline   the four's mean against the baseline's (target <= 0.75)
  last / baseline   the last of the four against the baseline's last (target <= 1.0)
Medians over the reps.

usage: chat_vision_budget.py --g4v BIN --base BIN --model DIR --lm GGUF --image FILE
                             [--max-tokens 16] [--reps 1] [--json OUT]
                             [--serve-arg=ARG ...]   (both servers, e.g. --serve-arg=--lm-ctx=8192)
"""
import argparse
import base64
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


def variant(img, k):
    """IMAGE with one corner pixel changed: new bytes, the same work."""
    from PIL import Image
    im = Image.open(img).convert("RGB")
    im.putpixel((0, 0), (k % 256, (k // 256) % 256, 7))
    b = io.BytesIO()
    im.save(b, "PNG")
    return "data:image/png;base64," + base64.b64encode(b.getvalue()).decode()


class Server:
    def __init__(self, binary, a, tmp):
        self.err = open(os.path.join(tmp, os.path.basename(binary) + ".stderr"), "w")
        self.p = subprocess.Popen([binary, "serve", "--port", "0", "--model", a.model, "--lm",
                                   a.lm, "--lm-slots", "4", *a.serve_arg],
                                  stdout=subprocess.PIPE,
                                  stderr=self.err, text=True)
        line = self.p.stdout.readline()
        m = re.search(r"http://[^ ]*:(\d+)", line)
        if not m:
            raise SystemExit(f"{binary}: the server did not start ({self.err.name})")
        self.port = int(m.group(1))

    def ttft(self, uri, max_tokens):
        body = {"messages": [{"role": "user", "content": [
            {"type": "text", "text": "Describe the image."},
            {"type": "image_url", "image_url": {"url": uri}}]}],
            "max_tokens": max_tokens, "temperature": 0}
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1200)
        c.request("POST", "/v1/chat/completions", json.dumps(body),
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        d = json.loads(r.read())
        c.close()
        if r.status != 200 or d["g4v"]["images_encoded"] != 1:
            raise SystemExit(f"unexpected answer {r.status}: {str(d)[:300]}")
        return d["g4v"]["time_to_first_token_s"]

    def stop(self):
        self.p.terminate()
        self.p.wait()
        self.err.close()


def measure(binary, a, tmp, seq):
    s = Server(binary, a, tmp)
    try:
        s.ttft(variant(a.image, next(seq)), a.max_tokens)  # warm-up: pages, first calls
        alone = s.ttft(variant(a.image, next(seq)), a.max_tokens)
        uris = [variant(a.image, next(seq)) for _ in range(4)]
        out = [None] * 4

        def one(k):
            out[k] = s.ttft(uris[k], a.max_tokens)
        ts = [threading.Thread(target=one, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return alone, sorted(out)
    finally:
        s.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--g4v", required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--lm", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("--serve-arg", action="append", default=[],
                    help="one more argument of g4v serve, for both servers (repeat it)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="g4v_chat_vision_")
    seq = iter(range(1, 1 << 20))
    runs = {"base": [], "new": []}
    for rep in range(a.reps):  # the two take turns, so that a change in load hits both
        for name, binary in (("base", a.base), ("new", a.g4v)):
            alone, four = measure(binary, a, tmp, seq)
            runs[name].append({"alone": alone, "four": four})
            print(f"rep {rep + 1} {name:4}: alone {alone:6.2f} s   four at once "
                  + " ".join(f"{t:6.2f}" for t in four) + f"   mean {statistics.mean(four):6.2f}",
                  flush=True)

    def med(name, f):
        return statistics.median(f(r) for r in runs[name])
    b_mean = med("base", lambda r: statistics.mean(r["four"]))
    b_last = med("base", lambda r: r["four"][-1])
    b_first = med("base", lambda r: r["four"][0] / r["alone"])
    ratios = {
        "first_over_alone": med("new", lambda r: r["four"][0] / r["alone"]),
        "mean_over_base": med("new", lambda r: statistics.mean(r["four"])) / b_mean,
        "last_over_base": med("new", lambda r: r["four"][-1]) / b_last,
    }
    print(f"baseline: first/alone {b_first:.2f}, mean {b_mean:.2f} s, last {b_last:.2f} s")
    print(f"first / alone   {ratios['first_over_alone']:.2f}  (target <= 1.3)")
    print(f"mean / baseline {ratios['mean_over_base']:.2f}  (target <= 0.75)")
    print(f"last / baseline {ratios['last_over_base']:.2f}  (target <= 1.0)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"runs": runs, "ratios": ratios}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
