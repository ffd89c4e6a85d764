#!/usr/bin/python3
"""test_chat_jinja.py (pytest --arg=CHAT_JINJA_RENDER) - chat templates rendered by llama.cpp's
Jinja engine through our C API (chat/chat_jinja.h, driven by chat_jinja_render) must equal
Python jinja2 as transformers renders them, byte for byte; raise_exception's message must come
back as the template wrote it.

Reference: transformers' own render_jinja_template when G4V_HF_PYTHON imports it
(jinja_reference.py, run with that Python; the replica there is then checked against it too),
else the replica with G4V_PYTHON's jinja2. Templates: tests/chat/jinja/constructs.jinja (ours,
always), and Gemma 4's official ones from $G4V_REAL_FILES (docs/TESTING.md "Real metadata"),
skipped when absent.
Conversations: system prompts (string, content parts, developer role), images and a video in user
content parts, several turns, earlier answers with reasoning_content and with inline thought
channels, tools with nested parameters, enums and arrays, tool calls with object (and string)
arguments, tool responses as a string and as content parts, legacy tool_responses, unicode, text
with leading and trailing whitespace, an unknown role (our template raises); each with thinking
on, off and unset, with and without the generation prompt. Also: concurrent renders of one
compiled template, errors (syntax, bad JSON), and the engine's known differences from jinja2, each
of which must still differ (docs/CHAT.md 2.4 lists them)."""
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from pyutil import check  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from jinja_reference import template_context  # noqa: E402

RENDER = pyutil.arg(1) if pyutil.ARGS else os.environ.get("CHAT_JINJA_RENDER", "chat_jinja_render")
SRC = os.environ.get("G4V_SOURCE_DIR", os.path.normpath(os.path.join(HERE, "..", "..")))
OWN_TEMPLATE = os.path.join(HERE, "jinja", "constructs.jinja")
OFFICIAL = ["gemma-4-e2b-it.chat_template.jinja",
            "gemma-4-e2b-it.chat_template.2026-07-ollama-fixture.jinja",
            "gemma-4-31b-it.chat_template.2026-07-ollama-fixture.jinja"]


def real_files_dir():
    d = os.environ.get("G4V_REAL_FILES", "")
    return os.path.normpath(d)


# ---- the conversations ------------------------------------------------------------------------

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "  Current weather for a city. ",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name, e.g. Zürich"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Unit"},
            "days": {"type": "integer", "description": "Forecast days", "nullable": True}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search_photos", "description": "Search the photo library.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "Words to look for"},
            "tags": {"type": "array", "description": "Tags to match",
                     "items": {"type": "string", "enum": ["cat", "dog", "bird"]}},
            "filters": {"type": "object", "description": "Narrow the search", "properties": {
                "min_width": {"type": "integer", "description": "Pixels"},
                "colors": {"type": "array", "items": {"type": "string"}},
                "taken": {"type": "object", "properties": {
                    "from": {"type": "string", "description": "ISO date"},
                    "to": {"type": "string"}}, "required": ["from"]}},
                "required": ["min_width"]},
            "boxes": {"type": "array", "description": "Regions", "items": {
                "type": "object",
                "properties": {"x": {"type": "number"}, "label": {"type": "string"}},
                "required": ["x"]}},
            "extra": {"type": "object", "description": "Free-form",
                      "speed": {"type": "number", "description": "m/s"}}},
            "required": ["query", "filters"]},
        "response": {"type": "object", "description": "The matching photos"}}},
    {"type": "function", "function": {"name": "list_albums", "description": "Lists albums.",
                                      "parameters": {"type": "object", "properties": {}}}},
]

CALL_ARGS = {"query": "sunset über dem Meer 🌅", "tags": ["cat", "bird"],
             "filters": {"min_width": 1024, "colors": ["red", None],
                         "taken": {"from": "2024-01-01"}},
             "boxes": [{"x": 0.5, "label": "sun"}, {"x": 2.0}], "exact": True, "limit": -3,
             "note": None}

IMG, VID = {"type": "image"}, {"type": "video"}


def text(t):
    return {"type": "text", "text": t}


