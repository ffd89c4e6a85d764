#!/usr/bin/python3
"""test_chat_reuse_serve.py FIXTURES - prompt reuse in g4v serve --lm (docs/CHAT.md "Prompt
reuse", docs/PROMPT_CACHE.md), on the synthetic e2b models.

A 5-turn conversation about an image (greedy, each request carrying the whole history with the
earlier answers, as an OpenAI client sends it) gives the same answers with reuse on and off
(--no-prompt-reuse), streamed and not, with 1 and 2 slots, with two conversations interleaved,
and with a client hanging up mid-stream; with reuse on, turns 2-5 report the earlier prompt as
cached_tokens and the image as reused (neither encoded nor decoded). With one slot and two
interleaved conversations, each resumes from the prompt cache. The prompt cache on disk
(--cache) survives SIGKILL of the server: a restarted server resumes a conversation from it;
a state file cut short is refused (counted, deleted) and the prompt decoded again, with the same
answer."""
import glob
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pyutil import check  # noqa: E402
from serveutil import with_servers  # noqa: E402
from test_chat_serve import Server, content_of, data_uri, fx, user  # noqa: E402

QUESTIONS = ["What is in this picture?", "And the colours?", "Say more.", "Why?", "Thanks. Last?"]


def ask(s, history, q, image=None, stream=False):
    """Sends history + the question; returns (answer, usage or None, g4v extension or None)."""
    msgs = history + [user(q, image) if image else user(q)]
    body = {"messages": msgs, "max_tokens": 8, "temperature": 0}
    if stream:
        st, ev, c, _ = s.stream(body)
        c.close()
        check(st == 200 and ev and ev[-1] == "[DONE]", f"stream of {q!r}: complete ({st})")
        return content_of(ev), None, None
    st, _, r = s.chat(body)
    check(st == 200, f"{q!r}: 200 ({st} {str(r)[:200]})")
    if st != 200:
        return f"status {st}", None, None
    return r["choices"][0]["message"]["content"], r["usage"], r["g4v"]


def conversation(s, image, stream_turns=(), hangup_turn=None):
    """The five turns; answers, usages and g4v extensions per turn."""
    history, answers, usages, exts = [], [], [], []
    for t, q in enumerate(QUESTIONS):
        img = image if t == 0 else None
        if t == hangup_turn:  # a client that hangs up after two chunks of a long answer
            body = {"messages": history + [user(q, img) if img else user(q)],
                    "max_tokens": 200, "temperature": 0}
            st, ev, c, _ = s.stream(body, stop_after=2)
            c.close()
            s.wait_metric("g4v_chat_slots_busy", 0)
        a, u, g = ask(s, history, q, img, stream=t in stream_turns)
        answers.append(a)
        usages.append(u)
        exts.append(g)
        history += [user(q, img) if img else user(q), {"role": "assistant", "content": a}]
    return answers, usages, exts


def test_chat_reuse_serve():
    with_servers("g4v_chat_reuse_", run)


