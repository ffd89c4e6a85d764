#!/usr/bin/python3
"""test_serve_chat.py (pytest --arg=FIXTURES) - `g4v serve --lm` with real clients: the official
OpenAI client for Node (npm `openai`, openai_node.py) and curl, against the synthetic Gemma 4
models of tests/chat/make_fixtures.py, behind an API key.

openai-node: models.list; chat.completions.create with an image as a data: URI, greedy and
seeded sampling, the same answer and token counts as `g4v chat` for the same seed, streaming and
not; a stream the client aborts after its first chunk (AbortController), then the same request
answered in full; a wrong key is AuthenticationError (401) on every call. curl: the same chat as
JSON and as server-sent events ending with `data: [DONE]`; 401 without the key; a body over
--max-body-bytes is 413 naming the flag; the server keeps serving throughout and exits 0.
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import openai_node  # noqa: E402
import pyutil  # noqa: E402
from pyutil import BIN, check  # noqa: E402
from test_serve_auth import KEY, Server, curl  # noqa: E402

FX = pyutil.arg(1)
PROMPT = "Describe the image."
MAX_TOKENS = 12
BODY_LIMIT = 4 << 20


def fx(n):
    return os.path.join(FX, n)


def g4v_chat(image, temp, seed, top_p=None):
    """`g4v chat --json`'s answer for one image and PROMPT: the reference."""
    args = [BIN, "chat", "--threads", "1", "--lm", fx("lm-e2b.gguf"), "--model", fx("vis-e2b"),
            "--image", image, "-p", PROMPT, "--max-tokens", str(MAX_TOKENS), "--json",
            "--temp", str(temp), "--seed", str(seed)]
    if top_p is not None:
        args += ["--top-p", str(top_p)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"g4v chat: {r.stderr[-500:]}"
    return json.loads(r.stdout)


def request(model, image, temp, seed, top_p=None):
    uri = "data:image/png;base64," + base64.b64encode(open(image, "rb").read()).decode()
    req = {"model": model, "max_tokens": MAX_TOKENS, "temperature": temp, "seed": seed,
           "messages": [{"role": "user", "content": [
               {"type": "image_url", "image_url": {"url": uri}},
               {"type": "text", "text": PROMPT}]}]}
    if top_p is not None:
        req["top_p"] = top_p
    return req


# One thread for the language model, as g4v_chat: ggml's sums, and so a sampled answer, may
# change with the thread count. --no-prompt-reuse: every request decodes its whole prompt, as
# g4v chat does (with reuse, a repeated request has its last token decoded alone: logits close to,
# not bit-identical with, a fresh decode's, which a sampled answer may show; CHAT.md §7).
def test_serve_chat():
    openai_node.node_path()  # installs the client, or skips when npm cannot be reached
    r = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True)
    assert "--lm" in r.stdout, "g4v serve --help names no --lm: this g4v serves no chat"
    tmp = tempfile.mkdtemp(prefix="g4v_serve_chat_")
    s = None
    try:
        s = Server(tmp, "chat", "--model", fx("vis-e2b"), "--lm", fx("lm-e2b.gguf"), "--threads", "1",
                   "--lm-threads", "1", "--api-key", KEY, "--max-body-bytes", str(BODY_LIMIT),
                   "--no-prompt-reuse")
        run(s, tmp)
        check(s.stop() == 0, "SIGTERM: exit 0")
    finally:
        if s:
            s.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def run(s, tmp):
    node = {"url": s.url, "key": KEY}
    img = fx("img1.png")

    # -- models, and the key -------------------------------------------------------------------
    out = openai_node.call({**node, "op": "models"})
    models = out[0].get("models", [])
    check(len(models) >= 1 and all(m.get("object") == "model" and m.get("id") for m in models),
          f"openai-node models.list: the served model ({str(out)[:200]})")
    model = models[0]["id"] if models else "gemma-4"
    bad = {**node, "key": KEY[:-1] + "x"}
    for op in ("models", "chat", "stream"):
        out = openai_node.call({**bad, "op": op, "request": request(model, img, 0, 1)})
        check(out and out[0].get("error") == "AuthenticationError" and out[0].get("status") == 401,
              f"openai-node {op} with a wrong key: AuthenticationError 401 ({str(out)[:160]})")

    # -- the answers of g4v chat, streaming and not ----------------------------------------------
    for what, temp, seed, top_p in (("greedy", 0, 1, None), ("sampled (temp 0.9, top_p 0.9, seed 7)", 0.9, 7, 0.9)):
        ref = g4v_chat(img, temp, seed, top_p)
        req = request(model, img, temp, seed, top_p)
        out = openai_node.call({**node, "op": "chat", "request": req})
        j = out[0]
        check(j.get("text") == ref["text"], f"{what}, not streamed: g4v chat's answer ({j.get('text')!r} vs {ref['text']!r})")
        u = j.get("usage") or {}
        check(j.get("object") == "chat.completion" and u.get("prompt_tokens") == ref["tokens"]["prompt"]
              and u.get("completion_tokens") == ref["tokens"]["generated"]
              and u.get("total_tokens") == u.get("prompt_tokens", 0) + u.get("completion_tokens", 0),
              f"{what}: usage as g4v chat counts ({u} vs {ref['tokens']})")
        out = openai_node.call({**node, "op": "stream", "request": req})
        j = out[0]
        check(j.get("text") == ref["text"] and j.get("chunks", 0) >= 2 and j.get("finish_reason") in ("stop", "length"),
              f"{what}, streamed: g4v chat's answer in {j.get('chunks')} chunks, finish {j.get('finish_reason')} "
              f"({j.get('text')!r})")
    greedy = g4v_chat(img, 0, 1)["text"]

    # -- a client that hangs up mid-stream, then the same request in full ------------------------
    out = openai_node.call({**node, "op": "abort", "after": 1, "request": request(model, img, 0, 1)})
    check(len(out) == 2 and out[0].get("aborted") and out[1].get("text") == greedy,
          f"openai-node aborts a stream after one chunk; the next request gets the whole answer ({str(out)[:200]})")
    st, _, _ = s.request("GET", "/health")
    check(st == 200, "after the abort: healthy")

    # -- curl ------------------------------------------------------------------------------------
    body = os.path.join(tmp, "req.json")
    with open(body, "w") as f:
        json.dump(request(model, img, 0, 1), f)
    auth = ["-H", "Authorization: Bearer " + KEY, "-H", "Content-Type: application/json"]
    code, text = curl(*auth, "--data-binary", "@" + body, s.url + "/v1/chat/completions")
    try:
        j = json.loads(text)
        ans = j["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        ans = None
    check(code == 200 and ans == greedy, f"curl: the chat as JSON ({code} {text[:160]!r})")
    with open(body, "w") as f:
        json.dump({**request(model, img, 0, 1), "stream": True}, f)
    code, text = curl("-N", *auth, "--data-binary", "@" + body, s.url + "/v1/chat/completions")
    events = [ln[len("data: "):] for ln in text.splitlines() if ln.startswith("data: ")]
    try:
        got = "".join(json.loads(e)["choices"][0]["delta"].get("content") or ""
                      for e in events[:-1] if json.loads(e).get("choices"))
    except (ValueError, KeyError, IndexError):
        got = None
    check(code == 200 and events and events[-1] == "[DONE]" and got == greedy,
          f"curl -N: server-sent events with the answer, ending data: [DONE] ({code} {len(events)} events)")
    code, text = curl("-H", "Content-Type: application/json", "--data-binary", "@" + body,
                      s.url + "/v1/chat/completions")
    check(code == 401, f"curl without the key: 401 ({code})")
    big = os.path.join(tmp, "big.json")
    with open(big, "w") as f:
        f.write('{"model": "x", "messages": [], "pad": "' + "a" * BODY_LIMIT + '"}')
    code, text = curl(*auth, "--data-binary", "@" + big, s.url + "/v1/chat/completions")
    check(code == 413 and "--max-body-bytes" in text and str(BODY_LIMIT) in text,
          f"a body over --max-body-bytes: 413 naming the limit and the flag ({code} {text[:200]!r})")
    time.sleep(0.2)
    st, _, _ = s.request("GET", "/health")
    check(st == 200, "after the 413: healthy")