CONVERSATIONS = {
    "system_string": [
        {"role": "system", "content": "  You are a helpful assistant.\n "},
        {"role": "user", "content": "  Hello there!  \n"}],
    "system_parts": [
        {"role": "system", "content": [text(" Be terse. "), text("Answer in English.\n")]},
        {"role": "user", "content": [text("What is 2+2?")]}],
    "developer_role": [
        {"role": "developer", "content": "Only answer in haiku."},
        {"role": "user", "content": "Describe rain."}],
    "media_turns": [
        {"role": "user", "content": [IMG, IMG, text("Compare these two photos.")]},
        {"role": "assistant", "content": "The first is brighter."},
        {"role": "user", "content": [VID, text("  And this clip?  ")]},
        {"role": "assistant", "content": [text("A dog runs on a beach.")]},
        {"role": "user", "content": [text("One more:"), IMG, text("and a last clip"), VID]}],
    "thinking_history": [
        {"role": "system", "content": "Think before answering."},
        {"role": "user", "content": "What is 17*3?"},
        {"role": "assistant", "content": "51", "reasoning_content": "17*3 = 51."},
        {"role": "user", "content": "And 2+2?"},
        {"role": "assistant",
         "content": "<|channel>thought\nSimple: 4.<channel|>The answer is 4.  "},
        {"role": "user", "content": "Thanks!"}],
    "thinking_last_answer": [
        {"role": "user", "content": "Pick a colour."},
        {"role": "assistant", "content": "Blue.", "reasoning": "Any colour will do."}],
    "tools_roundtrip": [
        {"role": "system", "content": "You manage photos."},
        {"role": "user", "content": "Find sunsets with a cat."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "search_photos", "arguments": CALL_ARGS}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "3 photos found: ünïcode ✓"},
        {"role": "assistant", "content": "I found 3 photos."},
        {"role": "user", "content": "Weather in Zürich?"}],
    "tools_parallel_calls": [
        {"role": "user", "content": "Weather in Paris and Oslo, and my albums."},
        {"role": "assistant", "content": None, "reasoning_content": "Two cities: two calls.",
         "tool_calls": [
             {"id": "a", "type": "function",
              "function": {"name": "get_weather",
                           "arguments": {"city": "Paris", "unit": "celsius"}}},
             {"id": "b", "type": "function",
              "function": {"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}}},
             {"id": "c", "type": "function",
              "function": {"name": "list_albums", "arguments": {}}}]},
        {"role": "tool", "tool_call_id": "a", "content": "18 C, cloudy"},
        {"role": "tool", "tool_call_id": "b",
         "content": [text("-2 C, snow"), IMG, text(" (radar image)")]},
        {"role": "tool", "tool_call_id": "c", "name": "list_albums", "content": "Holidays, Cats"}],
    "legacy_tool_responses": [
        {"role": "user", "content": "Weather in Rome?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "get_weather", "arguments": {"city": "Rome"}}}],
         "tool_responses": [{"name": "get_weather",
                             "response": {"temperature": 21, "sky": "clear", "wind": [3, "NW"]}}]},
        {"role": "assistant", "content": "Sunny, 21 degrees."}],
    "unicode_whitespace": [
        {"role": "system", "content": "\n\tRéponds en français. \r\n"},
        {"role": "user", "content": "  Grüße 👋🏽 — 日本語のテキスト، عربى, e\u0301, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢\t\n"},
        {"role": "assistant", "content": "  Ça va ? ✓  \n"},
        {"role": "user", "content": [text("\n   Ещё раз: «ёж»   ")]}],
    "consecutive_assistant": [
        {"role": "user", "content": "Tell me two facts."},
        {"role": "assistant", "content": "Fact one."},
        {"role": "assistant", "content": "Fact two."},
        {"role": "user", "content": "More."}],
    "unknown_role": [  # our template refuses it with raise_exception
        {"role": "user", "content": "Tell a story."},
        {"role": "narrator", "content": "Meanwhile, far away..."}],
}

# tools given to the template for these conversations (else tools=None, as transformers passes)
WITH_TOOLS = {"tools_roundtrip", "tools_parallel_calls", "legacy_tool_responses"}
# our own template: every conversation except those needing the official templates' tool logic
VARIANTS = [  # (label, add_generation_prompt, kwargs)
    ("gen+think", True, {"enable_thinking": True}),
    ("gen-think", True, {"enable_thinking": False}),
    ("nogen+think", False, {"enable_thinking": True}),
    ("nogen", False, {}),
]
BASE_KWARGS = {"bos_token": "<bos>", "eos_token": "<eos>"}


# (template, conversation) pairs on which the engine is known to differ from jinja2: checked to
# still differ (see "known differences" below). Only the April template, with input it was not
# written for: a system prompt as content parts (it trims the list's Python repr) and a null tool
# argument (its format_argument has no none case, so Python prints None, the engine nothing).
APRIL = OFFICIAL[0]
KNOWN = {
    (APRIL, "system_parts"): "a string made of a list: Python's repr escapes \\n, the engine not",
    (APRIL, "tools_roundtrip"): "none printed: Python writes None, the engine nothing",
}


def make_cases(template):
    cases = []
    for name, messages in CONVERSATIONS.items():
        for label, gen, kwargs in VARIANTS:
            cases.append({"name": "%s %s %s" % (os.path.basename(template), name, label),
                          "known": KNOWN.get((os.path.basename(template), name)),
                          "template": template, "messages": messages,
                          "tools": TOOLS if name in WITH_TOOLS else None,
                          "add_generation_prompt": gen, "kwargs": {**BASE_KWARGS, **kwargs}})
    return cases


# ---- known differences: each must still differ (when one stops differing, after a llama.cpp
# update, this test fails: drop it here and from docs/CHAT.md 2.4) -----------------------------

# (what, template, variables): the engine's limits found by this test, each in a few characters
ENGINE_DIFFERENCES = [
    ("dictsort is case-sensitive (jinja2: case-insensitive by default)",
     "{% for k, v in d | dictsort %}{{ k }},{% endfor %}", {"d": {"page_size": 1, "pageToken": 2}}),
    ("trim strips ASCII whitespace only (Python: all Unicode whitespace, e.g. U+00A0, U+3000)",
     "[{{ s | trim }}]", {"s": "\u00a0x\u3000"}),
    ("map with a filter name is not implemented (map(attribute=...) is)",
     "{{ l | map('upper') | list | join(',') }}", {"l": ["a", "b"]}),
    ("the unique filter is not implemented", "{{ l | unique | join(',') }}", {"l": ["a", "a"]}),
    ("upper/lower change ASCII letters only", "{{ s | upper }}", {"s": "straße é"}),
    ("floats print as C's %f, 6 decimals (Python: the shortest repr)", "{{ x }}",
     {"x": 3.14159265}),
    ("... so small ones print as 0.0 (Python: 1e-07)", "{{ x }}", {"x": 1e-7}),
    ("none | default(d) gives d (jinja2: only undefined is defaulted)", "{{ x | default('d') }}",
     {"x": None}),
    ("a template's first character is dropped when only blanks follow it before a tag",
     "a {# comment #} b", {}),
    ("{% raw %} is not implemented", "{% raw %}{{ x }}{% endraw %}", {}),
    ("the // and ** operators are not implemented", "{{ 7 // 2 }}", {}),
    ("% string formatting is not implemented", "{{ '%s!' % 'a' }}", {}),
    ("tests with an argument without parentheses do not parse", "{{ 3 is divisibleby 3 }}", {}),
    ("loop.cycle is not implemented", "{% for i in [1, 2] %}{{ loop.cycle('a', 'b') }}{% endfor %}",
     {}),
    ("the round, sum, batch, truncate, wordcount, center, escape filters are not implemented",
     "{{ x | round }}", {"x": 1.5}),
    ("tojson writes 2.0 as 2", "{{ x | tojson }}", {"x": 2.0}),
    ("none prints as an empty string (Python: None)", "[{{ x }}]", {"x": None}),
    ("a list prints as its items run together (Python: its repr)", "{{ l }}", {"l": [1, "a"]}),
    ("a string made of a list does not escape control characters like repr",
     "{{ l | trim }}", {"l": ["a\nb"]}),
]

# Conversations on which Gemma 4's official templates hit those limits: tool parameters and
# arguments whose names differ by case (dictsort), an array of items with a list of types
# (map('upper')), a tool-call argument 47.3768866 (printed 47.376887).
TOOL_CASE = {"type": "function", "function": {
    "name": "list_files", "description": "Lists files.",
    "parameters": {"type": "object", "properties": {
        "pageToken": {"type": "string", "description": "Cursor"},
        "page_size": {"type": "integer", "description": "How many"}}, "required": ["page_size"]}}}
TOOL_TYPE_LIST = {"type": "function", "function": {
    "name": "tag_photo", "description": "Tags a photo.",
    "parameters": {"type": "object", "properties": {
        "labels": {"type": "array", "items": {"type": ["string", "null"]}}}}}}
OFFICIAL_DIFFERENCES = {  # name: (tools, messages)
    "parameter names differing by case": ([TOOL_CASE], [
        {"role": "user", "content": "List my files."},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {
            "name": "list_files", "arguments": {"pageToken": "abc", "page_size": 10}}}]}]),
    "items with a list of types": ([TOOL_TYPE_LIST], [{"role": "user", "content": "Tag it."}]),
    "a float argument with more than 6 decimals": (TOOLS, [
        {"role": "user", "content": "Photos near me?"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {
            "name": "search_photos",
            "arguments": {"query": "lake", "near": [47.3768866, 8.5416940]}}}]}]),
}


