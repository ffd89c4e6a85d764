#!/usr/bin/python3
"""chat_turns.py - a 5-turn conversation about one image, through the official OpenAI Python client,
against `g4v serve --lm` (prompt reuse on, and off) and llama.cpp's own `llama-server` (its prompt
cache on), on the same files in the same run: the time to first token of every turn
(docs/CHAT.md §5.4; `make bench-chat`, part of `make bench`).

The conversation: turn 1 sends the image and a question; turns 2-5 send a text follow-up each.
Every request carries the whole history, the earlier answers as assistant messages, exactly as an
OpenAI client does (the API is stateless); each is streamed, greedy, with the same max_tokens.

The servers, each with 1 slot and the same thread count, started fresh for each conversation and
run one at a time (never two at once):
  a  g4v serve --lm LM --model MMPROJ                      (prompt reuse: the default)
  b  g4v serve --lm LM --model MMPROJ --no-prompt-reuse   (every request replays the whole
                                                            conversation; left out, with a note,
                                                            when the binary has no such option)
  c  llama-server -m LM --mmproj MMPROJ                    (its slot's KV kept between requests,
                                                            its RAM prompt cache and context
                                                            checkpoints at their defaults)
After a server is up, one untimed warm-up request (another image, max_tokens 1) runs its encoder
and text model once, so turn 1 is what a running server answers, not a cold start. The three take
turns conversation by conversation (a, b, c, a, b, c, ...) REPS times; medians per turn.

Measured per turn:
  TTFT       from the call of `client.chat.completions.create` to the arrival of the first chunk
             with non-empty `delta.content` (the end of the stream if no text came): what the user
             waits for. The server's model load and the warm-up are not in it.
  cached     `usage.prompt_tokens_details.cached_tokens` of the turn (stream_options
             include_usage): the prompt tokens the server reused instead of decoding them.
  reference  "the time to prefill that turn's new text alone": on server a, after its
             conversation, a fresh one-message, text-only request made of that turn's user text
             behind a short marker (the conversation's and the turn's number, so that no
             earlier prompt shares more than the template's first tokens), max_tokens 1,
             streamed and timed like a turn: HTTP + template + the prefill of about as many
             tokens as the turn adds + one token, with nothing reused.
Targets (printed as holding or not; a missed target does not fail the run: this is a measurement):
  a / reference <= 1.3 for turns 2-5; b / a >= 5 at turn 5; c / a >= 1 on every turn (ours no
  slower), and > 1 on turn 1 (ours faster: our encoder).
Exit status: 0 when every server ran the conversation, else 1.

usage: chat_turns.py --g4v BIN --llama-server BIN --lm LM.gguf --mmproj MMPROJ.gguf --image IMG
                     [--warmup-image IMG] [--reps 3] [--threads 2] [--max-tokens 32]
                     [--ctx 2048] [--servers a,b,c] [--llama-server-arg ARG ...] [--json OUT]
"""
import argparse
import base64
import json
import mimetypes
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

try:
    import openai
except ImportError:
    sys.exit("chat_turns: the openai package is missing: run it with the python that "
             "scripts/openai-env.sh prints")

QUESTIONS = [
    "Describe this image in one sentence.",
    "Which colours stand out most in it?",
    "Is there any text or writing visible in the picture?",
    "What would be a good title for this picture?",
    "Summarise what we said about the picture in a few words.",
]
A_REF = 1.3   # a / reference at most, turns 2-5
B_OVER_A = 5  # b / a at turn 5 at least
C_OVER_A = 1  # c / a at least, every turn


class RunError(Exception):
    pass


def data_uri(path):
    mime = mimetypes.guess_type(path)[0] or "image/jpeg"
    with open(path, "rb") as f:
        return f"data:{mime};base64," + base64.b64encode(f.read()).decode()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def g4v_has_no_reuse(g4v):
    p = subprocess.run([g4v, "serve", "--help"], capture_output=True, text=True)
    return "--no-prompt-reuse" in p.stdout + p.stderr


def server_cmd(a, kind, port):
    """Server a, b (g4v) or c (llama-server); a.slots conversations at once (default 1), each
    with a.ctx context tokens."""
    slots = getattr(a, "slots", 1)
    if kind in ("a", "b"):
        cmd = [a.g4v, "serve", "--port", str(port), "--lm", a.lm, "--model", a.mmproj,
               "--lm-slots", str(slots), "--lm-threads", str(a.threads), "--threads",
               str(a.threads), "--lm-ctx", str(a.ctx), "--tokens", str(a.tokens)]
        return cmd + (["--no-prompt-reuse"] if kind == "b" else [])
    # --reasoning-format none: whatever the model writes stays in `content`, as with g4v;
    # -c is all slots' context together (llama-server gives each slot c / np)
    return [a.llama_server, "-m", a.lm, "--mmproj", a.mmproj, "--host", "127.0.0.1", "--port",
            str(port), "-np", str(slots), "-c", str(a.ctx * slots), "-t", str(a.threads),
            "-tb", str(a.threads),
            "--jinja", "--reasoning-format", "none", "--cache-prompt", "--no-webui",
            "--image-max-tokens", str(a.tokens)] + a.llama_server_arg


