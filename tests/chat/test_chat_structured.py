#!/usr/bin/python3
"""test_chat_structured.py (pytest --arg=FIXTURES) - answers a program can use from
`g4v serve --lm` (docs/CHAT_API.md "Structured output", "Tools") on the synthetic models
(make_fixtures.py), whose random weights write no JSON of their own:

- response_format json_schema (an invoice extraction over an image) and json_object: every
  answer, streamed and not, parses and validates, for several seeds; the same request without
  response_format does not (the constraint is what makes it valid); the streamed text equals
  the non-streamed one for the same seed;
- the real clients: Python `openai` (chat.completions.parse with a pydantic model, and its
  stream helper; tools through pydantic_function_tool with the round trip: the call and the
  tool's result sent back) and Node `openai` with zod (zodResponseFormat, zodFunction with
  tool_choice "required", streamed tool-call deltas equal to the non-streamed calls);
- tools: tool_choice required / a named function / parallel_tool_calls false, finish_reason
  "tool_calls", arguments that validate against the declared parameters; the tool's result
  rendered through the model's template into the next prompt;
- refusals, each a 400 naming what is wrong, fast, with the server serving on: unsupported
  schema keywords, a deeply nested schema, a huge enum, a $ref that never consumes a token,
  malformed tools and tool_choice; tools without a template that renders them;
- g4v chat --json-schema FILE and --grammar FILE.
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "service"))
import pyutil  # noqa: E402
from pyutil import check  # noqa: E402
from serveutil import ServeProcess, sse_events  # noqa: E402

G4V = os.environ.get("G4V_BIN", "g4v")
SRC = os.environ.get("G4V_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
CLIENTS = os.path.join(SRC, "tests", "chat", "clients")
FX = pyutil.arg(1)
SEEDS = [1, 2, 3]


def fx(n):
    return os.path.join(FX, n)


def data_uri(path):
    return "data:image/png;base64," + base64.b64encode(open(path, "rb").read()).decode()


class Server(ServeProcess):
    def __init__(self, tmp, name, *args):
        super().__init__(tmp, name, [G4V, "serve", "--port", "0", "--model", fx("vis-e2b"),
                                     "--lm", fx("lm-e2b.gguf"), "--lm-threads", "2",
                                     "--threads", "1", *args], stop_timeout=120)

    def chat(self, body, timeout=600):
        t0 = time.monotonic()
        st, _, raw = self.request("POST", "/v1/chat/completions", body, None, timeout)
        try:
            return st, json.loads(raw), time.monotonic() - t0
        except ValueError:
            return st, {"raw": raw}, time.monotonic() - t0

    def stream(self, body):
        c = self.conn(600)
        c.request("POST", "/v1/chat/completions", body=json.dumps({**body, "stream": True}),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            return r.status, [json.loads(r.read())]
        events = [e for e in sse_events(r) if e != "[DONE]"]
        c.close()
        return 200, events


# ---- a JSON Schema check of our own for the subset the tests use (Debian's python3 has no
# jsonschema; the clients validate with pydantic and zod on their side) ----
def valid(v, s, defs=None):
    defs = defs if defs is not None else s.get("$defs", {})
    if "$ref" in s:
        return valid(v, defs[s["$ref"].split("/")[-1]], defs)
    if "anyOf" in s:
        return any(valid(v, x, defs) for x in s["anyOf"])
    if "enum" in s and v not in s["enum"]:
        return False
    t = s.get("type")
    if t == "object":
        if not isinstance(v, dict) or any(k not in v for k in s.get("required", [])):
            return False
        props = s.get("properties", {})
        if s.get("additionalProperties") is False and any(k not in props for k in v):
            return False
        return all(valid(v[k], props[k], defs) for k in v if k in props)
    if t == "array":
        return (isinstance(v, list) and len(v) <= s.get("maxItems", 1 << 30) and
                len(v) >= s.get("minItems", 0) and all(valid(x, s["items"], defs) for x in v))
    if t == "string":
        return isinstance(v, str) and len(v) <= s.get("maxLength", 1 << 30)
    if t == "integer":
        return (isinstance(v, int) and not isinstance(v, bool) and
                s.get("minimum", -1 << 62) <= v <= s.get("maximum", 1 << 62))
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "boolean":
        return isinstance(v, bool)
    return t is None


def parses_valid(text, schema):
    try:
        v = json.loads(text)
    except ValueError:
        return False
    return valid(v, schema)


INVOICE = {
    "type": "object",
    "properties": {
        "vendor": {"type": "string", "maxLength": 24},
        "currency": {"type": "string", "enum": ["EUR", "USD", "GBP"]},
        "total": {"type": "integer", "minimum": 0, "maximum": 99999},
        "paid": {"type": "boolean"},
        "lines": {"type": "array", "maxItems": 3, "items": {"$ref": "#/$defs/line"}},
        "address": {"type": "object", "additionalProperties": False,
                    "properties": {"city": {"type": "string", "maxLength": 16},
                                   "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                    "required": ["city", "zip"]},
    },
    "required": ["vendor", "currency", "total", "paid", "lines", "address"],
    "additionalProperties": False,
    "$defs": {"line": {"type": "object", "additionalProperties": False,
                       "properties": {"sku": {"type": "string", "maxLength": 10},
                                      "qty": {"type": "integer", "minimum": 1, "maximum": 9}},
                       "required": ["sku", "qty"]}},
}

# Tool parameters without free-form strings: the synthetic model's random weights would never
# close a string (Gemma's <|"|> is one token in 262,144), and the tool-call grammar bounds string
# lengths only through enums (chat_tool_call.h); a real model closes its strings.
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather at a place",
    "parameters": {"type": "object", "additionalProperties": False,
                   "properties": {"city": {"type": "string",
                                           "enum": ["Paris", "Oslo", "Lima", "Kyoto"]},
                                  "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                                  "days": {"type": "integer", "minimum": 1, "maximum": 7}},
                   "required": ["city", "unit", "days"]}}}
CLOCK = {"type": "function", "function": {
    "name": "get_time", "description": "The time in a time zone",
    "parameters": {"type": "object", "additionalProperties": False,
                   "properties": {"zone": {"type": "string", "enum": ["UTC", "CET", "PST"]}},
                   "required": ["zone"]}}}


def user(text, uri):
    return {"role": "user", "content": [{"type": "image_url", "image_url": {"url": uri}},
                                        {"type": "text", "text": text}]}


def stream_text(events):
    return "".join(e["choices"][0]["delta"].get("content") or "" for e in events
                   if e.get("choices"))


def stream_calls(events):
    calls = {}
    for e in events:
        for ch in e.get("choices", []):
            for t in ch["delta"].get("tool_calls") or []:
                c = calls.setdefault(t["index"], {"name": "", "arguments": ""})
                c["name"] += t.get("function", {}).get("name") or ""
                c["arguments"] += t.get("function", {}).get("arguments") or ""
    return [calls[k] for k in sorted(calls)]


def finish_of(events):
    f = [ch.get("finish_reason") for e in events for ch in e.get("choices", [])]
    return [x for x in f if x][-1] if any(f) else None


def run_client(cmd, spec, env=None):
    r = subprocess.run([*cmd, json.dumps(spec)], capture_output=True, text=True, timeout=900,
                       env=env)
    check(r.returncode == 0, f"{os.path.basename(cmd[-1])} exits 0 ({r.stderr.strip()[-400:]})")
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def py_client():
    r = subprocess.run([os.path.join(SRC, "scripts", "install-py-client.sh")],
                       capture_output=True, text=True, timeout=900)
    if r.returncode == 75:
        pytest.skip("PyPI cannot be reached: the OpenAI Python client cannot be installed")
    check(r.returncode == 0, f"install-py-client.sh exits 0 ({r.stderr[-300:]})")
    return r.stdout.strip().splitlines()[-1]


def node_client_env():
    import openai_node  # tests/service/openai_node.py: installs the pinned Node client
    return dict(os.environ, NODE_PATH=openai_node.node_path())


def test_structured_and_tools():
    tmp = tempfile.mkdtemp(prefix="g4v_structured_")
    uri = data_uri(fx("img1.png"))
    s = Server(tmp, "main", "--max-queue", "8")
    try:
        structured(s, uri)
        tools(s, uri)
        refusals(s, uri)
        clients(s, uri)
    finally:
        s.stop()
    builtin_refuses_tools(tmp, uri)
    cli(tmp)
    pyutil.finish("chat_structured")


def structured(s, uri):
    rf = {"type": "json_schema", "json_schema": {"name": "invoice", "schema": INVOICE,
                                                 "strict": True}}
    for seed in SEEDS:
        body = {"messages": [user("Read this invoice.", uri)], "seed": seed,
                "max_tokens": 600, "response_format": rf}
        st, r, dt = s.chat(body)
        check(st == 200, f"json_schema seed {seed}: 200 ({r.get('error')})")
        text = r["choices"][0]["message"]["content"]
        check(r["choices"][0]["finish_reason"] == "stop" and parses_valid(text, INVOICE),
              f"json_schema seed {seed}: the answer parses and validates ({dt:.1f} s, "
              f"{r['usage']['completion_tokens']} tokens): {text[:160]!r}")
        st, ev = s.stream(body)
        check(st == 200 and stream_text(ev) == text and finish_of(ev) == "stop",
              f"json_schema seed {seed}: the stream's text equals the answer")
    # the control: without the constraint the synthetic model writes no valid invoice
    free = [s.chat({"messages": [user("Read this invoice.", uri)], "seed": seed,
                    "max_tokens": 60})[1]["choices"][0]["message"]["content"] for seed in SEEDS]
    check(not any(parses_valid(t, INVOICE) for t in free),
          "without response_format the same requests give no valid JSON (the grammar is what "
          "makes the answers valid)")
    for seed in SEEDS[:2]:
        st, r, _ = s.chat({"messages": [user("Describe as JSON.", uri)], "seed": seed,
                           "max_tokens": 400, "response_format": {"type": "json_object"}})
        text = r["choices"][0]["message"]["content"] if st == 200 else ""
        ok = False
        try:
            ok = isinstance(json.loads(text), dict)
        except ValueError:
            pass
        check(st == 200 and ok, f"json_object seed {seed}: a JSON object ({text[:80]!r})")
    # thinking on: the thought is free, the answer after it constrained
    st, r, _ = s.chat({"messages": [user("Read this invoice.", uri)], "seed": 4,
                       "max_tokens": 700, "response_format": rf, "reasoning_effort": "high"})
    m = r["choices"][0]["message"] if st == 200 else {}
    check(st == 200 and parses_valid(m.get("content", ""), INVOICE),
          "json_schema with thinking on: the answer (after any thought) validates")


def tools(s, uri):
    base = {"messages": [user("What is the weather where this was taken?", uri)],
            "max_tokens": 300, "tools": [WEATHER, CLOCK]}
    decl = {"get_weather": WEATHER["function"]["parameters"],
            "get_time": CLOCK["function"]["parameters"]}
    for seed in SEEDS:
        body = {**base, "seed": seed, "tool_choice": "required"}
        st, r, dt = s.chat(body)
        ch = r["choices"][0] if st == 200 else {}
        calls = ch.get("message", {}).get("tool_calls") or []
        ok = st == 200 and ch["finish_reason"] == "tool_calls" and calls and all(
            c["type"] == "function" and c["id"] and c["function"]["name"] in decl and
            parses_valid(c["function"]["arguments"], decl[c["function"]["name"]])
            for c in calls)
        check(ok, f"tool_choice required seed {seed}: {len(calls)} call(s) whose arguments "
                  f"validate ({dt:.1f} s): {[c['function'] for c in calls][:3]}")
        st, ev = s.stream(body)
        sc = stream_calls(ev)
        check(st == 200 and finish_of(ev) == "tool_calls" and
              sc == [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                     for c in calls], f"tool_choice required seed {seed}: the streamed "
                                      "tool_calls deltas equal the answer's calls")
    named = {**base, "seed": 5, "tool_choice": {"type": "function",
                                               "function": {"name": "get_time"}}}
    st, r, _ = s.chat(named)
    calls = r["choices"][0]["message"].get("tool_calls") or [] if st == 200 else []
    check(st == 200 and calls and all(c["function"]["name"] == "get_time" for c in calls),
          "a named tool_choice: every call is to that function")
    st, r, _ = s.chat({**base, "seed": 6, "tool_choice": "required",
                       "parallel_tool_calls": False})
    calls = r["choices"][0]["message"].get("tool_calls") or [] if st == 200 else []
    check(st == 200 and len(calls) == 1, "parallel_tool_calls false: exactly one call")
    # auto: the model may answer or call; either way the answer is well formed
    st, r, _ = s.chat({**base, "seed": 7, "tool_choice": "auto"})
    ch = r["choices"][0] if st == 200 else {}
    calls = ch.get("message", {}).get("tool_calls") or []
    check(st == 200 and ch["finish_reason"] in ("stop", "length", "tool_calls") and all(
        parses_valid(c["function"]["arguments"], decl[c["function"]["name"]]) for c in calls),
        f"tool_choice auto: {ch.get('finish_reason')}, {len(calls)} valid call(s)")
    # the round trip through the model's template (the text GGUF's: the older form, where the
    # result is folded into the answer that called as tool_responses)
    st, r, _ = s.chat({**base, "seed": 1, "tool_choice": "required",
                       "parallel_tool_calls": False})
    call = r["choices"][0]["message"]["tool_calls"][0]
    follow = {"messages": [*base["messages"], r["choices"][0]["message"],
                           {"role": "tool", "tool_call_id": call["id"],
                            "content": json.dumps({"temperature": 21, "sky": "clear"})}],
              "tools": base["tools"], "max_tokens": 20, "seed": 1,
              "g4v": {"debug_prompt": True}}
    st, r2, _ = s.chat(follow)
    prompt = r2.get("g4v", {}).get("prompt", {}).get("text", "") if st == 200 else ""
    name = call["function"]["name"]
    check(st == 200 and f"<|tool_call>call:{name}{{" in prompt and
          f"<|tool_response>response:{name}{{" in prompt and "sky:<|\"|>clear<|\"|>" in prompt
          and "temperature:21" in prompt,
          f"the call and the tool's result are in the next prompt as the template renders them "
          f"({prompt[prompt.find('<|tool_call>'):][:200]!r})")


def refusals(s, uri):
    msgs = [user("x", uri)]

    def refused(body, code, words, what):
        st, r, dt = s.chat({"messages": msgs, "max_tokens": 5, **body})
        msg = r.get("error", {}).get("message", "")
        check(st == 400 and r.get("error", {}).get("code") == code and
              all(w in msg for w in words) and dt < 5,
              f"{what}: 400 {code} in {dt:.2f} s ({msg[:160]!r})")

    def rf(schema):
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": "x", "schema": schema}}}

    refused(rf({"type": "object", "patternProperties": {"a": {"type": "string"}}}),
            "invalid_response_format", ["patternProperties"], "an unsupported keyword")
    deep = {"type": "string"}
    for _ in range(200):
        deep = {"type": "object", "properties": {"a": deep}, "required": ["a"]}
    refused(rf(deep), "invalid_response_format", ["deep"], "a schema nested 200 deep")
    refused(rf({"type": "string", "enum": [f"v{i}" for i in range(5000)]}),
            "invalid_response_format", ["enum"], "an enum of 5000 values")
    refused(rf({"type": "string", "enum": [f"v{i}" for i in range(100000)]}),
            "invalid_response_format", ["bytes"], "a schema of 0.9 MB")
    refused(rf({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"},
                                               "b": {"$ref": "#/$defs/a"}}}),
            "invalid_response_format", ["$ref"], "a $ref cycle that never reads a token")
    refused(rf({"$ref": "#/$defs/missing"}), "invalid_response_format", ["$ref"],
            "a $ref that does not resolve")
    refused({"response_format": {"type": "yaml"}}, "invalid_response_format", ["json_schema"],
            "an unknown response_format type")
    refused({"tools": [{"type": "function", "function": {"name": "bad name!"}}]},
            "invalid_tools", ["name"], "a tool whose name is not [a-zA-Z0-9_-]")
    refused({"tools": [WEATHER], "tool_choice": {"type": "function",
                                                 "function": {"name": "nope"}}},
            "invalid_tool_choice", ["nope"], "tool_choice naming an undeclared function")
    refused({"tool_choice": "required"}, "invalid_tool_choice", ["tools"],
            "tool_choice without tools")
    refused({"tools": [WEATHER], **rf({"type": "object"})}, "invalid_response_format",
            ["tool_choice"], "response_format with tools that may be called")
    refused({"messages": [*msgs, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather",
                                                      "arguments": "not json"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"}]},
        "invalid_tool_calls", ["arguments"], "tool_calls whose arguments are not JSON")
    # a recursive schema that does read tokens is served: its depth is bounded by max_tokens
    tree = {"$ref": "#/$defs/node", "$defs": {"node": {
        "type": "object", "additionalProperties": False,
        "properties": {"v": {"type": "integer", "minimum": 0, "maximum": 9},
                       "kids": {"type": "array", "maxItems": 2,
                                "items": {"$ref": "#/$defs/node"}}},
        "required": ["v", "kids"]}}}
    st, r, dt = s.chat({"messages": msgs, "max_tokens": 200, "seed": 1, **rf(tree)})
    check(st == 200 and r["choices"][0]["finish_reason"] in ("stop", "length"),
          f"a recursive schema is served, bounded by max_tokens ({dt:.1f} s, "
          f"{r.get('choices', [{}])[0].get('finish_reason')} {r.get('error')})")
    st, r, _ = s.chat({"messages": msgs, "max_tokens": 5, "seed": 1})
    check(st == 200, "after the refusals the server answers as before")


def clients(s, uri):
    py = py_client()
    rs = run_client([py, os.path.join(CLIENTS, "openai_py.py")],
                    {"op": "parse", "url": s.url, "image": uri, "seeds": SEEDS[:2]})
    check(len(rs) == 2 and all(r.get("parsed") and r.get("stream_parsed") and
                               r["content"] == r["stream_content"] for r in rs),
          f"Python openai: chat.completions.parse with a pydantic model, and its stream: "
          f"every answer is the model's instance, streamed = not ({rs[-1]})")
    rs = run_client([py, os.path.join(CLIENTS, "openai_py.py")],
                    {"op": "tools", "url": s.url, "image": uri, "seeds": SEEDS[:2]})
    check(len(rs) == 2 and all(r.get("finish_reason") == "tool_calls" and r["n_calls"] >= 1 and
                               all(r["parsed"]) and set(r["names"]) == {"GetWeather"} and
                               r.get("followup_finish") in ("stop", "length") and
                               "<|tool_response>response:GetWeather{" in r["followup_prompt"]
                               for r in rs),
          f"Python openai: pydantic_function_tool calls parse into the model, and the round "
          f"trip renders the tool's result ({str(rs[-1])[:300]})")
    env = node_client_env()
    rs = run_client(["node", os.path.join(CLIENTS, "openai_zod.cjs")],
                    {"op": "parse", "url": s.url, "image": uri, "seeds": SEEDS[:2]}, env)
    check(len(rs) == 2 and all(r.get("parsed") and r.get("stream_parsed") and
                               r["content"] == r["stream_content"] for r in rs),
          f"Node openai + zod: zodResponseFormat answers pass zod, streamed and not ({rs[-1]})")
    rs = run_client(["node", os.path.join(CLIENTS, "openai_zod.cjs")],
                    {"op": "tools", "url": s.url, "image": uri, "seeds": SEEDS[:2]}, env)
    check(len(rs) == 2 and all(r.get("finish_reason") == "tool_calls" and r["calls"] and
                               all(r["parsed"]) and r["calls"] == r["stream_calls"] and
                               r["stream_finish_reason"] == "tool_calls" for r in rs),
          f"Node openai + zod: zodFunction calls (tool_choice required) pass zod, and the "
          f"streamed deltas join to the same calls ({str(rs[-1])[:300]})")


def builtin_refuses_tools(tmp, uri):
    s = Server(tmp, "builtin", "--chat-template", "builtin")
    try:
        st, r, _ = s.chat({"messages": [user("x", uri)], "max_tokens": 5, "tools": [WEATHER]})
        msg = r.get("error", {}).get("message", "")
        check(st == 400 and "--chat-template" in msg,
              f"tools with our built-in rendering (no tool format): 400 saying what to do "
              f"({msg[:120]!r})")
    finally:
        s.stop()


def cli(tmp):
    schema = os.path.join(tmp, "invoice.schema.json")
    with open(schema, "w") as f:
        json.dump(INVOICE, f)
    grammar = os.path.join(tmp, "yesno.gbnf")
    with open(grammar, "w") as f:
        f.write('root ::= ("yes" | "no") "."\n')
    base = [G4V, "chat", "--threads", "2", "--lm", fx("lm-e2b.gguf"), "--model", fx("vis-e2b"),
            "--image", fx("img1.png"), "--json", "--max-tokens", "600", "--seed", "3", "-p",
            "Read this invoice."]
    p = subprocess.run([*base, "--json-schema", schema], capture_output=True, text=True,
                       timeout=600)
    ans = json.loads(p.stdout)["text"] if p.returncode == 0 else ""
    check(p.returncode == 0 and parses_valid(ans, INVOICE),
          f"g4v chat --json-schema: the answer validates ({ans[:100]!r}; {p.stderr[-200:]})")
    p = subprocess.run([*base, "--grammar", grammar], capture_output=True, text=True, timeout=600)
    ans = json.loads(p.stdout)["text"] if p.returncode == 0 else ""
    check(p.returncode == 0 and ans in ("yes.", "no."), f"g4v chat --grammar: {ans!r}")
    p = subprocess.run([*base, "--grammar", grammar, "--json-schema", schema],
                       capture_output=True, text=True, timeout=600)
    check(p.returncode == 1 and "give one" in p.stderr, "both options: a usage error")
    bad = os.path.join(tmp, "bad.gbnf")
    with open(bad, "w") as f:
        f.write("root ::= (unclosed\n")
    p = subprocess.run([*base, "--grammar", bad], capture_output=True, text=True, timeout=600)
    check(p.returncode == 1 and "grammar" in p.stderr, f"a grammar that does not parse: exit 1 "
                                                       f"({p.stderr.strip()[-120:]!r})")
    p = subprocess.run([*base, "--json-schema", grammar], capture_output=True, text=True,
                       timeout=600)
    check(p.returncode == 1, f"a schema file that is not JSON: exit 1 ({p.stderr.strip()[-120:]!r})")
