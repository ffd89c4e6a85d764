#!/usr/bin/python3
"""test_chat_openai.py (pytest --arg=FIXTURES --arg=chat_logprobs_ref) - `g4v serve --lm` as
OpenAI's chat API defines a request (docs/CHAT_API.md §1-§4), on the synthetic e2b models.

Message orders: a system and a developer message after the first turn rendered where they stand
(the prompt, "g4v": {"debug_prompt": true}, shows their system turns), an assistant message
first, consecutive user messages; a final assistant message continues the answer (the prompt ends
with it after the generation prompt; its greedy continuation equals the rest of the greedy answer
whose start it is, streamed too); a template that refuses an order answered 400 naming the
message index and the template's reason; 200 messages accepted under the default --max-messages.
logit_bias: a -100 on the greedy first token bans it, a +100 on another token forces it at every
step; an id outside the vocabulary and a bias over 100 refused. logprobs / top_logprobs: OpenAI's
shape (token, logprob, bytes, top_logprobs), non-streamed and streamed, equal within 2e-2 to
chat_logprobs_ref's log-softmax computed directly with libllama for the same prompt ids.
Fields: an unknown one, or a penalty that would change the answer, refused naming it, as is a
key response_format does not take (llama-server's json_object + schema); the harmless ones
(user, metadata, store, penalties at 0) accepted. GET /v1/models/{id}: the model, and 404 model_not_found for another id. A tool call cut by max_tokens: returned with its partial
arguments (a prefix of the whole call's) and finish_reason "length", streamed too. Images by URL
(--allow-image-urls): fetched, the answer the data: URI's; loopback, private and link-local
addresses refused after resolving and on a redirect, a host not listed, the size and time limits,
each a 400 with its reason. The Responses API (POST /v1/responses) through OpenAI's Python client
(tests/chat/clients/openai_responses.py): text, instructions, input_image, max_output_tokens
(incomplete), text.format json_schema, a function tool and its output, and the stream helper's
typed events, each answer the one chat.completions gives the same conversation."""
import base64
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from serveutil import ServeProcess, sse_events  # noqa: E402
from pyutil import check  # noqa: E402

G4V = os.environ.get("G4V_BIN", "g4v")
FX = pyutil.arg(1)
REF = pyutil.arg(2)

# Gemma 4's special tokens as a template writes them: only system turns raise here
STRICT = ("{%- for m in messages -%}"
          "{%- if m['role'] == 'system' and not loop.first -%}"
          "{{ raise_exception('System messages must come first') }}{%- endif -%}"
          "<|turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
          "{{ m['content'] if m['content'] is string else '' }}<turn|>\n"
          "{%- endfor -%}{%- if add_generation_prompt -%}<|turn>model\n{%- endif -%}")


