#!/usr/bin/python3
"""chat_serve.py FIXTURES G4V [ROUNDS] - g4v serve --lm against g4v chat on the same files, side by
side in one run: time to first token and generation tokens/s of each, per round, then the
server's g4v_chat_* metrics (docs/CHAT_API.md §6). FIXTURES holds lm-e2b.gguf, vis-e2b and img1.png
(tests/chat/make_fixtures.py; `make chat-test` writes them to build/tests/chat/fixtures).

    /usr/bin/python3 bench/chat_serve.py build/tests/chat/fixtures build/g4v

Both use one thread; the server's first round encodes the image, later rounds read it from its
feature cache (g4v chat uses a fresh private cache each run), so compare rounds 2+ for the
prefill. The server's time to first token counts from the request's arrival (base64 decoding and
JSON parsing included); g4v chat's from the start of its turn."""
import base64
import json
import os
import re
import subprocess
import sys
import time
import urllib.request


def main():
    fxdir, g4v = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    fx = lambda n: os.path.join(fxdir, n)  # noqa: E731
    p = subprocess.Popen([g4v, "serve", "--port", "0", "--model", fx("vis-e2b"), "--lm",
                          fx("lm-e2b.gguf"), "--lm-threads", "1", "--threads", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = re.search(r":(\d+)", p.stdout.readline()).group(1)
    url = f"http://127.0.0.1:{port}"
    img = "data:image/png;base64," + base64.b64encode(open(fx("img1.png"), "rb").read()).decode()
    print("round  g4v-chat-ttft-s  g4v-chat-tok/s  serve-ttft-s  serve-tok/s  serve-wall-s")
    try:
        for k in range(rounds):
            out = subprocess.run([g4v, "chat", "--threads", "1", "--lm", fx("lm-e2b.gguf"), "--model",
                                  fx("vis-e2b"), "--json", "--image", fx("img1.png"), "-p",
                                  "Describe the image.", "--max-tokens", "32", "--temp", "0.9",
                                  "--seed", str(k)], capture_output=True, text=True, check=True)
            c = json.loads(out.stdout)
            body = {"messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": img}},
                {"type": "text", "text": "Describe the image."}]}],
                "max_tokens": 32, "temperature": 0.9, "seed": k}
            t0 = time.time()
            req = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
            a = json.load(urllib.request.urlopen(req))
            wall = time.time() - t0
            print(f"{k + 1:5d}  {c['timings']['first_token_s']:15.3f}  "
                  f"{c['tokens']['generated'] / c['timings']['generate_s']:14.1f}  "
                  f"{a['g4v']['time_to_first_token_s']:12.3f}  "
                  f"{a['usage']['completion_tokens'] / a['g4v']['generate_s']:11.1f}  {wall:12.3f}")
        m = urllib.request.urlopen(url + "/metrics").read().decode()
        print("\n".join(x for x in m.splitlines() if x.startswith("g4v_chat_") and "bucket" not in x))
    finally:
        p.terminate()
        p.wait()


if __name__ == "__main__":
    main()
