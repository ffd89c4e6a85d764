#!/usr/bin/python3
"""test_chat_webui.py (pytest --arg=FIXTURES) - the chat page of `g4v serve --lm`
(tools/service/webui/page/, docs/WEBUI.md) in a real browser: Debian's chromium, headless, driven
by puppeteer-core (npm, pinned in tests/service/node/package-lock.json, installed outside the
repository by scripts/install-node-client.sh) through tests/chat/webui/chat_page.cjs.

This file starts two servers on the synthetic models (make_fixtures.py):
- main: --lm-slots 1 --max-queue 0 (Stop must free the one slot; a second client gets 429);
- auth: --api-key KEY --max-body-bytes 4096 (the page asks for the key; an image is a 413);
makes the reference answer with a non-streamed POST of the request the page must send, and runs
the browser session, which reports one check per line. What the session checks: the page's CSP
and headers, no console errors or CSP violations; an image chosen with the file input and a
question give a streamed answer equal to the reference, with its figures; the second turn
replays the conversation and reuses the cache; paste and drop; the per-image budget reaching the
server; a video; Stop (Escape) freeing the slot; New chat; Enter / Shift+Enter; thinking on;
401 with the key form, a non-ASCII key refused by the form (naming the character), a wrong key
refused after a check against /v1/models, the key in sessionStorage only; 413; 429; a bad image; crafted answers
(request interception) whose markup must stay text (raw HTML, javascript:/data:/vbscript: links,
autolinks, images, references); Markdown drawn by markdown-it: the degenerate answers of issue
49 (a heading of 3000 spaces, 40000 nested ** markers, 30000 unclosed brackets) and a 2 MB answer
each without a main-thread task of 100 ms or more (the Long Tasks API; the numbers are printed),
links (http(s) only, noopener noreferrer, the host shown), a table, a code block and its copy
button, bidi controls shown as marks in dir=auto blocks, a selection kept while a later block
streams; error forms, a cut stream, a network error; accessible names, Tab order, 390 px without
sideways scrolling.

Then keep_page.cjs, on the same main server (--max-images 4): the sampling settings; a reload
mid-answer keeping the conversation (IndexedDB); a thumbnail seen large; Continue, Copy,
Regenerate, Edit; the list of conversations (open, rename, delete, also while streaming);
export and import (an imported file's markup stays text); the limits checked before sending
naming the file, the context meter; progress of a big body; errors once, in the page's words;
code coloured by Prism. G4V_WEBUI_ONLY=chat or keep runs one of the two sessions.

G4V_WEBUI_SHOTS=DIR saves screenshots of the main states into DIR (make webui-shots).
Without chromium the test fails, saying to run scripts/install-deps.sh --test; without the npm
registry (puppeteer-core cannot be installed) it skips (exit 77).
"""
import base64
import json
import os
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from browser_session import CHROMIUM, LmServer, need_browser, run_session  # noqa: E402
from serveutil import with_servers  # noqa: E402

FX = pyutil.arg(1)
KEY = "webui-test-key-0123456789"
QUESTION = "What is in this picture?"
CHECKS = 55  # the checks chat_page.cjs makes when it runs to the end
KEEP_CHECKS = 29  # and keep_page.cjs


def fx(n):
    return os.path.join(FX, n)


class Server(LmServer):
    def __init__(self, tmp, name, *args):
        super().__init__(tmp, name, FX, *args)

    def chat(self, body):
        st, _, raw = self.request("POST", "/v1/chat/completions", body, None, 300)
        return st, json.loads(raw)


def test_chat_webui():
    node_path = need_browser()
    shots = os.environ.get("G4V_WEBUI_SHOTS", "")
    if shots:
        os.makedirs(shots, exist_ok=True)

    def run(tmp, servers):
        servers.append(Server(tmp, "main", "--lm-slots", "1", "--max-queue", "0",
                              "--max-images", "4"))
        servers.append(Server(tmp, "auth", "--api-key", KEY, "--max-body-bytes", "4096"))
        main, auth = servers
        # the request the page must send for: img1.png chosen (budget 280 by default), the
        # question, temperature 1, seed 2, max tokens 12 (the synthetic model's greedy answer is
        # an empty string: a seed gives text to compare)
        img = "data:image/png;base64," + base64.b64encode(open(fx("img1.png"), "rb").read()).decode()
        body = {"messages": [{"role": "user", "content": [
                    {"type": "image_url", "image_url": {"url": img}, "g4v": {"tokens": 280}},
                    {"type": "text", "text": QUESTION}]}],
                "temperature": 1, "seed": 2, "max_tokens": 12}
        # asked twice: the answer depends on how much of the prompt the slot reuses (the rest
        # is decoded in one batch, whose sums round differently), and the page's request will
        # find the slot as the second one left it: the prompt kept but its last token
        for _ in range(2):
            st, r = main.chat(body)
            assert st == 200, f"the reference answer: {st} {r}"
        spec = {"chromium": CHROMIUM, "main": main.url, "auth": auth.url, "key": KEY, "fx": FX,
                "shots": shots, "question": QUESTION,
                "ref": {"body": body, "content": r["choices"][0]["message"]["content"],
                        "usage": r["usage"], "g4v": r["g4v"]}}
        only = os.environ.get("G4V_WEBUI_ONLY", "")  # one session, while working on it
        if only in ("", "chat"):
            run_session("chat_page.cjs", spec, node_path, 480, CHECKS)
        if only in ("", "keep"):
            run_session("keep_page.cjs", spec, node_path, 480, KEEP_CHECKS)
        if shots:
            print(f"screenshots in {shots}: {sorted(os.listdir(shots))}")

    with_servers("g4v-webui-", run)
