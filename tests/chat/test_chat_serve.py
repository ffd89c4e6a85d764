#!/usr/bin/python3
"""test_chat_serve.py (pytest --arg=FIXTURES) - `g4v serve --lm`: the OpenAI-compatible chat
endpoint on the synthetic models (make_fixtures.py), with plain HTTP clients against servers this
test starts on 127.0.0.1.

Answers identical to `g4v chat` for the same seed, prompt and image (text and token counts),
streamed or not; two images across two messages; the route table with --lm (every endpoint, chat
ones included, 405 with its Allow header for another method, a 404 naming all eight); the chat
page at GET / with its Content-Security-Policy, and 404 with --no-webui; an image
sent again in a later turn read from the feature cache (metrics); GET /v1/models; 429 with
Retry-After when the slot and the queue are taken; a client that hangs up mid-stream frees its
slot at once; paths outside --allow-files (and any path without it) refused 403; a data: URI
that is not an image refused 400 while the server keeps serving; a video as a data: URI
answered as g4v chat --video answers it; a budget per image; two slots answering six
concurrent requests (streamed and not, three images) exactly as one slot answers them one by
one; the limits (messages, images, context) each with its own code; SIGTERM
during a stream finishes the stream, then exit 0."""
import base64
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from serveutil import ALL_ENDPOINTS, ServeProcess, route_table_checks, sse_events  # noqa: E402
from pyutil import check  # noqa: E402

G4V = os.environ.get("G4V_BIN", "g4v")
FX = pyutil.arg(1)


FX_TMP = tempfile.mkdtemp(prefix="g4v_chat_serve_fx_")  # images made by the test


def fx(n):
    return os.path.join(FX_TMP if os.path.exists(os.path.join(FX_TMP, n)) else FX, n)


def data_uri(path, mime="image/png"):
    return f"data:{mime};base64," + base64.b64encode(open(path, "rb").read()).decode()


