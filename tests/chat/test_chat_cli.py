#!/usr/bin/python3
"""test_chat_cli.py (pytest --arg=FIXTURES) - `g4v chat` end to end on the synthetic models
(make_fixtures.py): deterministic answers with --seed/--temp 0, the --json report (token counts, feature-cache hits),
a multi-turn conversation on stdin that survives a bad image, and the errors (exit codes and
messages) for a wrong or mismatched model, a prompt over the context and an unreadable image."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from pyutil import check  # noqa: E402

G4V = os.environ.get("G4V_BIN", "g4v")
FX = pyutil.arg(1)


def fx(n):
    return os.path.join(FX, n)


def chat(*args, stdin=None):
    p = subprocess.run([G4V, "chat", "--threads", "1", *args], input=stdin, capture_output=True,
                       text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


E2B = ["--lm", fx("lm-e2b.gguf"), "--model", fx("vis-e2b")]
Q = ["-p", "Describe the image.", "--max-tokens", "12", "--json"]


def test_chat_cli():
    # 0. --print-prompt and --think: the prompt the model gets, as the template renders it
    rc, out, err = chat(*E2B, "--image", fx("img1.png"), "-p", "  Hi  ", "--max-tokens", "1",
                        "--json", "--print-prompt", "--temp", "0")
    r = json.loads(out) if rc == 0 else {}
    p = r.get("prompt", {})
    check(rc == 0 and p.get("ids", [None])[0] == 2 and p["ids"].count(258880) == 256 and
          len(p["ids"]) == r["tokens"]["prompt"] and "<|turn>user\n" in p["text"] and
          p["text"].endswith("Hi<turn|>\n<|turn>model\n<|channel>thought\n<channel|>"),
          f"--print-prompt --json: the whole prompt, BOS first, 256 image ids ({rc} {err[-200:]} "
          f"{str(p.get('text'))[-120:]!r})")
    rc, out, err = chat(*E2B, "-p", "Hi", "--max-tokens", "1", "--think", "--print-prompt",
                        "--temp", "0")
    check(rc == 0 and "<|turn>system\n<|think|>" in err and "g4v chat: ids: 2 " in err and
          err.split("g4v chat: ids:")[0].rstrip().endswith("Hi<turn|>\n<|turn>model"),
          f"--think --print-prompt: thinking on in the system turn, no empty thought block "
          f"({rc} {err[-300:]!r})")

    # 1. deterministic, greedy and sampled
    runs = [chat(*E2B, "--image", fx("img1.png"), *Q, "--temp", "0", "--seed", "1") for _ in range(2)]
    for rc, out, err in runs:
        check(rc == 0, f"greedy run exits 0 ({rc}: {err.strip()[-200:]})")
    j = [json.loads(out) for _, out, _ in runs]
    strip = [{k: v for k, v in x.items() if k != "timings"} for x in j]
    for x in strip:
        for m in x["media"]:
            m.pop("seconds")
    check(strip[0] == strip[1], "two greedy runs give the same JSON (timings aside)")
    r = j[0]
    check(r["ok"] and r["tokens"]["generated"] >= 1, "an answer was generated")
    check(r["media"][0]["tokens"] == 256 and r["tokens"]["image_rows"] == 256,
          "768x768 at budget 280: 256 soft tokens fed")
    check(r["tokens"]["prompt"] == r["tokens"]["prompt_text"] + 256, "prompt = text tokens + rows")
    check(r["model"]["template"] == "model" and
          "tokenizer.chat_template" in r["model"]["template_origin"] and
          r["model"]["image_attention_bidirectional"] is False,
          "e2b width: the model's own template (its GGUF's), causal image attention")
    check(r["cache"] == {"hits": 0, "misses": 1} and r["media"][0]["cache_hit"] is False,
          "first sight of an image: a cache miss")
    s = [chat(*E2B, "--image", fx("img1.png"), *Q, "--temp", "0.9", "--seed", "7") for _ in range(2)]
    check(s[0][0] == 0 and json.loads(s[0][1])["text"] == json.loads(s[1][1])["text"],
          "sampled (temp 0.9, seed 7) twice: the same answer")

    # 2. a repeated image comes from the feature cache
    rc, out, err = chat(*E2B, "--image", fx("img1.png"), "--image", fx("img1.png"), *Q, "--temp", "0")
    r = json.loads(out) if rc == 0 else {}
    check(rc == 0 and r["cache"] == {"hits": 1, "misses": 1} and
          [m["cache_hit"] for m in r["media"]] == [False, True] and r["tokens"]["image_rows"] == 512,
          "the same image twice in a prompt: the second from the cache")

    # 3. a conversation on stdin: a bad image refuses its turn only; the KV cache is kept
    conv = "\n".join(["/image " + fx("img1.png"), "What is this?", "/image " + fx("bad.jpg"),
                      "And this one?", "/image " + fx("img1.png"), "/image " + fx("img2.png"),
                      "Compare them.", "/quit", "never sent"]) + "\n"
    rc, out, err = chat(*E2B, "--json", "--temp", "0", "--max-tokens", "6", stdin=conv)
    lines = [json.loads(x) for x in out.splitlines() if x.strip()]
    check(len(lines) == 3, f"three turns reported ({len(lines)})")
    if len(lines) == 3:
        a, b, c = lines
        check(a["ok"] and not b["ok"] and c["ok"], "turn 2 (bad image) refused, turns 1 and 3 answered")
        check("bad.jpg" in b.get("error", ""), "the refusal names the file")
        check(c["tokens"]["context_used"] == a["tokens"]["context_used"] + c["tokens"]["prompt"] +
              c["tokens"]["generated"] - (1 if c["stop"] == "end_of_turn" else 0) or
              c["tokens"]["context_used"] > a["tokens"]["context_used"] + 500,
              "turn 3 continues the KV cache of turn 1")
        check(c["media"][0]["cache_hit"] is True and c["media"][1]["cache_hit"] is False,
              "turn 3: img1 from the cache, img2 encoded")
        # the context is kept: turn 3's prompt is the whole conversation, of which the earlier
        # turn (its image and text, up to its answer) is reported cached, not decoded again
        check(a["tokens"]["cached"] == 0 and c["tokens"]["cached"] > 256 and
              c["tokens"]["cached"] < c["tokens"]["prompt"] and
              c["tokens"]["context_used"] == c["tokens"]["prompt"] + c["tokens"]["generated"] -
              (1 if c["stop"] == "end_of_turn" else 0),
              f"turn 3 reports the earlier turn as cached ({a['tokens']} {c['tokens']})")
    check(rc == 0, f"the conversation exits 0 ({rc})")
    check("bad.jpg" in err, "the refused turn's error on stderr")

    # streaming text mode
    rc, out, err = chat(*E2B, "--image", fx("img1.png"), "-p", "Hi", "--max-tokens", "4", "--temp", "0")
    check(rc == 0 and out.endswith("\n"), "streaming mode prints the answer")

    # 4. the other variants: bidirectional tower with a video, unified embedder
    rc, out, err = chat("--lm", fx("lm-31b.gguf"), "--model", fx("vis-31b"), "--video", fx("clip.mp4"),
                        "--image", fx("img2.png"), *Q, "--temp", "0")
    r = json.loads(out) if rc == 0 else {}
    check(rc == 0 and r["model"]["image_attention_bidirectional"] is True and
          r["media"][0]["frames"] == 20 and r["media"][0]["tokens"] == 20 * 63 and
          r["media"][1]["tokens"] == 252, "31B-like: video (20 frames x 63) + image, bidirectional")
    # the same video twice: the second time every frame comes from the feature cache
    rc, out, err = chat("--lm", fx("lm-31b.gguf"), "--model", fx("vis-31b"), "--video", fx("clip.mp4"),
                        "--video", fx("clip.mp4"), "--frames", "4", *Q, "--temp", "0")
    r = json.loads(out) if rc == 0 else {}
    check(rc == 0 and r["media"][0]["cache_hit"] is False and r["media"][1]["cache_hit"] is True and
          r["cache"] == {"hits": 4, "misses": 4}, "a repeated video's frames come from the cache")
    rc, out, err = chat("--lm", fx("lm-12b.gguf"), "--model", fx("vis-12b"), "--image", fx("img1.png"),
                        *Q, "--temp", "0")
    r = json.loads(out) if rc == 0 else {}
    check(rc == 0 and r["model"]["vision_kind"] == "unified" and
          r["model"]["image_attention_bidirectional"] is True, "12B-like: unified, bidirectional")

    # 5. errors: exit code and message, no crash. A cut-off Gemma 4 GGUF passes our own checks
    # and fails inside llama.cpp: its logged error must reach the message (chat_session's log).
    import tempfile
    tmp = tempfile.mkdtemp(prefix="g4v-chat-cli-")
    trunc = os.path.join(tmp, "lm-cut.gguf")
    with open(fx("lm-e2b.gguf"), "rb") as f, open(trunc, "wb") as g:
        g.write(f.read(200000))
    cases = [
        (["--lm", trunc, "--model", fx("vis-e2b")], 3, "error loading model"),
        (["--lm", fx("mmproj-e2b.gguf"), "--model", fx("vis-e2b")], 3, "mmproj"),
        (["--lm", fx("lm-llama.gguf"), "--model", fx("vis-e2b")], 3, "not a Gemma 4 text model"),
        (["--lm", fx("lm-31b.gguf"), "--model", fx("vis-e2b")], 3, "1536 floats"),
        (["--lm", fx("nope.gguf"), "--model", fx("vis-e2b")], 3, "nope.gguf"),
        (E2B + ["--image", fx("img1.png"), "--ctx", "256"], 2, "does not fit in the context"),
        (E2B + ["--image", fx("bad.jpg")], 2, "bad.jpg"),
        (E2B + ["--tokens", "300"], 1, "unsupported token budget"),
        (["--model", fx("vis-e2b")], 1, "--lm"),
    ]
    for args, want, msg in cases:
        rc, out, err = chat(*args, "-p", "Hi", "--max-tokens", "2")
        check(rc == want and msg in err, f"error exit {want} with '{msg}' (got {rc}: {err.strip()[-160:]})")
