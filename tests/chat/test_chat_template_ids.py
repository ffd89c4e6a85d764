"""The prompt is the model's own template (docs/CHAT.md §2): for a set of conversations -- a
system prompt, several images and a video, earlier answers with their thinking (as
reasoning_content and inline), thinking on and off -- the token ids g4v serve feeds (its
"g4v": {"debug_prompt": true} field) must equal a tokenizer's ids of jinja2's rendering of the
same conversation, made the way transformers renders chat templates (tests/chat/jinja_reference.py)
and expanded the way the processor expands media.

Templates: the text model's own (the fixtures carry llama.cpp's copy of the Gemma 4 template),
always; the official ones in $G4V_REAL_FILES (docs/TESTING.md "Real metadata": the April E2B release, the July E2B/E4B and
26B/31B ones; skipped without them); and g4v's built-in format, which must equal the official July
template of its family: E2B/E4B (a model with per-layer inputs) and 26B/31B.

The media's own expansion (rows per image, a video's frame labels and rows) is taken from g4v's
prompt: it is checked against transformers elsewhere (tests/video, tests/hf); here the text
around it and every token id are.

    test_chat_template_ids.py --arg=FIXTURES --arg=CHAT_TOKENIZE --arg=SOURCE_DIR --arg=LLAMA_SRC
"""
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyutil  # noqa: E402
from pyutil import check  # noqa: E402
from serveutil import ServeProcess  # noqa: E402
import jinja_reference  # noqa: E402

G4V = os.environ.get("G4V_BIN", "g4v")
FX = pyutil.arg(1)
TOKENIZE = pyutil.arg(2)
SRC = pyutil.arg(3)
LLAMA_SRC = pyutil.arg(4)


def fx(n):
    return os.path.join(FX, n)


def real_files():
    d = os.environ.get("G4V_REAL_FILES", "")
    return d if os.path.isdir(d) else None


class Server(ServeProcess):
    def __init__(self, tmp, name, lm, vision, allowed, *args):
        super().__init__(tmp, name, [G4V, "serve", "--port", "0", "--model", vision, "--lm", lm,
                                     "--lm-threads", "1", "--threads", "1", "--lm-slots", "1",
                                     "--allow-files", allowed, "--max-images", "8", *args],
                         stop_timeout=120)
        self.label = name

    def prompt(self, messages, think):
        body = {"messages": messages, "max_tokens": 1, "temperature": 0,
                "g4v": {"debug_prompt": True}}
        if think == "effort":
            body["reasoning_effort"] = "high"
        elif think:
            body["chat_template_kwargs"] = {"enable_thinking": True}
        st, _, raw = self.request("POST", "/v1/chat/completions", body, timeout=600)
        r = json.loads(raw)
        check(st == 200, f"{self.label}: the request is answered ({st} {raw[:300]!r})")
        return r["g4v"]["prompt"] if st == 200 else None


def conversations(img1, img2, video):
    """(name, messages as the OpenAI API gives them)."""
    def image(p):
        return {"type": "image_url", "image_url": {"url": "data:image/png;base64," +
                                                   base64.b64encode(open(p, "rb").read()).decode()}}

    def vid(p):
        return {"type": "video_url", "video_url": {"url": "file://" + p}}

    def text(t):
        return {"type": "text", "text": t}

    return [
        ("system, two images", [
            {"role": "system", "content": "  You are terse.  "},
            {"role": "user", "content": [image(img1), image(img2), text("Compare them.")]}]),
        ("images, a video, earlier answers with thinking", [
            {"role": "user", "content": [image(img1), text("What is this?")]},
            {"role": "assistant", "content": "A square.", "reasoning_content": "It looks flat."},
            {"role": "user", "content": [vid(video), image(img2), text("And here? ")]},
            {"role": "assistant",
             "content": "<|channel>thought\nInline thinking.<channel|>A clip, then a picture.\n"},
            {"role": "user", "content": "  Why? Ünïcödé ✓  "}]),
        ("text only, no system", [
            {"role": "user", "content": "Hello\n\nthere"},
            {"role": "assistant", "content": "Hi."},
            {"role": "user", "content": [text("one"), text("two")]}]),
    ]


def hf_messages(messages):
    """The same conversation as transformers' processor gets it: media as typed parts."""
    out = []
    for m in messages:
        c = m["content"]
        if isinstance(c, list):
            parts = []
            for p in c:
                if p["type"] == "image_url":
                    parts.append({"type": "image"})
                elif p["type"] == "video_url":
                    parts.append({"type": "video"})
                else:
                    parts.append(p)
            m = {**m, "content": parts}
        out.append(m)
    return out


MEDIA = re.compile(r"\d+:\d\d <\|image>(?:<\|video\|>)+<image\|>(?: \d+:\d\d <\|image>(?:<\|video\|>)+<image\|>)*"
                   r"|<\|image>(?:<\|image\|>)+<image\|>")


