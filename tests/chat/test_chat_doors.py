#!/usr/bin/python3
"""test_chat_doors.py (pytest --arg=FIXTURES) - the doors of `g4v serve --lm`
(tools/service/core/doors.c, docs/SERVICE.md "Security", "Browsers") against real web pages of
other origins in Chromium, through tests/chat/webui/doors_page.cjs (puppeteer-core, as
test_chat_webui.py), and with raw requests on the chat endpoints.

It starts two servers on the synthetic models (make_fixtures.py): G, keyless (the default), and A,
with --api-key KEY --allowed-origin OTHER, where OTHER is a second site this test serves on
another port of 127.0.0.1. In the browser:
- a page of OTHER makes the attack of issue 49 on G (a no-cors text/plain POST of a chat): refused
  403, no chat answered; it cannot read /v1/models (403, the fetch fails), its JSON POST's
  preflight is refused, three form POSTs (text/plain, urlencoded, multipart) are refused;
- a DNS-rebinding page (evil.example mapped to 127.0.0.1 in the browser) gets 421 for the page,
  for /v1/models and for its own fetch;
- the chat page itself, opened as http://localhost:PORT/, still chats;
- A: OTHER's page reads /v1/models with the key, gets a readable 401 without it, chats streamed
  and not; the same server under another origin (localhost) is refused even with the key.
Raw: the chat endpoint refuses text/plain, urlencoded, multipart and untyped bodies with 415 on
both servers (on A with the key; without it the 401 comes first), takes application/json (with a
charset); G's /v1/models names the vision model without its directory,
A's (the caller holds the key) with it.
"""
import http.server
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from browser_session import CHROMIUM, LmServer, need_browser, run_session  # noqa: E402
from pyutil import check  # noqa: E402
from serveutil import raw_request, with_servers  # noqa: E402

FX = pyutil.arg(1)
KEY = "doors-test-key-0123456789abcdef"
CHECKS = 13  # the checks doors_page.cjs makes when it runs to the end


def fx(n):
    return os.path.join(FX, n)


class Server(LmServer):
    def __init__(self, tmp, name, *args):
        super().__init__(tmp, name, FX, *args)


class OtherSite(http.server.BaseHTTPRequestHandler):
    """The second origin: one page, no script of its own (the session runs its attempts in it)."""
    def do_GET(self):
        body = b"<!doctype html><meta charset=utf-8><title>another site</title><p>another site"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def raw_post(port, body, ctype, key=None):
    head = [f"POST /v1/chat/completions HTTP/1.1", f"Host: 127.0.0.1:{port}",
            f"Content-Length: {len(body)}", "Connection: close"]
    if ctype is not None:
        head.append(f"Content-Type: {ctype}")
    if key:
        head.append(f"Authorization: Bearer {key}")
    st, _, out = raw_request(port, "\r\n".join(head).encode(), body, timeout=120)
    return st, out


def test_chat_doors():
    node_path = need_browser()
    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), OtherSite)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    other = f"http://127.0.0.1:{site.server_port}"

    def run(tmp, servers):
        servers.append(Server(tmp, "g", "--lm-slots", "1"))
        servers.append(Server(tmp, "a", "--api-key", KEY, "--allowed-origin", other))
        g, a = servers
        body = json.dumps({"messages": [{"role": "user", "content": "Hi."}], "max_tokens": 2,
                           "seed": 1}).encode()
        for srv, key in ((g, None), (a, KEY)):
            for ct in (None, "text/plain", "text/plain;charset=UTF-8",
                       "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
                st, out = raw_post(srv.port, body, ct, key)
                check(st == 415 and b"application/json" in out,
                      f"{srv.err_path}: a chat POSTed as {ct!r}: 415 ({st} {out[:100]!r})")
            st, out = raw_post(srv.port, body, "application/json; charset=utf-8", key)
            check(st == 200, f"{srv.err_path}: application/json; charset=utf-8: 200 ({st})")
        st, out = raw_post(a.port, body, "text/plain")
        check(st == 401, f"without the key a text/plain chat is 401 first ({st})")
        st, h, raw = g.request("GET", "/v1/models")
        vision = json.loads(raw)["data"][0]["g4v"]["vision"]
        check(st == 200 and vision == "vis-e2b", f"keyless /v1/models: the vision model without "
              f"its directory ({vision!r})")
        st, h, raw = a.request("GET", "/v1/models", None, {"Authorization": "Bearer " + KEY})
        vision = json.loads(raw)["data"][0]["g4v"]["vision"]
        check(st == 200 and vision == fx("vis-e2b"), f"with the key: its path ({vision!r})")

        spec = {"chromium": CHROMIUM, "g": g.url, "a": a.url, "key": KEY, "other": other,
                "other2": f"http://localhost:{site.server_port}", "gport": g.port}
        run_session("doors_page.cjs", spec, node_path, 300, CHECKS)

    try:
        with_servers("g4v-doors-", run)
    finally:
        site.shutdown()
