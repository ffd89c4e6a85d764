#!/usr/bin/python3
"""test_chat_cpu_budget.py (pytest --arg=FIXTURES) - `g4v serve --lm` keeps to its CPU budget
(docs/SERVICE.md "Threads"): with the default thread counts, four image conversations sent at
once to four slots never have more of the server's threads running than the machine has cores,
plus one (a thread between two computations: sampling, copying rows, the HTTP side).

While the four run, every thread of the server is sampled from /proc/PID/task/*/stat and
schedstat every millisecond or so; a thread in state R at three samples in a row that has been
on a CPU in both intervals is running, and the most found running at once is the measure. Before
the chat images went through the encode contexts and the CPU gate (26ea5c6), each slot encoded
on a g4v_ctx of its own with one thread per CPU beside the text model's: on 2 cores this test
saw up to N threads running (G4V_BIN=<a build of 26ea5c6> to see it fail)."""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from pyutil import check  # noqa: E402
from serveutil import ServeProcess  # noqa: E402

G4V = os.environ.get("G4V_BIN", "g4v")
FX = pyutil.arg(1)
CORES = os.sysconf("SC_NPROCESSORS_ONLN")  # what the server's budget counts


def thread_states(pid):
    """{tid: (state, nanoseconds on a CPU so far)} of pid's threads now."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for t in tids:
        try:
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                st = f.read()
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                ran = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # the thread ended
        out[t] = (st[st.rfind(")") + 2:][:1], ran)
    return out


def running(older, prev, now):
    """Threads computing at this sample: in state R at this sample and the two before it, and on
    a CPU in both intervals (~2 ms). A thread only woken (runnable for a moment, or waiting for a
    CPU that other processes hold) is not counted: on a loaded machine every wake-up would look
    like one more computing thread; nor is one in the last millisecond of its work while the next
    team starts (a thread pool polling for more work after a call, a slot copying its rows), which
    once in a few thousand samples made a fourth thread on 2 cores. A team computing for longer
    than that, as the vision pools beside the text model did before the gate, is counted."""
    return sum(1 for t, (state, ran) in now.items()
               if state == "R" and t in prev and t in older and prev[t][0] == "R"
               and older[t][0] == "R" and ran > prev[t][1] > older[t][1])


def test_chat_cpu_budget():
    from PIL import Image
    tmp = tempfile.mkdtemp(prefix="g4v_cpu_budget_")
    # a tower with e2b's widths cut to 4 layers: an image takes a second of CPU, as a real one
    # does (the fixtures' tower takes milliseconds: too little to overlap the text model); its
    # soft tokens have the width of the fixtures' e2b text model
    vis = os.path.join(tmp, "vis-e2b-4")
    r = subprocess.run([sys.executable, pyutil.GEN, vis, "--config", "e2b", "--layers", "4",
                        "--no-decoys", "--seed", "3"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    uris = []
    for k in range(4):  # four new images: each must be encoded (no cache hit)
        path = os.path.join(tmp, f"img{k}.png")
        Image.new("RGB", (768, 768), (40 + 50 * k, 200 - 40 * k, 90)).save(path)
        uris.append("data:image/png;base64," + base64.b64encode(open(path, "rb").read()).decode())
    # no --threads, no --lm-threads: the defaults are what the budget is about
    s = ServeProcess(tmp, "serve", [G4V, "serve", "--port", "0", "--model", vis, "--lm",
                                    os.path.join(FX, "lm-e2b.gguf"), "--lm-slots", "4"],
                     stop_timeout=120)
    results = [None] * 4
    try:
        def ask(k):
            body = {"messages": [{"role": "user", "content": [
                {"type": "text", "text": "Describe the image."},
                {"type": "image_url", "image_url": {"url": uris[k]}}]}],
                "max_tokens": 8, "temperature": 0}
            results[k] = s.request("POST", "/v1/chat/completions", body, timeout=600)

        threads = [threading.Thread(target=ask, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        counts = {}
        older = thread_states(s.p.pid)
        time.sleep(0.001)
        prev = thread_states(s.p.pid)
        while any(t.is_alive() for t in threads):
            time.sleep(0.001)
            now = thread_states(s.p.pid)
            n = running(older, prev, now)
            counts[n] = counts.get(n, 0) + 1
            older, prev = prev, now
        for t in threads:
            t.join()
        for k, r in enumerate(results):
            ok = r is not None and r[0] == 200
            check(ok, f"conversation {k}: 200 ({r[0] if r else None})")
            if ok:
                g = json.loads(r[2])["g4v"]
                check(g["images_encoded"] == 1, f"conversation {k}: its image encoded ({g})")
        most = max(counts) if counts else 0
        print(f"threads running per sample (count: samples): {dict(sorted(counts.items()))}")
        check(sum(counts.values()) > 100, f"sampled while they ran ({sum(counts.values())} samples)")
        check(most <= CORES + 1,
              f"at most {CORES} cores + 1 threads running at any sample (most: {most})")
    finally:
        check(s.stop() == 0, "the server exits 0 on SIGTERM")
        shutil.rmtree(tmp, ignore_errors=True)
