#!/usr/bin/python3
"""test_chat_sampling_api.py (pytest --arg=FIXTURES) - the sampling fields of POST
/v1/chat/completions that the chat page's settings send (docs/CHAT_API.md, docs/WEBUI.md):
top_k and min_p, besides temperature, top_p and stop, on the synthetic models (make_fixtures.py).

A sampled answer (temperature 1.5, a seed) differs from the greedy one (on these models an empty
answer: the end of the turn is the likeliest token), and becomes the greedy one with top_k 1 or
with min_p 1 (both keep only the likeliest token); top_k N is g4v chat's --top-k N
for the same seed; out-of-range or non-integer values are 400 invalid_parameter; GET /v1/info
names the limits the page checks before sending (max_body_bytes, max_images, the context).
--no-prompt-reuse and one thread: every request decodes its whole prompt, as g4v chat does.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from pyutil import check  # noqa: E402
from serveutil import ServeProcess, with_servers  # noqa: E402

G4V = os.environ.get("G4V_BIN", "g4v")
FX = pyutil.arg(1)
PROMPT = "Write a short poem about the sea."
TOKENS = 16
TEMP = 1.5


def answer(s, **fields):
    body = {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": TOKENS, **fields}
    st, _, raw = s.request("POST", "/v1/chat/completions", body, None, 300)
    j = json.loads(raw)
    return st, (j["choices"][0]["message"]["content"] if st == 200 else j)


def g4v_chat(*args):
    p = subprocess.run([G4V, "chat", "--threads", "1", "--model", os.path.join(FX, "vis-e2b"),
                        "--lm", os.path.join(FX, "lm-e2b.gguf"), "--json", "-p", PROMPT, "--max-tokens",
                        str(TOKENS), *args], capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"g4v chat exits 0 ({p.stderr.strip()[-300:]})")
    return json.loads(p.stdout)["text"] if p.returncode == 0 else None


def test_chat_sampling_api():
    def run(tmp, servers):
        s = ServeProcess(tmp, "main", [G4V, "serve", "--port", "0", "--model",
                                       os.path.join(FX, "vis-e2b"), "--lm",
                                       os.path.join(FX, "lm-e2b.gguf"), "--lm-threads", "1",
                                       "--threads", "1", "--no-prompt-reuse", "--max-images", "5",
                                       "--lm-ctx", "2048"],
                         stop_timeout=120)
        servers.append(s)
        st, greedy = answer(s, temperature=0)
        check(st == 200 and isinstance(greedy, str), f"the greedy answer ({st} {greedy!r})")
        # a seed whose sampled answer is not the greedy one: otherwise the checks below prove
        # nothing
        seed, sampled = None, None
        for sd in range(1, 9):
            st, a = answer(s, temperature=TEMP, seed=sd)
            if st == 200 and a != greedy:
                seed, sampled = sd, a
                break
        check(seed is not None, f"a sampled answer differs from the greedy one (seed {seed})")
        for field, v in (("top_k", 1), ("min_p", 1)):
            st, a = answer(s, temperature=TEMP, seed=seed, **{field: v})
            check(st == 200 and a == greedy,
                  f"{field} {v} keeps only the likeliest token: the greedy answer ({st} {a!r} vs "
                  f"{greedy!r}; without it {sampled!r})")
        st, a = answer(s, temperature=TEMP, seed=seed, top_k=3)
        ref = g4v_chat("--temp", str(TEMP), "--seed", str(seed), "--top-k", "3")
        check(st == 200 and a == ref, f"top_k 3 is g4v chat's --top-k 3 ({a!r} vs {ref!r})")
        st, a = answer(s, temperature=TEMP, seed=seed, min_p=0.05)
        check(st == 200 and isinstance(a, str), f"min_p 0.05 is served ({st} {a!r})")
        for fields in ({"top_k": 2.5}, {"top_k": -2}, {"top_k": 1001}, {"top_k": "3"},
                       {"min_p": 1.5}, {"min_p": -0.1}):
            st, j = answer(s, **fields)
            err = j.get("error", {}) if isinstance(j, dict) else {}
            name = next(iter(fields))
            check(st == 400 and err.get("code") == "invalid_parameter" and name in err.get("message", ""),
                  f"{fields}: 400 invalid_parameter naming the field ({st} {j})")
        st, _, raw = s.request("GET", "/v1/info")
        info = json.loads(raw) if st == 200 else {}
        sv, tm = info.get("service", {}), info.get("text_model", {})
        check(sv.get("max_images") == 5 and sv.get("max_body_bytes", 0) > 0 and
              tm.get("context") == 2048,
              f"GET /v1/info names max_images, max_body_bytes and the context ({sv} {tm})")

    with_servers("g4v-sampling-", run)