# ---- the two renderers ------------------------------------------------------------------------

def reference_python():
    """G4V_HF_PYTHON when it imports transformers, else this interpreter (the replica)."""
    hf = os.environ.get("G4V_HF_PYTHON", "")
    if hf and os.access(hf, os.X_OK):
        p = subprocess.run([hf, "-c", "import transformers.utils.chat_template_utils"],
                           capture_output=True, timeout=120)
        if p.returncode == 0:
            return hf
    return sys.executable


def official_path(name):
    return os.path.join(real_files_dir(), name)


def probe_cases():
    return [{"name": "probe: " + what, "source": source, "messages": [], "kwargs": variables}
            for what, source, variables in ENGINE_DIFFERENCES]


def official_difference_cases(name):
    return [{"name": "%s: %s" % (name, what), "template": official_path(name),
             "messages": messages, "tools": tools, "add_generation_prompt": True,
             "kwargs": dict(BASE_KWARGS)}
            for what, (tools, messages) in OFFICIAL_DIFFERENCES.items()]


def official_cases(name):
    path = official_path(name)
    cases = make_cases(path)
    # a tool call whose arguments are a JSON string, not an object: the 2026-07 templates refuse
    # it with raise_exception, the April one renders the string
    string_args = [{"role": "user", "content": "Weather?"},
                   {"role": "assistant", "content": "", "tool_calls": [
                       {"function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]}]
    cases.append({"name": name + " string arguments", "template": path, "messages": string_args,
                  "tools": TOOLS, "add_generation_prompt": False, "kwargs": dict(BASE_KWARGS)})
    # preserve_thinking (2026-07): earlier reasoning kept on tool-calling turns
    cases.append({"name": name + " preserve_thinking", "template": path,
                  "messages": CONVERSATIONS["tools_parallel_calls"], "tools": TOOLS,
                  "add_generation_prompt": True,
                  "kwargs": {**BASE_KWARGS, "enable_thinking": True, "preserve_thinking": True}})
    return cases


_REFERENCE = {}


def reference(cases):
    """jinja2's results for cases (by name). The first call renders every case of this file in one
    run of jinja_reference.py (importing transformers takes seconds), checking the replica against
    transformers where transformers is the reference."""
    if not _REFERENCE:
        every = make_cases(OWN_TEMPLATE) + probe_cases()
        for name in OFFICIAL:
            if os.path.exists(official_path(name)):
                every += official_cases(name) + official_difference_cases(name)
        names = [c["name"] for c in every]
        assert len(set(names)) == len(names), "case names must be unique"
        python = reference_python()
        p = subprocess.run([python, os.path.join(HERE, "jinja_reference.py")],
                           input=json.dumps({"cases": every}, ensure_ascii=False),
                           capture_output=True, text=True, encoding="utf-8", timeout=300)
        assert p.returncode == 0, "jinja_reference.py failed:\n" + p.stderr
        out = json.loads(p.stdout)
        _REFERENCE["renderer"] = out["renderer"]
        _REFERENCE["replica_differs"] = [
            c["name"] for c, r, t in zip(every, out.get("replica", out["results"]), out["results"])
            if r != t]
        _REFERENCE.update(zip(names, out["results"]))
    print("reference:", _REFERENCE["renderer"])
    if _REFERENCE["renderer"].startswith("transformers"):
        check(not _REFERENCE["replica_differs"], "the replica renders as transformers (differs: %s)"
              % _REFERENCE["replica_differs"])
    return [_REFERENCE[c["name"]] for c in cases]


def render_ours(case, tmp_path, threads=1):
    template = case.get("template")
    if template is None:
        template = tmp_path / "template.jinja"
        template.write_text(case["source"], encoding="utf-8")
    ctx = tmp_path / "context.json"
    ctx.write_text(json.dumps(template_context(case), ensure_ascii=False), encoding="utf-8")
    cmd = [RENDER, str(template), str(ctx)] + ([str(threads)] if threads > 1 else [])
    p = subprocess.run(cmd, capture_output=True, timeout=60)
    if p.returncode == 0:
        return {"text": p.stdout.decode("utf-8")}
    err = p.stderr.decode("utf-8", "replace")  # the message + "\n", exactly
    return {"error": err[:-1] if err.endswith("\n") else err, "rc": p.returncode}


def first_difference(a, b):
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    lo = max(0, i - 30)
    return "at char %d: ours %r vs jinja2 %r" % (i, a[lo:i + 30], b[lo:i + 30])


def differs(ours, want):
    return (("text" in want and ours.get("text") != want["text"])
            or ("error" in want) != ("error" in ours))


def compare(cases, tmp_path):
    n_text = n_raised = 0
    for case, want in zip(cases, reference(cases)):
        got = render_ours(case, tmp_path)
        if case.get("known"):
            check(differs(got, want), "still differs (%s): %s" % (case["known"], case["name"]))
        elif "text" in want:
            n_text += 1
            ok = got.get("text") == want["text"]
            why = "" if ok else (first_difference(got["text"], want["text"]) if "text" in got
                                 else "ours failed: " + got["error"])
            check(ok, "identical: %s %s" % (case["name"], why), show_ok=False)
        elif want["raised"]:
            n_raised += 1
            check(got.get("error") == want["error"],
                  "raise_exception: %s: ours %r, jinja2 %r" % (case["name"], got, want["error"]),
                  show_ok=False)
        else:
            check("error" in got, "both fail: %s (jinja2: %s; ours %r)"
                  % (case["name"], want["error"], got), show_ok=False)
    print("%d cases: %d identical renderings, %d raise_exception messages"
          % (len(cases), n_text, n_raised))
    return n_text, n_raised


# ---- the tests --------------------------------------------------------------------------------

def test_own_template(tmp_path):
    n_text, n_raised = compare(make_cases(OWN_TEMPLATE), tmp_path)
    check(n_raised == len(VARIANTS), "raise_exception's message, as written (%d)" % n_raised)
    check(n_text == (len(CONVERSATIONS) - 1) * len(VARIANTS),
          "every other case of our template renders (%d)" % n_text)


def need_official(name):
    if not os.path.exists(official_path(name)):
        pytest.skip("%s absent (set G4V_REAL_FILES: docs/TESTING.md \"Real metadata\")"
                    % official_path(name))


@pytest.mark.parametrize("name", OFFICIAL)
def test_official_template(name, tmp_path):
    need_official(name)
    compare(official_cases(name), tmp_path)


def test_engine_differences(tmp_path):
    cases = probe_cases()
    for case, want in zip(cases, reference(cases)):
        got = render_ours(case, tmp_path)
        check(differs(got, want),
              "still differs: %s: ours %r, jinja2 %r" % (case["name"], got, want))


@pytest.mark.parametrize("name", OFFICIAL)
def test_official_template_differences(name, tmp_path):
    need_official(name)
    cases = official_difference_cases(name)
    for case, want in zip(cases, reference(cases)):
        got = render_ours(case, tmp_path)
        print("%s:\n  ours   %r\n  jinja2 %r" % (case["name"], got, want))
        check(differs(got, want), "still differs: " + case["name"])


def test_concurrent_renders(tmp_path):
    # 8 threads render the same compiled template 20 times each; all must equal the first. Our
    # template calls strftime_now (renders serialised), Gemma 4's do not (renders in parallel).
    case = dict(make_cases(OWN_TEMPLATE)[0], messages=CONVERSATIONS["tools_parallel_calls"],
                tools=TOOLS)
    cases = [case] + [dict(case, template=official_path(n)) for n in OFFICIAL[1:]
                      if os.path.exists(official_path(n))]
    for case in cases:
        got = render_ours(case, tmp_path, threads=8)
        check("text" in got, "8 threads render %s identically (%s)"
              % (os.path.basename(case["template"]), got.get("error", "ok")))


def test_errors(tmp_path):
    bad = tmp_path / "bad.jinja"
    bad.write_text("{% for m in messages %}{{ m['content'] }}", encoding="utf-8")
    ctx = tmp_path / "ctx.json"
    ctx.write_text('{"messages": []}', encoding="utf-8")
    p = subprocess.run([RENDER, str(bad), str(ctx)], capture_output=True, text=True, timeout=60)
    check(p.returncode == 1 and "template error" in p.stderr,
          "unclosed for: exit 1, a template error (%r)" % p.stderr.strip())
    ctx.write_text('{"messages": [', encoding="utf-8")
    p = subprocess.run([RENDER, OWN_TEMPLATE, str(ctx)], capture_output=True, text=True, timeout=60)
    check(p.returncode == 1 and "not valid JSON" in p.stderr,
          "truncated context: exit 1, not valid JSON (%r)" % p.stderr.strip())
    ctx.write_text('["messages"]', encoding="utf-8")
    p = subprocess.run([RENDER, OWN_TEMPLATE, str(ctx)], capture_output=True, text=True, timeout=60)
    check(p.returncode == 1 and "JSON object" in p.stderr,
          "context not an object: exit 1 (%r)" % p.stderr.strip())