class Server(ServeProcess):
    def __init__(self, tmp, name, *args, env=None):
        super().__init__(tmp, name, [G4V, "serve", "--port", "0", "--model",
                                     os.path.join(FX, "vis-e2b"), "--lm",
                                     os.path.join(FX, "lm-e2b.gguf"), "--lm-threads", "1",
                                     "--threads", "1", *args], env=env, stop_timeout=120)

    def chat(self, body):
        st, _, raw = self.request("POST", "/v1/chat/completions", body, timeout=300)
        try:
            return st, json.loads(raw)
        except ValueError:
            return st, {"raw": raw}

    def stream(self, body):
        c = self.conn(300)
        c.request("POST", "/v1/chat/completions", body=json.dumps({**body, "stream": True}),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            return r.status, [json.loads(r.read())]
        ev = sse_events(r)
        c.close()
        return 200, ev


def user(text):
    return {"role": "user", "content": text}


def content(r):
    return r["choices"][0]["message"]["content"]


def prompt(r):
    return r["g4v"]["prompt"]["text"]


def streamed(events, field="content"):
    return "".join(e["choices"][0]["delta"].get(field) or "" for e in events
                   if e != "[DONE]" and e["choices"])


def code(r):
    return r.get("error", {}).get("code")


# The synthetic model's random weights answer greedily with <channel|> (id 101) again and again,
# which is no text; banned, the answers are text tokens.
NO_CLOSE = {"101": -100}


def reference(ids, n, top, ban=(101,)):
    p = subprocess.run([REF, os.path.join(FX, "lm-e2b.gguf"), ",".join(map(str, ids)), str(n),
                        str(top), ",".join(map(str, ban))], capture_output=True, text=True,
                       timeout=300)
    check(p.returncode == 0, f"chat_logprobs_ref runs ({p.stderr.strip()[-200:]})")
    return json.loads(p.stdout)


def test_chat_openai():
    tmp = tempfile.mkdtemp(prefix="g4v_chat_openai_")
    strict = os.path.join(tmp, "strict.jinja")
    with open(strict, "w") as f:
        f.write(STRICT)
    s = Server(tmp, "main")
    try:
        orders(s)
        bias_and_logprobs(s)
        fields(s)
        models_and_cut_calls(s)
        responses(s)
    finally:
        s.stop()
    # n: sampled answers compared across requests, so each request decodes its whole prompt (with
    # prompt reuse the prompt's last logits come from a decode of another shape: CHAT_API.md §3)
    s = Server(tmp, "choices", "--no-prompt-reuse")
    try:
        choices(s)
    finally:
        s.stop()
    image_urls(tmp)
    s = Server(tmp, "strict", "--chat-template", strict)
    try:
        st, r = s.chat({"messages": [user("Hi"), {"role": "assistant", "content": "Hello."},
                                     {"role": "system", "content": "Be brief."}, user("Go")],
                        "max_tokens": 2})
        msg = r.get("error", {}).get("message", "")
        check(st == 400 and code(r) == "invalid_messages" and "messages[2]" in msg and
              "System messages must come first" in msg,
              f"a template that refuses an order: 400 naming the message and its reason "
              f"({st} {msg[:200]})")
        st, r = s.chat({"messages": [{"role": "system", "content": "Be brief."}, user("Go")],
                        "max_tokens": 2})
        check(st == 200, f"the same template takes a system message first ({st})")
    finally:
        s.stop()


def orders(s):
    g = {"max_tokens": 6, "temperature": 0, "g4v": {"debug_prompt": True}}
    # a system message after the first turn, and a developer one: system turns where they stand
    st, r = s.chat({"messages": [user("Hi"), {"role": "assistant", "content": "Hello."},
                                 {"role": "system", "content": "Answer in French."},
                                 user("Name a colour."),
                                 {"role": "developer", "content": "One word."}], **g})
    p = prompt(r) if st == 200 else ""
    check(st == 200 and "<turn|>\n<|turn>system\nAnswer in French.<turn|>\n<|turn>user\nName a "
          "colour.<turn|>\n<|turn>system\nOne word.<turn|>\n<|turn>model\n" in p,
          f"system and developer messages after the first turn: system turns where they stand "
          f"({st} {p[-200:]!r})")
    # an assistant message first
    st, r = s.chat({"messages": [{"role": "assistant", "content": "How can I help?"},
                                 user("Say hi.")], **g})
    p = prompt(r) if st == 200 else ""
    check(st == 200 and p.startswith("<bos><|turn>model\nHow can I help?<turn|>\n<|turn>user\n"),
          f"an assistant message first ({st} {p[:120]!r})")
    # consecutive user messages
    st, r = s.chat({"messages": [user("One."), user("Two.")], **g})
    check(st == 200, f"two user messages in a row ({st} {str(r)[:200]})")
    # a final assistant message: the answer continues it
    q = [user("Tell me a story.")]
    st, full = s.chat({"messages": q, "max_tokens": 12, "temperature": 0,
                       "logprobs": True, "logit_bias": NO_CLOSE})
    toks = [t["token"] for t in full["choices"][0]["logprobs"]["content"]] if st == 200 else []
    check(st == 200 and len(toks) >= 6, f"a greedy answer of 12 tokens ({st} {toks})")
    head = "".join(toks[:3])
    st, r = s.chat({"messages": q + [{"role": "assistant", "content": head}], "max_tokens": 9,
                    "temperature": 0, "g4v": {"debug_prompt": True}, "logit_bias": NO_CLOSE})
    p = prompt(r) if st == 200 else ""
    check(st == 200 and p.endswith(head) and
          p[:-len(head)].endswith(("<|turn>model\n", "<|channel>thought\n<channel|>")) and
          head + content(r) == content(full),
          f"a final assistant message is the answer's start: the prompt ends with it, the "
          f"answer continues it as the greedy answer did ({head!r} + {r.get('choices') and content(r)!r}"
          f" vs {content(full)!r})")
    st, ev = s.stream({"messages": q + [{"role": "assistant", "content": head}],
                       "max_tokens": 9, "temperature": 0, "logit_bias": NO_CLOSE})
    check(st == 200 and head + streamed(ev) == content(full),
          f"the same, streamed ({streamed(ev)!r})")
    st, r = s.chat({"messages": [user("Hi"), {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}],
        "max_tokens": 2})
    check(st == 400 and code(r) == "invalid_messages" and "messages[1]" in r["error"]["message"],
          f"a final assistant message with tool_calls: 400 naming it ({st} {str(r)[:200]})")
    st, r = s.chat({"messages": [user("Hi"), {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "assistant", "content": "So"}], "max_tokens": 2})
    check(st == 400 and code(r) == "invalid_messages" and "messages[2]" in r["error"]["message"],
          f"an assistant message after unanswered tool_calls: 400 naming it "
          f"({st} {str(r)[:200]})")
    # 200 messages under the default --max-messages (what the context holds)
    many = [user(f"m{i}") if i % 2 == 0 else {"role": "assistant", "content": "ok"}
            for i in range(199)]
    st, r = s.chat({"messages": many, "max_tokens": 2, "temperature": 0})
    check(st == 200, f"199 messages under the default --max-messages ({st} {str(r)[:200]})")


def bias_and_logprobs(s):
    q = {"messages": [user("Write a sentence about the sea.")], "max_tokens": 8,
         "temperature": 0, "logprobs": True, "top_logprobs": 5, "g4v": {"debug_prompt": True},
         "logit_bias": NO_CLOSE}
    st, r = s.chat(q)
    check(st == 200, f"logprobs: 200 ({st} {str(r)[:300]})")
    lp = r["choices"][0]["logprobs"]["content"]
    ids = r["g4v"]["prompt"]["ids"]
    ok = len(lp) in (r["usage"]["completion_tokens"], r["usage"]["completion_tokens"] - 1)
    for e in lp:
        ok = ok and set(e) == {"token", "logprob", "bytes", "top_logprobs"} and \
            e["logprob"] <= 0 and len(e["top_logprobs"]) == 5 and \
            bytes(e["bytes"]).decode("utf-8", "replace") == e["token"] and \
            [t for t in e["top_logprobs"] if t["token"] != "<channel|>"][0]["token"] == e["token"] and \
            [t for t in e["top_logprobs"] if t["token"] != "<channel|>"][0]["logprob"] == e["logprob"] and \
            all(a["logprob"] >= b["logprob"] for a, b in zip(e["top_logprobs"], e["top_logprobs"][1:]))
    check(ok and "".join(e["token"] for e in lp) == content(r),
          f"logprobs: OpenAI's shape, one entry per answer token, greedy = the likeliest not "
          f"banned (the raw distribution: the banned <channel|> is still listed), the tokens "
          f"joined = the content ({json.dumps(lp[:2])[:300]})")
    ref = reference(ids, len(lp), 5)
    worst = 0.0
    same = len(ref) >= len(lp)
    for e, x in zip(lp, ref):
        same = same and bytes(e["bytes"]) == bytes(x["bytes"])
        worst = max(worst, abs(e["logprob"] - x["logprob"]),
                    *(abs(a["logprob"] - b[1]) for a, b in zip(e["top_logprobs"], x["top"])))
    check(same and worst < 2e-2,
          f"logprobs = libllama's log-softmax of the raw logits computed directly, same tokens, "
          f"largest difference {worst:.2e} (< 2e-2)")
    st, ev = s.stream({k: v for k, v in q.items() if k != "g4v"})
    slp = [t for e in ev if e != "[DONE]" and e["choices"] and e["choices"][0].get("logprobs")
           for t in e["choices"][0]["logprobs"]["content"]]
    check(st == 200 and [t["token"] for t in slp] == [t["token"] for t in lp] and
          all(abs(a["logprob"] - b["logprob"]) < 2e-2 for a, b in zip(slp, lp)),
          f"logprobs streamed: the same tokens and values, in the content chunks ({len(slp)})")
    st, r0 = s.chat({"messages": q["messages"], "max_tokens": 3, "temperature": 0})
    check(st == 200 and r0["choices"][0]["logprobs"] is None, "without logprobs: logprobs null")

    # logit_bias, greedy: the bare answer is <channel|> (no text, no logprobs entries); banned,
    # text; a ban on the first text token, a forced token
    st, r = s.chat({**q, "logit_bias": None})
    check(st == 200 and r["choices"][0]["logprobs"]["content"] == [] and content(r) == "",
          f"without the ban the answer has no text ({st} {content(r)!r})")
    first = ref[0]["id"]
    st, r = s.chat({**q, "logit_bias": {**NO_CLOSE, str(first): -100}})
    got = content(r) if st == 200 else None
    check(st == 200 and got is not None and not got.startswith(lp[0]["token"]),
          f"logit_bias -100 on the greedy first token ({lp[0]['token']!r}) bans it ({got!r})")
    forced = [t[0] for t in ref[0]["top"] if t[0] not in (101, first)][0]
    st, r = s.chat({**q, "max_tokens": 4, "logit_bias": {str(forced): 100}})
    toks = [t["token"] for t in r["choices"][0]["logprobs"]["content"]] if st == 200 else []
    want = [t for t in lp[0]["top_logprobs"] if t["token"] != lp[0]["token"]]
    check(st == 200 and len(toks) == 4 and len(set(toks)) == 1 and
          any(t["token"] == toks[0] for t in want),
          f"logit_bias +100 on token {forced} forces it at every step ({toks})")
    for bias, what in (({"300000": 5}, "an id outside the vocabulary"),
                       ({"12": 101}, "a bias over 100"), ({"x": 1}, "a key that is no id")):
        st, r = s.chat({**q, "logit_bias": bias})
        check(st == 400 and code(r) == "invalid_logit_bias",
              f"logit_bias: {what} refused ({st} {str(r)[:200]})")
    st, r = s.chat({**q, "top_logprobs": 21})
    check(st == 400 and code(r) == "invalid_parameter", f"top_logprobs 21 refused ({st})")
    st, r = s.chat({"messages": q["messages"], "top_logprobs": 2})
    check(st == 400 and code(r) == "invalid_parameter", f"top_logprobs without logprobs ({st})")


def fields(s):
    base = {"messages": [user("Hi")], "max_tokens": 2, "temperature": 0}
    st, r = s.chat({**base, "frequency_penalty": 0.5})
    check(st == 400 and code(r) == "unsupported_parameter" and
          "frequency_penalty" in r["error"]["message"],
          f"a penalty that would change the answer: 400 naming it ({st} {str(r)[:200]})")
    st, r = s.chat({**base, "repeat_penalty": 1.1, "mirostat": 2})
    msg = r.get("error", {}).get("message", "")
    check(st == 400 and code(r) == "unsupported_parameter" and "repeat_penalty" in msg and
          "mirostat" in msg, f"unknown fields: 400 naming both ({st} {msg[:200]})")
    st, r = s.chat({**base, "user": "u1", "metadata": {"k": "v"}, "store": False,
                    "frequency_penalty": 0, "presence_penalty": 0, "modalities": ["text"],
                    "service_tier": "auto"})
    check(st == 200, f"harmless fields accepted ({st} {str(r)[:200]})")
    # a key response_format does not take (llama-server's json_object + schema) is refused,
    # named, not answered as if it were absent; OpenAI's own keys are taken
    st, r = s.chat({**base, "response_format": {"type": "json_object", "schema": {"const": 1}}})
    msg = r.get("error", {}).get("message", "")
    check(st == 400 and code(r) == "invalid_response_format" and '"schema"' in msg,
          f"response_format json_object + schema: 400 naming it ({st} {msg[:200]})")
    st, r = s.chat({**base, "response_format": {"type": "json_schema", "json_schema": {
        "name": "n", "schema": {"const": 1}, "strict": True, "format": "x"}}})
    msg = r.get("error", {}).get("message", "")
    check(st == 400 and code(r) == "invalid_response_format" and '"format"' in msg,
          f"response_format json_schema with an unknown key: 400 naming it ({st} {msg[:200]})")
    st, r = s.chat({**base, "response_format": {"type": "json_schema", "json_schema": {
        "name": "n", "description": "d", "schema": {"const": 1}, "strict": True}}})
    check(st == 200, f"response_format json_schema with all of OpenAI's keys ({st} {str(r)[:200]})")


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather at a place",
    "parameters": {"type": "object", "additionalProperties": False,
                   "properties": {"city": {"type": "string",
                                           "enum": ["Paris", "Oslo", "Lima", "Kyoto"]},
                                  "days": {"type": "integer", "minimum": 1, "maximum": 7}},
                   "required": ["city", "days"]}}}


