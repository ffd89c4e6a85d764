#!/usr/bin/python3
"""test_serve_routes.py - the answers of `g4v serve`'s route table (tools/service/core/routes.c)
without --lm: every endpoint (POST /v1/encode, GET /v1/info, GET /health, GET /metrics) asked
with another method is 405 with an Allow header naming its method; an unknown path is 404 with a
text naming every endpoint and no chat one; the chat paths (and GET /, the chat page) are 404
with the hint to start the server with --lm, whatever the method; with an API key, a 405 or 404 is told only to a caller
with the key (401 before routing), /health's 405 to anyone. The same table with --lm is checked
in tests/chat/test_chat_serve.py.
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pyutil import BIN, check, gen_checkpoint  # noqa: E402
from serveutil import ServeProcess, route_table_checks, with_servers  # noqa: E402

ENDPOINTS = {"/v1/encode": "POST", "/v1/info": "GET", "/health": "GET", "/metrics": "GET"}
KEY = "routes-test-key-0123456789abcdef"


def error_of(raw):
    try:
        return json.loads(raw)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return raw[:80]


def run(tmp, servers):
    model = os.path.join(tmp, "tiny")
    gen_checkpoint(model, "--config", "tiny", "--seed", "3", quiet=True)
    s = ServeProcess(tmp, "plain", [BIN, "serve", "--model", model, "--port", "0", "--threads",
                                    "1"])
    servers.append(s)
    for ok, what in route_table_checks(s, ENDPOINTS):
        check(ok, what)
    for path in ("/v1/chat/completions", "/v1/responses", "/v1/models"):
        for m in ("GET", "POST"):
            st, h, raw = s.request(m, path, b"{}" if m == "POST" else None)
            err = error_of(raw)
            check(st == 404 and "--lm" in err and "no language model" in err,
                  f"without --lm, {m} {path}: 404 with the hint to start with --lm ({st} {err!r})")
    st, h, raw = s.request("GET", "/")
    err = error_of(raw)
    check(st == 404 and "chat page" in err and "--lm" in err and "Content-Security-Policy" not in h,
          f"without --lm, GET /: 404 saying the chat page needs --lm ({st} {err!r})")

    k = ServeProcess(tmp, "key", [BIN, "serve", "--model", model, "--port", "0", "--threads", "1",
                                  "--api-key", KEY])
    servers.append(k)
    auth = {"Authorization": "Bearer " + KEY}
    for ok, what in route_table_checks(k, ENDPOINTS, auth):
        check(ok, "with the key: " + what)
    for m, path in (("GET", "/nope"), ("GET", "/v1/encode"), ("POST", "/v1/info"),
                    ("GET", "/v1/models")):
        st, h, _ = k.request(m, path, None if m == "GET" else b"x")
        check(st == 401 and "Allow" not in h, f"without the key, {m} {path}: 401 before routing ({st})")
    st, h, _ = k.request("POST", "/health", b"x")
    check(st == 405 and h.get("Allow") == "GET", f"without the key, POST /health: 405 ({st})")
    for srv in servers:
        check(srv.stop() == 0, f"{srv.err_path}: SIGTERM, exit 0")


def test_serve_routes():
    with_servers("g4v_serve_routes_", run)