class Server(ServeProcess):
    def __init__(self, tmp, name, *args):
        super().__init__(tmp, name, [G4V, "serve", "--port", "0", "--model", fx("vis-e2b"),
                                     "--lm", fx("lm-e2b.gguf"), "--lm-threads", "1",
                                     "--threads", "1", *args], stop_timeout=120)

    def conn(self, timeout=300):
        return super().conn(timeout)

    def request(self, method, path, body=None, headers=None, timeout=300):
        return super().request(method, path, body, headers, timeout)

    def wait_metric(self, name, value, timeout=30):
        return super().wait_metric(name, value, timeout)

    def chat(self, body):
        st, h, raw = self.request("POST", "/v1/chat/completions", body)
        try:
            return st, h, json.loads(raw)
        except ValueError:
            return st, h, {"raw": raw}

    def stream(self, body, stop_after=None):
        """(status, events, connection, response) of a streamed chat: events parsed as JSON or
        "[DONE]"; with stop_after=N it returns after N events, the response still open."""
        c = self.conn()
        c.request("POST", "/v1/chat/completions", body=json.dumps({**body, "stream": True}),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            return r.status, [json.loads(r.read())], c, r
        return 200, sse_events(r, stop_after), c, r


def g4v_chat(*args):
    p = subprocess.run([G4V, "chat", "--threads", "1", "--lm", fx("lm-e2b.gguf"), "--model",
                        fx("vis-e2b"), "--json", *args], capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"g4v chat exits 0 ({p.stderr.strip()[-200:]})")
    return json.loads(p.stdout)


def user(text, *images):
    return {"role": "user", "content": [*({"type": "image_url", "image_url": {"url": u}}
                                          for u in images), {"type": "text", "text": text}]}


def content_of(events):
    return "".join(e["choices"][0]["delta"].get("content", "") for e in events
                   if e != "[DONE]" and e["choices"])


def test_chat_serve():
    tmp = tempfile.mkdtemp(prefix="g4v_chat_serve_")
    allowed = os.path.join(tmp, "allowed")
    os.makedirs(allowed)
    os.symlink(fx("img1.png"), os.path.join(allowed, "link-out.png"))  # resolves outside
    for n in ("img2.png", "clip.mp4"):
        with open(os.path.join(allowed, n), "wb") as f:
            f.write(open(fx(n), "rb").read())
    servers = []
    try:
        run(tmp, allowed, servers)
    finally:
        for s in servers:
            s.stop()


def run(tmp, allowed, servers):
    s = Server(tmp, "main", "--lm-slots", "1", "--max-queue", "0", "--allow-files", allowed,
               "--max-images", "3", "--max-messages", "6")
    servers.append(s)
    img1 = data_uri(fx("img1.png"))

    # 1. GET /v1/models
    st, _, body = s.request("GET", "/v1/models")
    m = json.loads(body) if st == 200 else {}
    check(st == 200 and m.get("object") == "list" and m["data"][0]["id"] == "lm-e2b.gguf",
          f"GET /v1/models names the language model ({st} {body[:200]!r})")
    # the route table with --lm: POST /v1/models is 405 (Allow: GET) as POST /v1/info is
    for ok, what in route_table_checks(s, ALL_ENDPOINTS):
        check(ok, "--lm: " + what)
    # the chat page (docs/WEBUI.md): open without a key, under a CSP without inline scripts
    st, h, body = s.request("GET", "/")
    csp = h.get("Content-Security-Policy", "")
    check(st == 200 and h.get("Content-Type", "").startswith("text/html") and
          "script-src 'self'" in csp and "unsafe-inline" not in csp and
          h.get("X-Content-Type-Options") == "nosniff" and b"<html" in body.lower(),
          f"--lm: GET / is the chat page, with its Content-Security-Policy ({st} {h})")

    # 2. identical to g4v chat: greedy and sampled, non-streamed and streamed. A sampled answer
    # is the same only for the same decode calls: the slot (or the prompt cache) still holds the
    # previous requests, so each sampled request has an image never seen before (the context is
    # cut at the image and the rest decoded as g4v chat decodes it); a request held whole has its
    # last token decoded alone (docs/CHAT.md "Prompt reuse"), close but not bit-identical
    from PIL import Image
    for name, color in (("sampled-a.png", (200, 40, 90)), ("sampled-b.png", (30, 60, 220))):
        Image.new("RGB", (768, 768), color).save(os.path.join(FX_TMP, name))
    refs = {}
    for temp, seed, img, simg in (("0", 1, "img1.png", "img1.png"),
                                  ("0.9", 7, "sampled-a.png", "sampled-b.png")):
        for name in (img, simg):
            if (temp, name) not in refs:
                refs[temp, name] = g4v_chat("--image", fx(name), "-p", "Describe the image.",
                                            "--max-tokens", "12", "--temp", temp, "--seed",
                                            str(seed))
        ref = refs[temp, img]
        req = {"model": "any", "messages": [user("Describe the image.", data_uri(fx(img)))],
               "max_tokens": 12, "temperature": float(temp), "seed": seed}
        st, _, r = s.chat(req)
        ok = st == 200 and r.get("object") == "chat.completion"
        check(ok, f"temp {temp}: POST /v1/chat/completions answers 200 ({st} {str(r)[:300]})")
        if ok:
            u = r["usage"]
            check(r["choices"][0]["message"]["content"] == ref["text"],
                  f"temp {temp}: the same text as g4v chat ({r['choices'][0]['message']['content']!r}"
                  f" vs {ref['text']!r})")
            check(u["completion_tokens"] == ref["tokens"]["generated"] and
                  u["prompt_tokens"] == ref["tokens"]["prompt"] and
                  u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"],
                  f"temp {temp}: the same token counts as g4v chat ({u} vs {ref['tokens']})")
            check(u["prompt_tokens_details"]["image_tokens"] == 256 and r["g4v"]["image_tokens"] == 256,
                  "usage counts the image's 256 soft tokens")
            check(r["choices"][0]["finish_reason"] ==
                  ("stop" if ref["stop"] == "end_of_turn" else "length"), "finish_reason")
        ref = refs[temp, simg]
        req["messages"] = [user("Describe the image.", data_uri(fx(simg)))]
        st, ev, c, _ = s.stream({**req, "stream_options": {"include_usage": True}})
        c.close()
        check(st == 200 and ev and ev[-1] == "[DONE]", f"temp {temp}: the stream ends with [DONE]")
        if st == 200 and len(ev) >= 3:
            check(ev[0]["object"] == "chat.completion.chunk" and
                  ev[0]["choices"][0]["delta"].get("role") == "assistant", "first chunk: the role")
            check(content_of(ev) == ref["text"], f"temp {temp}: streamed text = g4v chat's "
                  f"({content_of(ev)!r} vs {ref['text']!r})")
            fin = [e for e in ev[:-1] if e["choices"] and e["choices"][0]["finish_reason"]]
            usage = [e["usage"] for e in ev[:-1] if "usage" in e]
            check(len(fin) == 1 and usage and usage[0]["completion_tokens"] == ref["tokens"]["generated"]
                  and usage[0]["prompt_tokens"] == ref["tokens"]["prompt"],
                  f"temp {temp}: one finish chunk and the usage chunk with g4v chat's counts")

    # 3. two images across two messages; an image of an earlier turn comes from the cache
    from PIL import Image
    fresh = os.path.join(tmp, "fresh.png")
    Image.new("RGB", (768, 768), (12, 200, 77)).save(fresh)
    m0 = s.metrics()
    st, _, r = s.chat({"messages": [user("What is this?", data_uri(fresh))], "max_tokens": 4,
                       "temperature": 0})
    m1 = s.metrics()
    check(st == 200 and r["g4v"]["images_encoded"] == 1 and r["g4v"]["images_cached"] == 0 and
          m1["g4v_chat_images_encoded_total"] == m0["g4v_chat_images_encoded_total"] + 1,
          f"a new image is encoded ({st} {str(r)[:200]})")
    answer = r["choices"][0]["message"]["content"] if st == 200 else "x"
    st, _, r = s.chat({"messages": [user("What is this?", data_uri(fresh)),
                                    {"role": "assistant", "content": answer},
                                    user("And this one?", data_uri(fx("img2.png")))],
                       "max_tokens": 4, "temperature": 0})
    m2 = s.metrics()
    check(st == 200 and r["usage"]["prompt_tokens_details"]["image_tokens"] == 256 + 252,
          f"two images across two messages: both fed ({st} {str(r)[:300]})")
    # the slot holds the first turn (prompt reuse): its image is neither encoded nor read again
    check(st == 200 and r["g4v"]["images_reused"] == 1 and r["g4v"]["images_cached"] == 0 and
          r["g4v"]["images_encoded"] == 1 and
          m2["g4v_chat_images_reused_total"] == m1["g4v_chat_images_reused_total"] + 1 and
          m2["g4v_chat_images_encoded_total"] == m1["g4v_chat_images_encoded_total"] + 1 and
          r["usage"]["prompt_tokens_details"]["cached_tokens"] >= 256,
          f"the first turn's image in the second request: reused, not encoded again ({str(r)[:300]})")
    check(st == 200 and r["usage"]["prompt_tokens"] > 256 + 252 + 10, "prompt counts every turn")

    # 4. files: outside --allow-files refused, inside served; data: that is not an image
    for url, code, what in (("file:///etc/passwd", "file_not_allowed", "a file outside"),
                            ("file://" + fx("img1.png"), "file_not_allowed", "a fixture outside"),
                            (os.path.join(allowed, "link-out.png"), "file_not_allowed",
                             "a symlink out of the directory"),
                            (allowed + "/../allowed/../../etc/passwd", "file_not_allowed", "../")):
        st, _, r = s.chat({"messages": [user("Hi", url)], "max_tokens": 2})
        check(st == 403 and r.get("error", {}).get("code") == code and
              "/etc" not in r["error"]["message"], f"{what}: 403 {code} ({st} {str(r)[:200]})")
    st, _, r = s.chat({"messages": [user("Hi", "file://" + os.path.join(allowed, "img2.png"))],
                       "max_tokens": 2, "temperature": 0})
    check(st == 200 and r["usage"]["prompt_tokens_details"]["image_tokens"] == 252,
          f"a file under --allow-files is served ({st} {str(r)[:200]})")
    ref = g4v_chat("--video", fx("clip.mp4"), "-p", "What happens?", "--max-tokens", "3", "--temp", "0")
    st, _, r = s.chat({"messages": [{"role": "user", "content": [
        {"type": "video_url", "video_url": {"url": "file://" + os.path.join(allowed, "clip.mp4")}},
        {"type": "text", "text": "What happens?"}]}], "max_tokens": 3, "temperature": 0})
    check(st == 200 and r["usage"]["prompt_tokens"] == ref["tokens"]["prompt"] and
          r["usage"]["prompt_tokens_details"]["image_tokens"] == ref["tokens"]["image_rows"] and
          r["choices"][0]["message"]["content"] == ref["text"],
          f"a video_url part under --allow-files: as g4v chat --video ({st} {str(r)[:200]})")
    st, _, r2 = s.chat({"messages": [{"role": "user", "content": [
        {"type": "video_url", "video_url": {"url": data_uri(fx("clip.mp4"), "video/mp4")}},
        {"type": "text", "text": "What happens?"}]}], "max_tokens": 3, "temperature": 0})
    check(st == 200 and r2["usage"]["prompt_tokens"] == ref["tokens"]["prompt"] and
          r2["usage"]["prompt_tokens_details"]["image_tokens"] == ref["tokens"]["image_rows"] and
          r2["choices"][0]["message"]["content"] == ref["text"],
          f"a video as a data:video/mp4 URI: as g4v chat --video ({st} {str(r2)[:200]})")
    for url, code, what in ((data_uri(fx("clip.mp4"), "image/png"), "invalid_video_url",
                             "a video_url whose data: URI is image/png"),
                            (data_uri(fx("img1.png"), "video/mp4"), "invalid_image",
                             "a data:video/mp4 URI holding a PNG")):
        st, _, r = s.chat({"messages": [{"role": "user", "content": [
            {"type": "video_url", "video_url": {"url": url}}]}], "max_tokens": 2})
        check(st == 400 and r.get("error", {}).get("code") == code and
              r["error"]["message"].startswith("video 1: "),
              f"{what}: 400 {code}, the message naming the video ({st} {str(r)[:200]})")
    for url, what in (("data:text/plain;base64,aGVsbG8gd29ybGQ=", "text/plain"),
                      ("data:image/png;base64," + base64.b64encode(b"not an image at all").decode(),
                       "garbage bytes labelled image/png"),
                      ("data:image/png;base64,@@@", "not base64")):
        st, _, r = s.chat({"messages": [user("Hi", url)], "max_tokens": 2})
        check(st == 400 and r.get("error", {}).get("code") == "invalid_image" and
              r["error"]["type"] == "invalid_request_error", f"data: URI, {what}: 400 invalid_image "
              f"({st} {str(r)[:200]})")
    st, _, _ = s.request("GET", "/health")
    st2, _, r = s.chat({"messages": [user("Still there?")], "max_tokens": 2})
    check(st == 200 and st2 == 200, "after the refusals the server keeps serving")

    # 5. the limits, each with its code
    for body, code in (({"messages": [user("x", img1, img1, img1, img1)]}, "too_many_images"),
                       ({"messages": [user("x")] * 7}, "too_many_messages"),
                       ({"messages": [user("word " * 9000)]}, "context_length_exceeded"),
                       ({"messages": []}, "invalid_messages"),
                       ({"messages": [{"role": "tool", "content": "x"}]}, "invalid_messages"),
                       ({"messages": [user("x")], "g4v": {"tokens": 300}}, "invalid_budget"),
                       ({"messages": [user("x", "https://example.com/a.png")]}, "invalid_image_url")):
        st, _, r = s.chat({**body, "max_tokens": 2})
        check(st == 400 and r.get("error", {}).get("code") == code, f"limit: 400 {code} "
              f"({st} {str(r)[:200]})")
    st, _, raw = s.request("POST", "/v1/chat/completions", b"{not json",
                           {"Content-Type": "application/json"})
    check(st == 400 and json.loads(raw)["error"]["code"] == "invalid_json", "bad JSON: 400")
    st, _, r = s.chat({"messages": [user("Hi", img1)], "max_tokens": 2, "temperature": 0,
                       "g4v": {"tokens": 70}})
    check(st == 200 and r["usage"]["prompt_tokens_details"]["image_tokens"] == 64,
          f"\"g4v\": {{\"tokens\": 70}}: the image at budget 70 ({st} {str(r)[:200]})")
    st, _, r = s.chat({"messages": [user("Hi", img1)], "max_tokens": 2, "temperature": 0})
    check(st == 200 and r["usage"]["prompt_tokens_details"]["image_tokens"] == 256,
          f"the next request without \"g4v\" is back at the server's budget, 280 ({st} "
          f"{str(r.get('usage'))[:200]})")
    # a budget per image: the part's "g4v": {"tokens": N}; the answer is the one the same budget
    # for the whole request gives
    st, _, whole = s.chat({"messages": [user("Hi", img1, img1)], "max_tokens": 3,
                           "temperature": 0, "g4v": {"tokens": 70}})
    parts = [{"type": "image_url", "image_url": {"url": img1}, "g4v": {"tokens": 70}},
             {"type": "image_url", "image_url": {"url": img1}, "g4v": {"tokens": 70}},
             {"type": "text", "text": "Hi"}]
    st2, _, each = s.chat({"messages": [{"role": "user", "content": parts}], "max_tokens": 3,
                           "temperature": 0, "g4v": {"tokens": 560}})
    check(st == 200 and st2 == 200 and each["usage"]["prompt_tokens_details"]["image_tokens"] == 128
          and each["usage"]["prompt_tokens"] == whole["usage"]["prompt_tokens"] and
          each["choices"][0]["message"]["content"] == whole["choices"][0]["message"]["content"],
          f"each image's own budget 70 beats the request's 560, and answers as budget 70 for the "
          f"request ({st} {st2} {str(each.get('usage'))[:200]})")
    parts[1]["g4v"] = {"tokens": 280}
    st, _, r = s.chat({"messages": [{"role": "user", "content": parts}], "max_tokens": 2,
                       "temperature": 0})
    check(st == 200 and r["usage"]["prompt_tokens_details"]["image_tokens"] == 64 + 256,
          f"two images at 70 and 280 in one message: 64 + 256 rows ({st} {str(r)[:200]})")
    parts[0]["g4v"] = {"tokens": 100}
    st, _, r = s.chat({"messages": [{"role": "user", "content": parts}], "max_tokens": 2})
    check(st == 400 and r.get("error", {}).get("code") == "invalid_budget" and
          "content[0]" in r["error"]["message"],
          f"an image's budget 100: 400 invalid_budget naming the part ({st} {str(r)[:200]})")

    # 6. one slot, no queue: 429 while a stream runs; its client hangs up; the slot is free at once
    long = {"messages": [user("Tell me a long story.")], "max_tokens": 4000, "temperature": 1.0,
            "seed": 3}
    st, ev, c, _ = s.stream(long, stop_after=3)
    check(st == 200 and s.wait_metric("g4v_chat_slots_busy", 1), "a long stream holds the slot")
    st, h, r = s.chat({"messages": [user("Me too")], "max_tokens": 2})
    check(st == 429 and h.get("Retry-After") == "1" and r["error"]["code"] == "queue_full",
          f"slot and queue taken: 429 queue_full with Retry-After ({st} {h.get('Retry-After')})")
    cancelled = s.metrics()["g4v_chat_cancelled_total"]
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    t0 = time.time()
    freed = s.wait_metric("g4v_chat_slots_busy", 0, timeout=10)
    t_free = time.time() - t0
    check(freed and t_free < 2.0, f"the client hung up: the slot is free in {t_free:.3f} s")
    t0 = time.time()
    st, _, r = s.chat({"messages": [user("Next")], "max_tokens": 2, "temperature": 0})
    check(st == 200 and time.time() - t0 < 30, f"the next request is answered at once ({st})")
    check(s.metrics()["g4v_chat_cancelled_total"] == cancelled + 1, "the hang-up is counted")
    # the same for a non-streamed answer: its connection is suspended, only the socket tells
    sock = socket.create_connection(("127.0.0.1", s.port))
    body = json.dumps(long).encode()
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                 b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    check(s.wait_metric("g4v_chat_slots_busy", 1), "a long non-streamed answer holds the slot")
    time.sleep(0.3)
    sock.close()
    t0 = time.time()
    freed = s.wait_metric("g4v_chat_slots_busy", 0, timeout=10)
    t_free = time.time() - t0
    check(freed and t_free < 2.0, f"its client hung up: the slot is free in {t_free:.3f} s")
    check(s.metrics()["g4v_chat_cancelled_total"] == cancelled + 2, "that hang-up is counted too")

    # 7. two slots answering at once (make tsan-serve runs this under ThreadSanitizer): six
    # requests from six threads, streamed and not, over three images encoded concurrently into
    # the shared vision model and feature cache, and one client hanging up mid-stream; every
    # answer equals the one-slot server's for the same request (--lm-threads 1, fixed seeds).
    # Both without prompt reuse: a sampled answer depends on the decode calls of its prompt
    # (docs/CHAT.md "Prompt reuse"), and with reuse those depend on each slot's history.
    # test_chat_reuse.py checks the slots with reuse on. The two slots with --lm-no-batching
    # (each decode call one slot's), so that an answer does not depend on what the other slot
    # does; batched (the default), the same round greedy after it (7a): the logits move by
    # llama.cpp's rounding with the calls' shapes (tests/chat/test_chat_engine.c measures it).
    import threading
    s = Server(tmp, "one-slot", "--no-prompt-reuse")
    servers.append(s)
    s3 = Server(tmp, "slots", "--lm-slots", "2", "--max-queue", "8", "--no-prompt-reuse",
                "--lm-no-batching")
    servers.append(s3)
    other = os.path.join(tmp, "other.png")
    Image.new("RGB", (500, 300), (200, 30, 90)).save(other)
    imgs = [img1, data_uri(fx("img2.png")), data_uri(other)]
    reqs = [{"messages": [user(f"Question {i}.", imgs[i % 3])], "max_tokens": 8,
             "temperature": 0.9, "seed": 100 + i} for i in range(6)]
    want = []
    for q in reqs:
        st, _, r = s.chat(q)
        want.append(r["choices"][0]["message"]["content"] if st == 200 else f"status {st}")
    got = [None] * 6

    def client(i):
        if i % 2:
            st, ev, c, _ = s3.stream(reqs[i])
            c.close()
            got[i] = content_of(ev) if st == 200 and ev and ev[-1] == "[DONE]" else f"status {st}"
        else:
            st, _, r = s3.chat(reqs[i])
            got[i] = r["choices"][0]["message"]["content"] if st == 200 else f"status {st} {r}"

    def quitter():
        st, ev, c, _ = s3.stream({**reqs[0], "max_tokens": 200}, stop_after=2)
        c.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(6)]
    threads.append(threading.Thread(target=quitter))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    for i in range(6):
        check(got[i] == want[i], f"two slots, request {i}: the one-slot answer ({got[i]!r} vs "
              f"{want[i]!r})")
    st, _, r = s3.chat(reqs[1])
    check(st == 200 and r["choices"][0]["message"]["content"] == want[1],
          "two slots: still serving after the concurrent round")
    m = s3.metrics()
    check(m["g4v_chat_decode_shared_calls_total"] == 0 and m["g4v_chat_decode_calls_total"] > 0,
          f"--lm-no-batching: no decode call shared ({m['g4v_chat_decode_calls_total']} calls)")

    # 7a. batched (the default): six greedy requests at once on two slots, each with an image,
    # all answered, in decode calls shared by both slots; how many answers equal the one-slot
    # server's greedy ones is printed (a near-tie may flip: docs/CHAT_API.md §3). The three
    # images are in its feature cache first (one request each): where encoding is slow next to
    # answering (ThreadSanitizer instruments the encoder, not llama.cpp), one slot's image would
    # otherwise be encoded while the other answers, and the answers would never overlap.
    s4 = Server(tmp, "batched", "--lm-slots", "2", "--max-queue", "8", "--no-prompt-reuse")
    servers.append(s4)
    greedy = [{**q, "temperature": 0, "max_tokens": 16} for q in reqs]
    want = [s.chat(q)[2]["choices"][0]["message"]["content"] for q in greedy]
    for q in greedy[:3]:
        st, _, r = s4.chat({**q, "max_tokens": 1})
        check(st == 200, f"batched: an image into the feature cache ({st})")
    got = [None] * 6

    def greedy_client(i):
        st, _, r = s4.chat(greedy[i])
        got[i] = r["choices"][0]["message"]["content"] if st == 200 else f"status {st} {r}"

    threads = [threading.Thread(target=greedy_client, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    check(all(g is not None and not g.startswith("status") for g in got),
          f"batched: six greedy answers at once ({sum(g == w for g, w in zip(got, want))} of 6 "
          "equal to the one-slot server's)")
    m = s4.metrics()
    check(m["g4v_chat_decode_shared_calls_total"] > 0,
          f"batched: {m['g4v_chat_decode_shared_calls_total']:.0f} of "
          f"{m['g4v_chat_decode_calls_total']:.0f} decode calls held both slots")

    # 7b. paths refused on a server without --allow-files
    s2 = Server(tmp, "nofiles", "--drain-seconds", "0", "--request-timeout", "4", "--no-webui")
    servers.append(s2)
    st, _, raw = s2.request("GET", "/")
    check(st == 404 and b"--no-webui" in raw, f"--no-webui: GET / is 404 ({st} {raw[:200]!r})")
    st, _, r = s2.chat({"messages": [user("Hi", os.path.join(allowed, "img2.png"))]})
    check(st == 403 and r["error"]["code"] == "files_not_allowed",
          f"no --allow-files: every path refused 403 ({st} {str(r)[:200]})")

    # 8. --request-timeout: the answer ends there, finish_reason "length"
    t0 = time.time()
    st, _, r = s2.chat({"messages": [user("Go on and on.")], "max_tokens": 4000, "temperature": 1.0,
                        "seed": 9})
    check(st == 200 and r["g4v"]["stop"] == "timeout" and r["choices"][0]["finish_reason"] == "length"
          and time.time() - t0 < 8, f"--request-timeout 4: stopped at the limit ({st} "
          f"{time.time() - t0:.1f} s {str(r.get('g4v'))[:200]})")
    check(s2.metrics()["g4v_chat_timeouts_total"] == 1, "the timeout is counted")

    # 9. SIGTERM during a stream (--drain-seconds 0: that bounds bodies still arriving, not answers): the stream is finished, then the server exits 0
    st, ev, c, resp = s2.stream({"messages": [user("Count.")], "max_tokens": 40, "temperature": 1.0,
                           "seed": 5}, stop_after=2)
    check(st == 200, "a stream started")
    s2.p.send_signal(signal.SIGTERM)
    rest = sse_events(resp)
    c.close()
    fin = [e for e in rest if e != "[DONE]" and e["choices"] and e["choices"][0]["finish_reason"]]
    check(rest and rest[-1] == "[DONE]" and len(fin) == 1,
          f"SIGTERM: the stream in flight is finished ({len(rest)} more events)")
    check(s2.p.wait(timeout=120) == 0, "then the server exits 0")
