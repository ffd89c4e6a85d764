#!/usr/bin/python3
"""test_chat_tool_template.py (pytest --arg=TEST_CHAT_TOOL_PARSE --arg=SOURCE_DIR) - tool calls as
Gemma 4's official chat templates render them (Python jinja2, set up as transformers does:
jinja_reference.py) parse back (chat/chat_tool_parse.c, through test_chat_tool_parse
--parse) to the arguments they were rendered from: strings with quotes, braces, newlines and
unicode, numbers (Python's str() of ints and floats: 1e-05), booleans, null, nested objects and
arrays, several calls in one turn. The templates come from $G4V_REAL_FILES (else
docs/TESTING.md "Real metadata"); skipped when absent."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import pyutil  # noqa: E402
from jinja_reference import render_replica, replica_environment  # noqa: E402

PARSE = pyutil.arg(1) if pyutil.ARGS else "test_chat_tool_parse"
SRC = pyutil.arg(2) if len(pyutil.ARGS) > 1 else os.path.normpath(os.path.join(HERE, "..", ".."))
OFFICIAL = ["gemma-4-e2b-it.chat_template.jinja",
            "gemma-4-e2b-it.chat_template.2026-07-ollama-fixture.jinja",
            "gemma-4-31b-it.chat_template.2026-07-ollama-fixture.jinja"]

CALLS = [
    ("get_weather", {"city": "Saint-Étienne \"FR\" {x:1}, [y]", "unit": "celsius", "days": 3}),
    ("search_photos", {"query": "cats\nand dogs 🙂", "filters": {"min_width": 640,
                       "taken": {"from": "2024-01-01", "To": None}, "colors": ["red", "Blue"]},
                       "boxes": [{"x": 1.5, "label": "cat"}, {"x": -2e-05}], "safe": False,
                       "big": 12345678901234, "Zeta": True, "alpha": []}),
    ("list_albums", {}),
]


def real_files_dir():
    d = os.environ.get("G4V_REAL_FILES", "")
    return os.path.normpath(d)


@pytest.mark.parametrize("name", OFFICIAL)
def test_official_tool_calls_parse_back(name):
    path = os.path.join(real_files_dir(), name)
    if not os.path.exists(path):
        pytest.skip("no %s (set G4V_REAL_FILES to the real-files folder)" % path)
    source = open(path, encoding="utf-8").read()
    case = {"messages": [
        {"role": "user", "content": "Weather, photos and albums please."},
        {"role": "assistant", "content": "",
         "tool_calls": [{"id": "c%d" % i, "type": "function",
                         "function": {"name": n, "arguments": a}}
                        for i, (n, a) in enumerate(CALLS)]}],
        "add_generation_prompt": False}
    rendered = render_replica(replica_environment(), source, case)
    start = rendered.find("<|tool_call>")
    assert start >= 0, rendered
    # the turn ends with <|tool_response> (the fixtures) or <turn|> (the first template: an
    # end-of-generation token, which the sampler stops at and never hands over as text)
    end = rendered.find("<|tool_response>", start)
    end = end + len("<|tool_response>") if end >= 0 else rendered.find("<turn|>", start)
    answer = rendered[start:end if end >= 0 else len(rendered)]
    out = subprocess.run([PARSE, "--parse"], input=answer.encode(), capture_output=True,
                         timeout=30)
    assert out.returncode == 0, out.stderr.decode() + "\n" + answer
    lines = [json.loads(x) for x in out.stdout.decode().splitlines()]
    calls, content = lines[:-1], lines[-1]["content"]
    assert [(c["name"], c["arguments"]) for c in calls] == CALLS, answer
    assert content == "", content
