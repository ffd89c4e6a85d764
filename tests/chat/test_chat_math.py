#!/usr/bin/python3
"""test_chat_math.py (pytest --arg=FIXTURES) - the math mode in g4v chat and in g4v serve --lm's
chat slots, on the synthetic models (make_fixtures.py).

`g4v chat --math NAME` answers exactly as its alias (--precise, --int8, --int8=blocks), and two
different modes are a usage error. `g4v serve --lm --math int8-blocks` starts (its chat slots
borrow the server's vision model and say its mode: a slot that dropped the mode would be refused
by the chat session), reports the mode in /v1/info, and answers a greedy chat about an image as
`g4v chat --math int8-blocks` does (text and token counts).
"""
import base64
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from pyutil import BIN, check  # noqa: E402
from serveutil import ServeProcess, with_servers  # noqa: E402

FX = pyutil.arg(1)
PROMPT = "Describe the image."


def fx(n):
    return os.path.join(FX, n)


def chat(*args):
    return subprocess.run([BIN, "chat", "--threads", "1", "--lm", fx("lm-e2b.gguf"), "--model",
                           fx("vis-e2b"), "--image", fx("img1.png"), "-p", PROMPT, "--json",
                           "--max-tokens", "8", "--temp", "0", *args],
                          capture_output=True, text=True, timeout=600)


def answer(*args):
    r = chat(*args)
    check(r.returncode == 0, f"g4v chat {' '.join(args)}: exit 0 ({r.stderr.strip()[-300:]})")
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    return j.get("text"), j.get("tokens")


def test_chat_math():
    with_servers("g4v_chat_math_", run)


def run(tmp, servers):
    refs = {}
    for name, alias in (("precise", "--precise"), ("int8", "--int8"),
                        ("int8-blocks", "--int8=blocks")):
        refs[name] = answer("--math", name)
        check(answer(alias) == refs[name], f"g4v chat {alias}: the answer of --math {name}")
    r = chat("--int8", "--math", "precise")
    check(r.returncode == 1 and "give one" in r.stderr, f"g4v chat --int8 --math precise: usage error "
          f"({r.returncode} {r.stderr.strip()[-200:]})")

    s = ServeProcess(tmp, "serve", [BIN, "serve", "--port", "0", "--model", fx("vis-e2b"),
                                    "--lm", fx("lm-e2b.gguf"), "--lm-threads", "1", "--threads",
                                    "1", "--math", "int8-blocks"], stop_timeout=120)
    servers.append(s)
    st, _, body = s.request("GET", "/v1/info")
    check(st == 200 and json.loads(body)["mode"] == "int8-blocks", "serve --lm: /v1/info mode")
    uri = "data:image/png;base64," + base64.b64encode(open(fx("img1.png"), "rb").read()).decode()
    req = {"model": "any", "max_tokens": 8, "temperature": 0, "messages": [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": uri}},
                                     {"type": "text", "text": PROMPT}]}]}
    st, _, raw = s.request("POST", "/v1/chat/completions", req, timeout=300)
    r = json.loads(raw) if st == 200 else {}
    text, tokens = refs["int8-blocks"]
    check(st == 200 and r["choices"][0]["message"]["content"] == text and
          r["usage"]["completion_tokens"] == tokens["generated"] and
          r["usage"]["prompt_tokens"] == tokens["prompt"],
          f"serve --lm --math int8-blocks: g4v chat's answer ({st} {raw[:300]!r} vs {text!r})")
    check(s.stop() == 0, "serve --lm: SIGTERM, exit 0")
