#!/usr/bin/python3
"""chat_batch.py - conversations at once on one text model: `g4v serve --lm --lm-slots 4` against
llama.cpp's `llama-server -np 4` on the same files in the same run (docs/CHAT_API.md §3;
`make bench-chat`, part of `make bench`).

Each conversation is one streamed, greedy request: an image of its own (DIR's turn-K.jpg, one
square image turned and marked, so that no server reuses another conversation's encoding or
prompt) and a question,
max_tokens answer tokens. Per server (started fresh, warmed up with another image, one server at
a time; the two take turns REPS times; medians):
  alone      one conversation on the idle server
  together   SLOTS conversations sent at once
  late       SLOTS-1 conversations sent at once; when all of them stream, one more arrives
Measured:
  gen tok/s  generated tokens per second: of a stream, (tokens - 1) / (last chunk - first
             chunk); together, (span) all streams' (tokens - 1) over the span from the first
             stream's first chunk to the last stream's last chunk (the others' prefills inside it
             count against them: an image's rows are decoded in a call of their own, which the
             others wait for, on both servers), and (all streaming) the chunks of all streams
             between the last stream's first chunk and the first stream's last chunk over that
             window: the batched generation alone
  done       together, from sending to the last stream's last chunk, and all streams' tokens
             over it (tok/s, sent to done): the whole, images' encodings and prefills in
  gap        time between two chunks of one stream (median and p95 over all streams)
  TTFT       the late conversation's time to first token against the alone one's
Targets (printed as holding or not; this is a measurement): g4v together (all streaming) /
g4v alone >= 2.5; g4v together >= llama-server together (all streaming; sent to done); g4v late TTFT / alone
TTFT <= 1.5.

usage: chat_batch.py make-images IMG DIR [N]      (Debian's python3: Pillow)
       chat_batch.py --g4v BIN --llama-server BIN --lm LM.gguf --mmproj MMPROJ.gguf --images DIR
                     --warmup-image IMG [--slots 4] [--reps 3] [--threads 2]
                     [--max-tokens 128] [--ctx 2048] [--servers a,c] [--json OUT]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time


TOGETHER_OVER_ALONE = 2.5
LATE_OVER_ALONE = 1.5
QUESTION = "Describe this image in detail."


def make_images(src, out_dir, n):
    """n JPEGs of the image turned 0, 90, 180, 270 degrees, each with a corner of its own: the
    same size (and rows, for a square image), different pixels. Needs Pillow (Debian's python3;
    the OpenAI venv has none)."""
    from PIL import Image
    im = Image.open(src).convert("RGB")
    os.makedirs(out_dir, exist_ok=True)
    for k in range(n):
        v = im.rotate(90 * (k % 4), expand=True)
        v.paste((16 * k % 256, 255 - 16 * k % 256, 128), (0, 0, 32, 32))
        v.save(os.path.join(out_dir, f"turn-{k}.jpg"), quality=92)


if __name__ == "__main__" and sys.argv[1:2] == ["make-images"]:  # before the client is needed
    make_images(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 9)
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chat_turns import RunError, Server, data_uri, openai  # noqa: E402



def stream_one(srv, image, max_tokens, out):
    """One streamed conversation; its chunks' arrival times into out (a dict)."""
    t0 = time.perf_counter()
    times, usage = [], None
    try:
        stream = srv.client.chat.completions.create(
            model="bench", max_tokens=max_tokens, temperature=0, stream=True,
            stream_options={"include_usage": True},
            messages=[{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": image}},
                {"type": "text", "text": QUESTION}]}])
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                times.append(time.perf_counter())
            if chunk.usage is not None:
                usage = chunk.usage
    except openai.OpenAIError as e:
        out["error"] = f"server {srv.kind}: {type(e).__name__}: {e}"
        return
    out.update(t0=t0, times=times, end=time.perf_counter(),
               tokens=usage.completion_tokens if usage else len(times))