def models_and_cut_calls(s):
    st, _, raw = s.request("GET", "/v1/models/lm-e2b.gguf")
    m = json.loads(raw) if st == 200 else {}
    check(st == 200 and m.get("id") == "lm-e2b.gguf" and m.get("object") == "model",
          f"GET /v1/models/{{id}}: the model ({st} {raw[:200]!r})")
    st, _, raw = s.request("GET", "/v1/models/gpt-4o")
    e = json.loads(raw).get("error", {})
    check(st == 404 and e.get("code") == "model_not_found" and e.get("param") == "model" and
          set(e) == {"message", "type", "param", "code"},
          f"GET /v1/models/{{another id}}: 404 model_not_found ({st} {raw[:200]!r})")
    # a tool call cut by max_tokens: returned as far as written, finish_reason "length"
    q = {"messages": [user("Weather in Oslo?")], "tools": [WEATHER], "tool_choice": "required",
         "temperature": 0, "parallel_tool_calls": False}
    st, whole = s.chat({**q, "max_tokens": 64})
    args = json.loads(whole["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]) \
        if st == 200 else None
    check(st == 200 and whole["choices"][0]["finish_reason"] == "tool_calls" and
          isinstance(args, dict), f"the whole call ({st} {str(whole)[:300]})")
    full = whole["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    n = whole["usage"]["completion_tokens"]
    st, r = s.chat({**q, "max_tokens": n - 4})
    c = r["choices"][0] if st == 200 else {}
    calls = c.get("message", {}).get("tool_calls") or []
    part = calls[0]["function"]["arguments"] if calls else None
    check(st == 200 and c.get("finish_reason") == "length" and len(calls) == 1 and
          calls[0]["function"]["name"] == "get_weather" and c["message"]["content"] is None and
          part and full.startswith(part) and len(part) < len(full),
          f"a call cut by max_tokens: returned with partial arguments, finish_reason length "
          f"({part!r} of {full!r})")
    st, ev = s.stream({**q, "max_tokens": n - 4})
    deltas = [t for e in ev if e != "[DONE]" and e["choices"]
              for t in e["choices"][0]["delta"].get("tool_calls") or []]
    fin = [e["choices"][0]["finish_reason"] for e in ev if e != "[DONE]" and e["choices"] and
           e["choices"][0]["finish_reason"]]
    check(st == 200 and len(deltas) == 1 and deltas[0]["function"]["arguments"] == part and
          fin == ["length"], f"the same, streamed ({deltas} {fin})")


class Images(http.server.BaseHTTPRequestHandler):
    """/img.png the image; /to?u=URL a redirect; /slow the image after 3 s."""
    png = b""

    def do_GET(self):
        if self.path.startswith("/to?u="):
            self.send_response(302)
            self.send_header("Location", self.path[6:])
            self.end_headers()
            return
        if self.path == "/slow":
            time.sleep(3)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(self.png)))
        self.end_headers()
        self.wfile.write(self.png)

    def log_message(self, *a):
        pass


def image_urls(tmp):
    Images.png = open(os.path.join(FX, "img1.png"), "rb").read()
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Images)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{web.server_address[1]}"
    uri = "data:image/png;base64," + base64.b64encode(Images.png).decode()

    def ask(s, url):
        return s.chat({"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": "What?"}]}],
            "max_tokens": 4, "temperature": 0})

    env = {**os.environ, "G4V_IMAGE_URL_ALLOW_LOOPBACK": "1"}  # the test's server is local
    s = Server(tmp, "urls", "--allow-image-urls", "--image-url-max-bytes", "2000000",
               "--image-url-timeout", "1", env=env)
    try:
        st, want = ask(s, uri)
        st2, got = ask(s, base + "/img.png")
        check(st == 200 and st2 == 200 and content(got) == content(want) and
              got["usage"]["prompt_tokens_details"]["image_tokens"] == 256,
              f"--allow-image-urls: an http URL fetched, the answer the data: URI's ({st2} "
              f"{str(got)[:200]})")
        for url, why, what in ((base + "/to?u=http://10.1.2.3/x.png",
                                "the address 10.1.2.3 is not a public", "a redirect to a private "
                                "address"),
                               (base + "/to?u=http://169.254.169.254/latest",
                                "the address 169.254.169.254 is not a public", "a redirect to the "
                                "link-local metadata address"),
                               ("http://[::ffff:192.168.0.1]/x.png",
                                "the address ::ffff:192.168.0.1 is not a public",
                                "an IPv4-mapped private address"),
                               (base + "/slow", "--image-url-timeout", "a fetch over the time limit"),
                               ("ftp://127.0.0.1/x.png", "--allow-image-urls", "another scheme")):
            t0 = time.time()
            st, r = ask(s, url)
            msg = r.get("error", {}).get("message", "")
            check(st == 400 and code(r) == "invalid_image_url" and why in msg and
                  time.time() - t0 < 10, f"{what}: 400 with the reason ({st} {msg[:200]})")
    finally:
        s.stop()
    s = Server(tmp, "urls-strict", "--allow-image-urls", "--image-url-max-bytes", "1000",
               "--image-url-host", "images.example")
    try:
        st, r = ask(s, base + "/img.png")
        msg = r.get("error", {}).get("message", "")
        check(st == 400 and "--image-url-host" in msg, f"a host not listed: 400 ({msg[:200]})")
    finally:
        s.stop()
    s = Server(tmp, "urls-small", "--allow-image-urls", "--image-url-max-bytes", "1000", env=env)
    try:
        st, r = ask(s, base + "/img.png")
        msg = r.get("error", {}).get("message", "")
        check(st == 400 and "--image-url-max-bytes" in msg, f"an image over the size limit: 400 "
              f"({msg[:200]})")
    finally:
        s.stop()
    s = Server(tmp, "urls-loopback", "--allow-image-urls")
    try:
        st, r = ask(s, base + "/img.png")
        msg = r.get("error", {}).get("message", "")
        check(st == 400 and "127.0.0.1" in msg and "not a public" in msg,
              f"loopback refused after resolving ({msg[:200]})")
        st, r = ask(s, f"http://localhost:{web.server_address[1]}/img.png")
        msg = r.get("error", {}).get("message", "")
        check(st == 400 and "not a public" in msg, f"localhost refused after resolving "
              f"({msg[:200]})")
    finally:
        s.stop()
    web.shutdown()


