#!/usr/bin/python3
"""test_chat_precheck.py (pytest --arg=FIXTURES) - a chat request that no slot could serve is
answered at once, before it waits (tools/service/chat/chat_precheck.c chat_precheck,
docs/CHAT_API.md §3): with the only slot generating a long answer and the queue full, a bad JSON
schema, bad tools, a context overflow of the text alone, a bad budget and too many messages each
get their 400 in well under a second, not a 429 and not after the long answer; the long requests
are unharmed and a good request gets its 429 (the queue is full)."""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pyutil import check  # noqa: E402
from serveutil import with_servers  # noqa: E402
from test_chat_serve import Server, data_uri, fx, user  # noqa: E402


def test_chat_precheck():
    with_servers("g4v_chat_precheck_", run)


def run(tmp, servers):
    s = Server(tmp, "pre", "--lm-slots", "1", "--max-queue", "1", "--lm-ctx", "2048",
               "--no-prompt-reuse", "--max-messages", "8")
    servers.append(s)
    uri = data_uri(fx("img1.png"))
    long_body = {"messages": [user("Tell a long story.", uri)], "max_tokens": 400,
                 "temperature": 0}
    done = {}

    def long_request(k):
        st, _, r = s.chat(long_body)
        done[k] = (st, r.get("usage", {}).get("completion_tokens"))

    busy = threading.Thread(target=long_request, args=("a",))
    busy.start()
    check(s.wait_metric("g4v_chat_slots_busy", 1), "the only slot is busy")
    queued = threading.Thread(target=long_request, args=("b",))
    queued.start()
    check(s.wait_metric("g4v_chat_queue_depth", 1), "the queue (one place) is full")

    def refused(body, code, what):
        t0 = time.time()
        st, _, r = s.chat({"messages": [user("x")], "max_tokens": 5, **body})
        dt = time.time() - t0
        got = r.get("error", {}).get("code")
        check(st == 400 and got == code and dt < 1.0,
              f"{what}: 400 {code} at once, though every slot is busy ({st} {got} "
              f"{dt:.2f} s: {r.get('error', {}).get('message', '')[:120]!r})")

    def rf(schema):
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": "x", "schema": schema}}}

    refused(rf({"type": "object", "patternProperties": {"a": {"type": "string"}}}),
            "invalid_response_format", "an unsupported JSON schema keyword")
    refused(rf({"$ref": "#/$defs/missing"}), "invalid_response_format", "a $ref that does not "
            "resolve")
    refused({"tools": [{"type": "function", "function": {"name": "get", "parameters": {
        "type": "object", "patternProperties": {"a": {}}}}}]}, "invalid_tools",
            "a tool whose parameters the grammar cannot take")
    words = " ".join(f"word{i}" for i in range(3000))
    refused({"messages": [user(words)]}, "context_length_exceeded",
            "a text longer than the context (--lm-ctx 2048)")
    refused({"messages": [user("x", uri)], "g4v": {"tokens": 123}}, "invalid_budget",
            "a budget that is none of 70/140/280/560/1120")
    refused({"messages": [user(f"m{i}") if i % 2 == 0 else {"role": "assistant", "content": "a"}
                          for i in range(9)]}, "too_many_messages", "9 messages (--max-messages 8)")
    # a request that can be served waits, and the full queue says so
    st, h, r = s.chat({"messages": [user("A short question.")], "max_tokens": 5})
    check(st == 429, f"a good request with the queue full: 429 ({st} {json.dumps(r)[:120]})")
    busy.join(600)
    queued.join(600)
    check(done.get("a", (0,))[0] == 200 and done.get("b", (0,))[0] == 200,
          f"the long requests were answered ({done})")