def expand(reference, ours):
    """jinja2's rendering with each <|image|> / <|video|> placeholder replaced, in order, by the
    expansion g4v's prompt holds for that medium."""
    runs = MEDIA.findall(ours)
    out, k = [], 0
    for piece in re.split(r"(<\|image\|>|<\|video\|>)", reference):
        if piece in ("<|image|>", "<|video|>"):
            if k >= len(runs):
                return None
            kind = "<|video|>" if runs[k][0].isdigit() else "<|image|>"
            if kind != piece:
                return None
            out.append(runs[k])
            k += 1
        else:
            out.append(piece)
    return "".join(out) if k == len(runs) else None


def tokenize(text, lm):
    p = subprocess.run([TOKENIZE, lm], input=text.encode(), capture_output=True, timeout=120)
    check(p.returncode == 0, f"chat_tokenize exits 0 ({p.stderr.decode()[-200:]})")
    return json.loads(p.stdout) if p.returncode == 0 else []


def render(template_source, messages, think):
    env = jinja_reference.replica_environment()
    case = {"messages": hf_messages(messages), "add_generation_prompt": True,
            "kwargs": {"bos_token": "<bos>", "eos_token": "<eos>",
                       "enable_thinking": bool(think)}}
    return env.from_string(template_source).render(**jinja_reference.template_context(case))


def compare(server, lm, label, template_source, convs):
    for name, messages in convs:
        for think in (False, True, "effort"):
            what = f"{label}: {name}, thinking {think}"
            got = server.prompt(messages, think)
            if not got:
                continue
            ref = expand(render(template_source, messages, think), got["text"])
            check(ref is not None, f"{what}: the media placeholders match g4v's media")
            if ref is None:
                continue
            ids = tokenize(ref, lm)
            same = ids == got["ids"]
            if not same:
                i = next((i for i, (a, b) in enumerate(zip(ids, got["ids"])) if a != b),
                         min(len(ids), len(got["ids"])))
                j = next((j for j, (a, b) in enumerate(zip(ref, got["text"])) if a != b), None)
                print(f"  first differing id at {i} of {len(ids)} / {len(got['ids'])}; text "
                      f"differs at {j}: ref {ref[max(0, (j or 0) - 40):(j or 0) + 40]!r} "
                      f"ours {got['text'][max(0, (j or 0) - 40):(j or 0) + 40]!r}")
            check(same, f"{what}: token ids identical ({len(got['ids'])} ids)")


def gguf_template(lm):
    sys.path.insert(0, os.path.join(LLAMA_SRC, "gguf-py"))
    import gguf
    r = gguf.GGUFReader(lm)
    f = r.fields["tokenizer.chat_template"]
    return bytes(f.parts[f.data[0]]).decode()


def test_chat_template_ids():
    tmp = tempfile.mkdtemp(prefix="g4v_template_ids_")
    allowed = os.path.join(tmp, "allowed")
    os.makedirs(allowed)
    video = os.path.join(allowed, "clip.mp4")
    shutil.copy(fx("clip.mp4"), video)
    convs = conversations(fx("img1.png"), fx("img2.png"), video)
    lm_e, vis_e = fx("lm-e2b.gguf"), fx("vis-e2b")
    lm_l, vis_l = fx("lm-31b.gguf"), fx("vis-31b")
    servers = []
    try:
        # the model's own template (the GGUF's), rendered by our Jinja engine
        s = Server(tmp, "own", lm_e, vis_e, allowed)
        servers.append(s)
        compare(s, lm_e, "the GGUF's template", gguf_template(lm_e), convs)
        for bad in ({"reasoning_effort": "extreme"}, {"chat_template_kwargs": {"enable_thinking": 1}},
                    {"g4v": {"think": "yes"}}):
            st, _, raw = s.request("POST", "/v1/chat/completions",
                                   {"messages": [{"role": "user", "content": "x"}], **bad})
            check(st == 400 and b"invalid_parameter" in raw, f"{bad}: refused, 400 ({st} {raw[:200]!r})")
        s.stop()
        real = real_files()
        if real:
            for f in ("gemma-4-e2b-it.chat_template.jinja",
                      "gemma-4-e2b-it.chat_template.2026-07-ollama-fixture.jinja",
                      "gemma-4-31b-it.chat_template.2026-07-ollama-fixture.jinja"):
                path = os.path.join(real, f)
                s = Server(tmp, f[:20], lm_e, vis_e, allowed, "--chat-template", path)
                servers.append(s)
                compare(s, lm_e, f, open(path).read(), convs)
                s.stop()
            # ours, without a template: each family equals its official July template
            for lm, vis, f in ((lm_e, vis_e, "gemma-4-e2b-it.chat_template.2026-07-ollama-fixture.jinja"),
                               (lm_l, vis_l, "gemma-4-31b-it.chat_template.2026-07-ollama-fixture.jinja")):
                s = Server(tmp, "builtin-" + f[:12], lm, vis, allowed, "--chat-template", "builtin")
                servers.append(s)
                compare(s, lm, "built-in vs " + f, open(os.path.join(real, f)).read(), convs)
                s.stop()
    finally:
        for s in servers:
            s.stop()
    if not real_files():
        pytest.skip("the GGUF's template checked; the official templates are not there (set "
                    "G4V_REAL_FILES to the real-files folder)")