def responses(s):
    r = subprocess.run([os.path.join(pyutil.SRC, "scripts", "install-py-client.sh")],
                       capture_output=True, text=True, timeout=900)
    if r.returncode == 75:
        print("SKIP the Responses API through OpenAI's client: PyPI cannot be reached")
        return
    check(r.returncode == 0, f"install-py-client.sh exits 0 ({r.stderr[-300:]})")
    py = r.stdout.strip().splitlines()[-1]
    img = "data:image/png;base64," + base64.b64encode(
        open(os.path.join(FX, "img1.png"), "rb").read()).decode()
    p = subprocess.run([py, os.path.join(pyutil.SRC, "tests", "chat", "clients",
                                         "openai_responses.py"),
                        json.dumps({"url": f"http://127.0.0.1:{s.port}", "image": img})],
                       capture_output=True, text=True, timeout=900)
    check(p.returncode == 0, f"openai_responses.py exits 0 ({p.stderr[-400:]})")
    lines = p.stdout.strip().splitlines()
    out = json.loads(lines[-1]) if lines else {"error": "no output", "message": p.stderr[-300:]}
    check("error" not in out, f"the client raised nothing ({out.get('error')}: "
          f"{out.get('message')})")
    if "error" in out:
        return
    st, want = s.chat({"messages": [{"role": "system", "content": "Be brief."}, user("Say hi.")],
                       "max_tokens": 8, "temperature": 0, "logit_bias": NO_CLOSE})
    t = out["text"]
    check(t["object"] == "response" and t["id"].startswith("resp_") and
          t["output_text"] == content(want) and t["types"] == ["message"] and
          t["usage"]["input_tokens"] == want["usage"]["prompt_tokens"] and
          t["usage"]["output_tokens"] == want["usage"]["completion_tokens"],
          f"responses.create with instructions: chat.completions' answer and counts ({t})")
    st, want = s.chat({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": img}},
        {"type": "text", "text": "What is this?"}]}], "max_tokens": 6, "temperature": 0,
        "logit_bias": NO_CLOSE})
    check(out["image"]["output_text"] == content(want) and
          out["image"]["usage"]["input_tokens"] == want["usage"]["prompt_tokens"],
          f"input_image and input_text: chat.completions' answer ({out['image']})")
    check(out["cut"] == {"status": "incomplete", "reason": "max_output_tokens"},
          f"max_output_tokens reached: incomplete ({out['cut']})")
    sc = out["schema"]["parsed"]
    check(sc.get("colour") in ("red", "green", "blue") and isinstance(sc.get("count"), int),
          f"text.format json_schema: the answer parses and fits ({out['schema']})")
    tl = out["tools"]
    check(len(tl["calls"]) >= 1 and tl["calls"][0]["name"] == "get_weather" and
          tl["calls"][0]["arguments"].get("city") in ("Paris", "Oslo") and
          tl.get("after", {}).get("status") in ("completed", "incomplete"),
          f"a function tool, then its output sent back and answered ({tl})")
    sm = out["stream"]
    need = ["response.created", "response.in_progress", "response.output_item.added",
            "response.content_part.added", "response.output_text.delta",
            "response.output_text.done", "response.content_part.done",
            "response.output_item.done", "response.incomplete"]  # cut by max_output_tokens
    order = [x for x in sm["types"] if x in need]
    check(all(n in sm["types"] for n in need) and order[0] == "response.created" and
          order[-1] == "response.incomplete" and sm["deltas"] == sm["output_text"] ==
          out["text"]["output_text"] and sm["status"] == "incomplete",
          f"the stream helper: typed events in order, deltas joined = the answer ({sm})")
    st, _, raw = s.request("POST", "/v1/responses", {"input": "x", "previous_response_id": "r1"})
    e = json.loads(raw).get("error", {})
    check(st == 400 and e.get("code") == "unsupported_parameter" and
          "previous_response_id" in e.get("message", ""),
          f"previous_response_id refused: the API is stateless ({st} {raw[:200]!r})")