def run_streams(srv, images, max_tokens, late=None, warmup=False):
    """len(images) conversations at once; with late, one more sent when all of them stream."""
    res = [{} for _ in images]
    th = [threading.Thread(target=stream_one, args=(srv, im, max_tokens, r))
          for im, r in zip(images, res)]
    for t in th:
        t.start()
    late_res = None
    if late is not None:
        while not all(r.get("times") or "error" in r or "end" in r for r in res):
            time.sleep(0.01)
        late_res = {}
        stream_one(srv, late, max_tokens, late_res)
    for t in th:
        t.join()
    for r in res + ([late_res] if late_res else []):
        if "error" in r:
            raise RunError(r["error"] + "\n" + srv.tail())
        if len(r["times"]) < 2 and not warmup:
            raise RunError(f"server {srv.kind}: a stream sent {len(r['times'])} chunks of text; "
                           "the model stopped at once (make the images from another picture)")
    return res, late_res


def gen_rate(streams):
    first = min(r["times"][0] for r in streams)
    last = max(r["times"][-1] for r in streams)
    return sum(r["tokens"] - 1 for r in streams) / (last - first)


def done_s(streams):
    """Seconds from sending the conversations to the last one's last chunk."""
    return max(r["times"][-1] for r in streams) - min(r["t0"] for r in streams)


def done_rate(streams):
    """All streams' generated tokens over done_s: the whole of it, encoding and prefill in."""
    return sum(r["tokens"] for r in streams) / done_s(streams)


def steady_rate(streams):
    """Tokens per second while every stream streams: the chunks between the last stream's first
    chunk and the first stream's last chunk, over that window (None if there is none)."""
    lo = max(r["times"][0] for r in streams)
    hi = min(r["times"][-1] for r in streams)
    if hi <= lo:
        return None
    return sum(sum(1 for t in r["times"] if lo < t <= hi) for r in streams) / (hi - lo)


def gaps(streams):
    return [b - a for r in streams for a, b in zip(r["times"], r["times"][1:])]


def fmt(x, spec=".1f"):
    return "-" if x is None else format(x, spec)


def ratio(x, y):
    return None if x is None or y is None or y == 0 else x / y


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None