class Server:
    """One server process, started and waited for; stopped on exit of the with-block."""

    def __init__(self, a, kind, log_dir):
        self.kind, self.port = kind, free_port()
        self.cmd = server_cmd(a, kind, self.port)
        self.log_path = os.path.join(log_dir, f"server-{kind}.log")

    def __enter__(self):
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{self.port}/health"
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RunError(f"server {self.kind} exited {self.proc.returncode} at start:\n"
                               + self.tail())
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.2)
        else:
            raise RunError(f"server {self.kind} not ready after 600 s:\n" + self.tail())
        self.client = openai.OpenAI(base_url=f"http://127.0.0.1:{self.port}/v1", api_key="none",
                                    max_retries=0, timeout=900)
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()

    def tail(self):
        self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()[-3000:]


def streamed(srv, messages, max_tokens):
    """One streamed request: its TTFT, total time, text, usage and the server's own extras."""
    t0 = time.perf_counter()
    ttft, text, usage, extra = None, [], None, {}
    try:
        stream = srv.client.chat.completions.create(
            model="bench", messages=messages, max_tokens=max_tokens, temperature=0, stream=True,
            stream_options={"include_usage": True})
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                if ttft is None:
                    ttft = time.perf_counter() - t0
                text.append(chunk.choices[0].delta.content)
            if chunk.usage is not None:
                usage = chunk.usage
            for k in ("g4v", "timings"):  # g4v's and llama-server's own numbers, if any
                v = (chunk.model_extra or {}).get(k)
                if v:
                    extra[k] = v
    except openai.OpenAIError as e:
        raise RunError(f"server {srv.kind}: {type(e).__name__}: {e}\n{srv.tail()}")
    total = time.perf_counter() - t0
    details = getattr(usage, "prompt_tokens_details", None) if usage else None
    return {"ttft": ttft if ttft is not None else total, "text_came": ttft is not None,
            "total": total, "answer": "".join(text),
            "prompt_tokens": usage.prompt_tokens if usage else None,
            "completion_tokens": usage.completion_tokens if usage else None,
            "cached_tokens": getattr(details, "cached_tokens", None) if details else None,
            "server": extra}


def conversation(srv, a, image):
    messages, turns = [], []
    for k, q in enumerate(QUESTIONS):
        if k == 0:
            content = [{"type": "image_url", "image_url": {"url": image}},
                       {"type": "text", "text": q}]
        else:
            content = q
        messages.append({"role": "user", "content": content})
        t = streamed(srv, messages, a.max_tokens)
        turns.append(t)
        messages.append({"role": "assistant", "content": t["answer"]})
    return turns


def references(srv, rep):
    out = []
    for k, q in enumerate(QUESTIONS[1:], start=2):
        nonce = f"({rep}.{k})"  # short: the reference should add about what the turn adds
        out.append(streamed(srv, [{"role": "user", "content": f"{nonce} {q}"}], 1))
    return out


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec=".3f"):
    return "-" if x is None else format(x, spec)