def choices(s):
    """n > 1: n answers to one prompt, decoded once."""
    words = " ".join(f"w{i}" for i in range(300))
    base = {"messages": [user("Count: " + words)], "max_tokens": 6, "logit_bias": NO_CLOSE}
    st, one = s.chat({**base, "temperature": 0, "logprobs": True})
    st, r = s.chat({**base, "temperature": 0, "n": 3, "logprobs": True})
    ch = r.get("choices", [])
    lp1 = [t["logprob"] for t in one["choices"][0]["logprobs"]["content"]]
    check(st == 200 and [c["index"] for c in ch] == [0, 1, 2] and
          all(c["message"]["content"] == content(one) for c in ch) and
          all([t["logprob"] for t in c["logprobs"]["content"]] == lp1 for c in ch) and
          r["usage"]["completion_tokens"] == 3 * one["usage"]["completion_tokens"] and
          r["usage"]["prompt_tokens"] == one["usage"]["prompt_tokens"],
          f"n=3, greedy: three choices, each the n=1 answer with its logprobs bit for bit (the "
          f"context and the prompt's logits back where each began), completion tokens summed ({st} {[c['message']['content'] for c in ch]})")
    # n=3: the prompt's tokens decoded once, plus the answers
    base2 = {**base, "messages": [user("Again: " + words)]}
    m0 = s.metrics()
    st, r = s.chat({**base2, "temperature": 1, "seed": 7, "n": 3})
    m1 = s.metrics()
    decoded = m1["g4v_chat_decode_tokens_total"] - m0["g4v_chat_decode_tokens_total"]
    p = r["usage"]["prompt_tokens"] if st == 200 else 0
    texts = [c["message"]["content"] for c in r.get("choices", [])]
    check(st == 200 and p > 300 and decoded < p + 3 * 6 + 8 and len(set(texts)) > 1,
          f"n=3, sampled: the prompt ({p} positions) decoded once ({decoded} tokens decoded in "
          f"all), each choice its own sampler ({texts})")
    st, r1 = s.chat({**base2, "temperature": 1, "seed": 7})
    check(st == 200 and content(r1) == texts[0],
          f"choice 0 is the n=1 answer of the same seed ({content(r1)!r})")
    st, ev = s.stream({**base2, "temperature": 1, "seed": 7, "n": 3})
    by = {}
    fins = {}
    for e in ev:
        if e == "[DONE]" or not e["choices"]:
            continue
        c = e["choices"][0]
        by[c["index"]] = by.get(c["index"], "") + (c["delta"].get("content") or "")
        if c["finish_reason"]:
            fins[c["index"]] = c["finish_reason"]
    check(st == 200 and [by.get(i) for i in range(3)] == texts and
          fins == {0: "length", 1: "length", 2: "length"},
          f"n=3 streamed: each choice's chunks by index, equal to the non-streamed ({by} {fins})")
    st, r = s.chat({**base, "n": 9})
    check(st == 400 and code(r) == "invalid_parameter", f"n=9 refused (at most 8) ({st})")