def measure(srv, a, ims):
    """alone, together, late on a running server, each conversation with an image of its own
    (the same ones every repetition: each server is started fresh)."""
    alone, _ = run_streams(srv, ims[:1], a.max_tokens)
    together, _ = run_streams(srv, ims[1:1 + a.slots], a.max_tokens)
    rest, late = run_streams(srv, ims[1 + a.slots:2 * a.slots], a.max_tokens,
                             late=ims[2 * a.slots])
    r0 = alone[0]
    return {"alone_ttft": r0["times"][0] - r0["t0"], "alone_rate": gen_rate(alone),
            "alone_gaps": gaps(alone), "together_rate": gen_rate(together),
            "steady_rate": steady_rate(together),
            "together_gaps": gaps(together),
            "together_ttft": [r["times"][0] - r["t0"] for r in together],
            "together_done": done_s(together), "done_rate": done_rate(together),
            "late_ttft": late["times"][0] - late["t0"],
            "tokens": [r["tokens"] for r in alone + together + rest + [late]]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--g4v", required=True)
    ap.add_argument("--llama-server", required=True)
    ap.add_argument("--lm", required=True)
    ap.add_argument("--mmproj", required=True)
    ap.add_argument("--images", required=True, help="the folder of make-images")
    ap.add_argument("--warmup-image", required=True)
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--tokens", type=int, default=280,
                    help="image budget: g4v's --tokens, llama-server's --image-max-tokens")
    ap.add_argument("--ctx", type=int, default=2048, help="context tokens of each slot")
    ap.add_argument("--servers", default="a,c", help="a: g4v serve, c: llama-server")
    ap.add_argument("--llama-server-arg", action="append", default=[])
    ap.add_argument("--json")
    a = ap.parse_args()
    kinds = [k for k in a.servers.split(",") if k in ("a", "c")]
    n = 2 * a.slots + 1
    ims = [data_uri(os.path.join(a.images, f"turn-{k}.jpg")) for k in range(n)]
    warm = data_uri(a.warmup_image)
    log_dir = tempfile.mkdtemp(prefix="g4v-chat-batch-")
    print(f"chat_batch: {os.path.basename(a.lm)} + {os.path.basename(a.mmproj)}, "
          f"{n} images of {a.images}, {a.slots} slots, max_tokens "
          f"{a.max_tokens}, {a.threads} threads, servers {','.join(kinds)}, {a.reps} reps; "
          f"logs in {log_dir}", flush=True)
    runs = []
    try:
        for rep in range(a.reps):
            for kind in kinds:
                with Server(a, kind, log_dir) as srv:
                    run_streams(srv, [warm], 1, warmup=True)
                    m = measure(srv, a, ims)
                m["server"] = kind
                runs.append(m)
                print(f"  rep {rep + 1} {kind}: alone {m['alone_rate']:.1f} tok/s, TTFT "
                      f"{m['alone_ttft']:.2f} s; together {m['together_rate']:.1f} tok/s over "
                      f"the span, {fmt(m['steady_rate'])} while all stream, "
                      f"{m['done_rate']:.1f} sent to done ({m['together_done']:.1f} s, TTFTs "
                      f"{', '.join(f'{t:.1f}' for t in sorted(m['together_ttft']))}); late TTFT "
                      f"{m['late_ttft']:.2f} s; tokens {m['tokens']}", flush=True)
    except RunError as e:
        print(f"chat_batch: {e}", file=sys.stderr)
        return 1

    def med(kind, key):
        xs = [r[key] for r in runs if r["server"] == kind and r[key] is not None]
        return statistics.median(xs) if xs else None

    def allgaps(kind, key):
        return [g for r in runs if r["server"] == kind for g in r[key]]

    col = {"a": "g4v serve", "c": "llama-server"}
    print(f"\nmedian of {a.reps}; gaps over all streams of all repetitions; tok/s of generated "
          "tokens")
    print("| server | alone | together, span | together, all streaming | all streaming / alone "
          "| together, sent to done | done (s) "
          "| gap alone median / p95 (ms) | gap together median / p95 (ms) | TTFT alone (s) | "
          "TTFT late (s) | late / alone |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    summary = {}
    for k in kinds:
        s = {key: med(k, key) for key in ("alone_rate", "together_rate", "steady_rate",
                                          "done_rate", "together_done", "alone_ttft",
                                          "late_ttft")}
        ga, gt = allgaps(k, "alone_gaps"), allgaps(k, "together_gaps")
        s.update(gap_alone=[statistics.median(ga), pct(ga, 0.95)],
                 gap_together=[statistics.median(gt), pct(gt, 0.95)])
        summary[k] = s
        print(f"| {col[k]} | {s['alone_rate']:.1f} | {s['together_rate']:.1f} | "
              f"{fmt(s['steady_rate'])} | {fmt(ratio(s['steady_rate'], s['alone_rate']), '.2f')} "
              f"| {s['done_rate']:.1f} | {s['together_done']:.1f} "
              f"| {1e3 * s['gap_alone'][0]:.0f} / {1e3 * s['gap_alone'][1]:.0f} | "
              f"{1e3 * s['gap_together'][0]:.0f} / {1e3 * s['gap_together'][1]:.0f} | "
              f"{s['alone_ttft']:.2f} | {s['late_ttft']:.2f} | "
              f"{s['late_ttft'] / s['alone_ttft']:.2f} |")
    g = summary.get("a")
    targets = []
    if g:
        x = ratio(g["steady_rate"], g["alone_rate"])
        targets.append((f"g4v together (all streaming) / alone >= {TOGETHER_OVER_ALONE}",
                        x is not None and x >= TOGETHER_OVER_ALONE, fmt(x, ".2f")))
        x = g["late_ttft"] / g["alone_ttft"]
        targets.append((f"g4v late TTFT / alone <= {LATE_OVER_ALONE}", x <= LATE_OVER_ALONE,
                        f"{x:.2f}"))
        if "c" in summary:
            for key, what in (("steady_rate", "all streaming"), ("done_rate", "sent to done")):
                x = ratio(g[key], summary["c"][key])
                targets.append((f"g4v together >= llama-server together ({what})",
                                x is not None and x >= 1, fmt(x, ".2f")))
    print("\ntargets:")
    for what, ok, val in targets:
        print(f"  {'HOLDS' if ok else 'MISSED':12s} {what} ({val})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": vars(a), "runs": runs, "median": summary,
                       "targets": [{"target": w, "holds": ok, "value": v}
                                   for w, ok, v in targets]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