def run(tmp, servers):
    img_a, img_b = data_uri(fx("img1.png")), data_uri(fx("img2.png"))
    # reference: no reuse
    off = Server(tmp, "off", "--no-prompt-reuse")
    servers.append(off)
    ref_a, use_off, _ = conversation(off, img_a)
    ref_b, _, _ = conversation(off, img_b)
    check(all(u and u["prompt_tokens_details"]["cached_tokens"] == 0 for u in use_off),
          "--no-prompt-reuse: nothing cached")
    check(off.metrics().get("g4v_chat_prompt_cache_hits_total") is None,
          "--no-prompt-reuse: no prompt cache")
    off.stop()

    # one slot, reuse on, prompt cache on disk
    cache = os.path.join(tmp, "cache")
    on = Server(tmp, "on", "--cache", cache)
    servers.append(on)
    ans, use, ext = conversation(on, img_a)
    check(ans == ref_a, f"reuse on: the same 5 greedy answers ({ans} vs {ref_a})")
    # the fixtures' template (llama.cpp's copy of the 31B one) ends its generation prompt in the
    # empty thought block "<|channel>thought\n<channel|>" (4 tokens), which an earlier answer's
    # rendering has not: the context is kept up to the earlier turn's "<|turn>model\n" exactly
    for t in range(1, 5):
        prev = use[t - 1]["prompt_tokens"] + use[t - 1]["completion_tokens"] - 1
        c = use[t]["prompt_tokens_details"]["cached_tokens"]
        check(c == use[t - 1]["prompt_tokens"] - 4 and c < use[t]["prompt_tokens"],
              f"turn {t + 1}: the earlier turns cached ({c} of {use[t]['prompt_tokens']}, "
              f"{prev} held)")
        check(ext[t]["images_reused"] == 1 and ext[t]["images_encoded"] == 0 and
              ext[t]["images_cached"] == 0, f"turn {t + 1}: the image reused ({ext[t]})")
    check(use[0]["prompt_tokens_details"]["cached_tokens"] == 0, "turn 1: nothing cached")
    # the time to the first token of a reused turn is its prefill and little else (the request's
    # parse, the replay, the first sample): issue 47 measured 0.11 s more, the time to the first
    # visible piece; 20 ms is the target, the median is held to 50 ms on a loaded machine
    extra = sorted(e["time_to_first_token_s"] - e["prefill_s"] for e in ext[1:])
    check(extra[len(extra) // 2] < 0.05, f"turns 2-5: time to first token - prefill_s "
          f"{[round(x, 4) for x in extra]} s (median under 0.05)")
    # streamed turns and a client that hangs up mid-stream in turn 3
    ans, _, _ = conversation(on, img_a, stream_turns=(1, 3), hangup_turn=2)
    check(ans == ref_a, f"streamed, with a hang-up: the same answers ({ans} vs {ref_a})")
    # two conversations interleaved on one slot: each resumes from the prompt cache
    m0 = on.metrics()
    hist = {"a": [], "b": []}
    got = {"a": [], "b": []}
    for t, q in enumerate(QUESTIONS):
        for k, img, in (("a", img_a), ("b", img_b)):
            a, u, g = ask(on, hist[k], q, img if t == 0 else None)
            got[k].append(a)
            hist[k] += [user(q, img) if t == 0 else user(q), {"role": "assistant", "content": a}]
            if t:
                check(u["prompt_tokens_details"]["cached_tokens"] > 200,
                      f"one slot, interleaved, {k} turn {t + 1}: resumed "
                      f"({u['prompt_tokens_details']['cached_tokens']} cached)")
    m1 = on.metrics()
    check(got["a"] == ref_a and got["b"] == ref_b, "one slot, interleaved: the same answers")
    hits = m1["g4v_chat_prompt_cache_hits_total"] - m0["g4v_chat_prompt_cache_hits_total"]
    check(hits >= 8, f"one slot, interleaved: turns 2-5 of both from the prompt cache ({hits})")
    check(m1["g4v_chat_prompt_cache_stores_total"] > m0["g4v_chat_prompt_cache_stores_total"],
          "the states were stored")

    # SIGKILL: the disk tier holds conversation b's state (stored when a took the slot)
    on.wait_metric("g4v_chat_prompt_cache_disk_entries", m1["g4v_chat_prompt_cache_disk_entries"])
    files = glob.glob(os.path.join(cache, "prompts", "*.prompt"))
    check(len(files) >= 1, f"state files on disk ({len(files)})")
    on.p.send_signal(signal.SIGKILL)
    on.p.wait()
    again = Server(tmp, "again", "--cache", cache)
    servers.append(again)
    a, u, _ = ask(again, hist["b"][:2], "And the colours?")
    check(a == ref_b[1], f"after SIGKILL: the same answer ({a!r} vs {ref_b[1]!r})")
    m = again.metrics()
    check(u["prompt_tokens_details"]["cached_tokens"] > 200 and
          m["g4v_chat_prompt_cache_disk_hits_total"] >= 1,
          f"after SIGKILL: resumed from disk ({u['prompt_tokens_details']['cached_tokens']} "
          f"cached, {m['g4v_chat_prompt_cache_disk_hits_total']} disk hits)")
    again.p.send_signal(signal.SIGKILL)
    again.p.wait()
    # a torn state file: every one cut to half its size
    for f in glob.glob(os.path.join(cache, "prompts", "*.prompt")):
        with open(f, "r+b") as h:
            h.truncate(os.path.getsize(f) // 2)
    torn = Server(tmp, "torn", "--cache", cache)
    servers.append(torn)
    a, u, _ = ask(torn, hist["b"][:2], "And the colours?")
    m = torn.metrics()
    check(a == ref_b[1], f"torn state files: the same answer ({a!r} vs {ref_b[1]!r})")
    check(u["prompt_tokens_details"]["cached_tokens"] == 0 and
          m["g4v_chat_prompt_cache_disk_hits_total"] == 0 and
          m["g4v_chat_prompt_cache_refused_total"] >= 1,
          f"torn state files: refused and decoded again ({u['prompt_tokens_details']}, "
          f"{m['g4v_chat_prompt_cache_refused_total']} refused)")
    torn.stop()

    # two slots, reuse on: two conversations interleaved keep a slot each
    two = Server(tmp, "two", "--lm-slots", "2", "--prompt-cache-ram", "0")
    servers.append(two)
    hist = {"a": [], "b": []}
    got = {"a": [], "b": []}
    for t, q in enumerate(QUESTIONS):
        for k, img, in (("a", img_a), ("b", img_b)):
            a, u, g = ask(two, hist[k], q, img if t == 0 else None, stream=(t == 2))
            got[k].append(a)
            hist[k] += [user(q, img) if t == 0 else user(q), {"role": "assistant", "content": a}]
            if t and u:
                check(u["prompt_tokens_details"]["cached_tokens"] > 200,
                      f"two slots, {k} turn {t + 1}: its own slot "
                      f"({u['prompt_tokens_details']['cached_tokens']} cached)")
    check(got["a"] == ref_a and got["b"] == ref_b, "two slots, interleaved: the same answers")
    # a new conversation about image b goes to the slot holding image b
    for img in (img_b, img_a):
        _, u, g = ask(two, [], "A new question about it.", img)
        check(g and g["images_reused"] == 1 and
              u["prompt_tokens_details"]["cached_tokens"] >= 256,
              f"two slots: a new question about a held image goes to its slot ({g})")
    check(two.metrics().get("g4v_chat_prompt_cache_hits_total") is None,
          "--prompt-cache-ram 0 without --cache: no prompt cache")



def test_state_longer_than_the_window():
    with_servers("g4v_chat_reuse_long_", run_long)


def run_long(tmp, servers):
    """A saved state longer than the sliding window (512 positions in the e2b text model: two
    images are 508 rows) loads back: llama.cpp leaves the window layers' cells outside the window
    out of a sequence's state, so such a state came back starting at position > 0 and was
    refused ("does not load; the prompt is decoded instead")."""
    img_a, img_b = data_uri(fx("img1.png")), data_uri(fx("img2.png"))

    def two_turns(s):
        first = [user("Compare these two pictures.", img_a, img_b)]
        a1, u1, _ = ask_msgs(s, first)
        other, _, _ = ask_msgs(s, [user("And this one?", img_b)])  # takes the slot
        hist = first + [{"role": "assistant", "content": a1.split("|")[0]}]
        a2, u2, _ = ask_msgs(s, hist + [user("Which one is brighter?")])
        return [a1, other, a2], u1, u2

    off = Server(tmp, "long-off", "--no-prompt-reuse")
    servers.append(off)
    ref, u1, _ = two_turns(off)
    check(u1 and u1["prompt_tokens"] > 512, f"the first turn is longer than the window "
          f"({u1 and u1['prompt_tokens']} positions)")
    off.stop()
    on = Server(tmp, "long-on")
    servers.append(on)
    got, _, u2 = two_turns(on)
    m = on.metrics()
    log = open(on.err_path).read()
    check(got == ref, f"resumed from a long state: the same answers ({got} vs {ref})")
    check("does not load" not in log, f"the long state loads ({log[-300:]!r})")
    check(u2 and u2["prompt_tokens_details"]["cached_tokens"] > 512 and
          m.get("g4v_chat_prompt_cache_hits_total", 0) >= 1,
          f"the second turn resumes from the prompt cache "
          f"({u2 and u2['prompt_tokens_details']}, {m.get('g4v_chat_prompt_cache_hits_total')} hits)")


def ask_msgs(s, msgs):
    body = {"messages": msgs, "max_tokens": 16, "temperature": 0}
    st, _, r = s.chat(body)
    check(st == 200, f"{msgs[-1]['content'][-1]['text']!r}: 200 ({st} {str(r)[:200]})")
    if st != 200:
        return f"status {st}", None, None
    m = r["choices"][0]["message"]  # the thought too: the synthetic model often writes one
    return m["content"] + "|" + (m.get("reasoning_content") or ""), r["usage"], r["g4v"]