def ratio(x, y):
    return None if x is None or y is None or y == 0 else x / y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--g4v", required=True)
    ap.add_argument("--llama-server", required=True)
    ap.add_argument("--lm", required=True)
    ap.add_argument("--mmproj", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--warmup-image", help="an image other than --image for the warm-up request "
                    "(default: a text-only warm-up, which leaves turn 1 the encoder's first run)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=280,
                    help="image budget: g4v's --tokens, llama-server's --image-max-tokens")
    ap.add_argument("--ctx", type=int, default=2048, help="context tokens of the one slot")
    ap.add_argument("--servers", default="a,b,c")
    ap.add_argument("--llama-server-arg", action="append", default=[],
                    help="one more argument for llama-server (repeatable), e.g. --swa-full")
    ap.add_argument("--json", help="write every raw number and the medians here")
    a = ap.parse_args()

    kinds = [k for k in a.servers.split(",") if k]
    notes = []
    if "b" in kinds and not g4v_has_no_reuse(a.g4v):
        kinds.remove("b")
        notes.append("b left out: this g4v has no --no-prompt-reuse (server a then is today's "
                     "behaviour: every request replays the conversation)")
    if "a" not in kinds:
        sys.exit("chat_turns: server a is needed (the reference and every ratio are a's)")
    image = data_uri(a.image)
    warm = data_uri(a.warmup_image) if a.warmup_image else None
    log_dir = tempfile.mkdtemp(prefix="g4v-chat-turns-")
    print(f"chat_turns: {os.path.basename(a.lm)} + {os.path.basename(a.mmproj)}, "
          f"{os.path.basename(a.image)}, {len(QUESTIONS)} turns, max_tokens {a.max_tokens}, "
          f"{a.threads} threads, servers {','.join(kinds)}, {a.reps} conversations each; "
          f"server logs in {log_dir}")
    for n in notes:
        print("  note: " + n)
    runs = []
    try:
        for rep in range(1, a.reps + 1):
            for kind in kinds:
                with Server(a, kind, log_dir) as srv:
                    wm = [{"role": "user", "content": ([{"type": "image_url", "image_url":
                                                         {"url": warm}}] if warm else [])
                           + [{"type": "text", "text": "Warm-up."}]}]
                    streamed(srv, wm, 1)
                    turns = conversation(srv, a, image)
                    ref = references(srv, rep) if kind == "a" else None
                runs.append({"rep": rep, "server": kind, "turns": turns, "reference": ref})
                print(f"  conversation {rep} on {kind}: TTFT "
                      + " ".join(f"{t['ttft']:.2f}" for t in turns) + " s; cached "
                      + " ".join(str(t["cached_tokens"]) for t in turns)
                      + (" ; reference " + " ".join(f"{t['ttft']:.2f}" for t in ref) + " s"
                         if ref else ""), flush=True)
    except RunError as e:
        print(f"chat_turns: {e}", file=sys.stderr)
        return 1

    nt = len(QUESTIONS)
    ttft = {k: [med(r["turns"][i]["ttft"] for r in runs if r["server"] == k) for i in range(nt)]
            for k in kinds}
    cached = {k: [med(r["turns"][i]["cached_tokens"] for r in runs if r["server"] == k)
                  for i in range(nt)] for k in kinds}
    prompt = {k: [med(r["turns"][i]["prompt_tokens"] for r in runs if r["server"] == k)
                  for i in range(nt)] for k in kinds}
    ref = [None] + [med(r["reference"][i - 1]["ttft"] for r in runs if r["server"] == "a")
                    for i in range(1, nt)]
    ref_tokens = [None] + [med(r["reference"][i - 1]["prompt_tokens"] for r in runs
                               if r["server"] == "a") for i in range(1, nt)]
    col = {"a": "a: g4v reuse", "b": "b: g4v replay", "c": "c: llama-server"}
    print(f"\nmedian of {a.reps}; TTFT in s (prompt tokens / cached tokens)")
    hdr = ["turn"] + [f"{col[k]}" for k in kinds] + ["reference: new text alone", "a / ref"]
    hdr += (["b / a"] if "b" in kinds else []) + (["c / a"] if "c" in kinds else [])
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" + "---:|" * (len(hdr) - 1))
    for i in range(nt):
        row = [str(i + 1)]
        for k in kinds:
            row.append(f"{fmt(ttft[k][i])} ({fmt(prompt[k][i], '.0f')} / "
                       f"{fmt(cached[k][i], '.0f')})")
        row.append(f"{fmt(ref[i])} ({fmt(ref_tokens[i], '.0f')})" if i else "")
        row.append(fmt(ratio(ttft["a"][i], ref[i]), ".2f") if i else "")
        if "b" in kinds:
            row.append(fmt(ratio(ttft["b"][i], ttft["a"][i]), ".2f"))
        if "c" in kinds:
            row.append(fmt(ratio(ttft["c"][i], ttft["a"][i]), ".2f"))
        print("| " + " | ".join(row) + " |")
    no_text = sum(1 for r in runs for t in r["turns"] if not t["text_came"])
    if no_text:
        print(f"  note: {no_text} turn(s) streamed no text: their TTFT is the end of the stream")

    targets = []
    ar = [ratio(ttft["a"][i], ref[i]) for i in range(1, nt)]
    targets.append((f"a / reference <= {A_REF} on turns 2-{nt}",
                    all(x is not None and x <= A_REF for x in ar),
                    "worst " + fmt(max((x for x in ar if x is not None), default=None), ".2f")))
    if "b" in kinds:
        x = ratio(ttft["b"][nt - 1], ttft["a"][nt - 1])
        targets.append((f"b / a >= {B_OVER_A} at turn {nt}", x is not None and x >= B_OVER_A,
                        fmt(x, ".2f")))
    else:
        targets.append((f"b / a >= {B_OVER_A} at turn {nt}", None, "b not measured"))
    if "c" in kinds:
        cr = [ratio(ttft["c"][i], ttft["a"][i]) for i in range(nt)]
        targets.append((f"c / a >= {C_OVER_A} on every turn (ours no slower)",
                        all(x is not None and x >= C_OVER_A for x in cr),
                        "lowest " + fmt(min((x for x in cr if x is not None), default=None),
                                        ".2f")))
        targets.append(("c / a > 1 on turn 1 (ours faster: the encoder)",
                        cr[0] is not None and cr[0] > 1, fmt(cr[0], ".2f")))
    print("\ntargets:")
    for what, ok, val in targets:
        verdict = "not measured" if ok is None else ("HOLDS" if ok else "MISSED")
        print(f"  {verdict:12s} {what} ({val})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": {k: v for k, v in vars(a).items()}, "questions": QUESTIONS,
                       "servers": {k: server_cmd(a, k, 0) for k in kinds}, "notes": notes,
                       "runs": runs, "median": {"ttft": ttft, "cached_tokens": cached,
                                                "prompt_tokens": prompt, "reference": ref},
                       "targets": [{"target": w, "holds": ok, "value": v}
                                   for w, ok, v in targets]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
