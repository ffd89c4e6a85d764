#!/usr/bin/python3
"""test_serve_openai.py - the official OpenAI client for Node (npm `openai`, openai_node.py)
against the API key of `g4v serve` (an encode server; the chat endpoints are tested with the
same client in test_serve_chat.py): the client's Bearer key is accepted on GET /v1/info, a wrong
key is the client's AuthenticationError (401), and the server goes on serving."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import openai_node  # noqa: E402
from pyutil import check, g4v, gen_checkpoint  # noqa: E402
from test_serve_auth import KEY, Server  # noqa: E402


def test_serve_openai_auth():
    openai_node.node_path()  # installs the client, or skips when npm cannot be reached
    tmp = tempfile.mkdtemp(prefix="g4v_serve_openai_")
    s = None
    try:
        model = os.path.join(tmp, "tiny")
        gen_checkpoint(model, "--config", "tiny", "--seed", "4", quiet=True)
        fp = g4v("info", "--model", model, "--json").stdout
        s = Server(tmp, "key", "--model", model, "--api-key", KEY)
        r = openai_node.call({"op": "info", "url": s.url, "key": KEY})
        check(len(r) == 1 and "info" in r[0] and r[0]["info"]["fingerprint"] in fp,
              f"openai-node with the key: GET /v1/info answered ({str(r)[:200]})")
        for what, key in (("a wrong key", KEY[:-1] + "x"), ("a prefix of the key", KEY[:8])):
            r = openai_node.call({"op": "info", "url": s.url, "key": key})
            check(len(r) == 1 and r[0].get("error") == "AuthenticationError" and r[0]["status"] == 401,
                  f"openai-node with {what}: AuthenticationError, 401 ({str(r)[:200]})")
        st, _, body = s.request("GET", "/health")
        check(st == 200, "still serving")
        check(s.stop() == 0, "SIGTERM: exit 0")
    finally:
        if s:
            s.stop()
        shutil.rmtree(tmp, ignore_errors=True)
