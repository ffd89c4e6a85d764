#!/usr/bin/python3
"""test_chat_quant.py (pytest --arg=FIXTURES --arg=LLAMA_LIBDIR --arg=SOURCE_DIR) - quantized
text models through llama.cpp's extra buffer types (AMX, CPU_REPACK) and the start-up check that
keeps a broken one from killing the chat (chat/chat_llama_probe.c, docs/CHAT.md §6).

- Every AMX tile configuration in the installed llama.cpp libraries is filled in
  (scripts/check-tile-config.py reads the machine code: the GCC 12 dead-store bug that made every
  quantized model die with SIGILL on AMX Xeons is seen on any CPU, without running a tile).
- The Q4_K quantizer of tools/gen_lm_gguf.py writes what gguf-py's dequantizer reads back.
- Q4_0, Q8_0 and Q4_K text models (make_fixtures.py: lm-31b-*.gguf) answer through `g4v chat` and
  `g4v serve --lm`, with an image; greedy answers with the extra buffer types equal those without
  (G4V_LLAMA_EXTRA_BUFFERS=0), on this CPU.
- The start-up check: `g4v info --json` reports the verdict (probe, then cache); a probe child
  that dies (G4V_LLAMA_PROBE_FAULT=crash), hangs or computes wrong numbers turns the extra buffer
  types off with the reason, in `g4v info --json` and GET /v1/info, and the chat still answers.
- A fatal signal in g4v chat leaves one line that says where and what to do, then the process
  dies of the same signal.
On a CPU with AMX (amx_int8 in /proc/cpuinfo) the AMX buffer type must be offered, pass the probe
and be used: the run that would have caught the crash."""
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from pyutil import check  # noqa: E402
from serveutil import ServeProcess, with_servers  # noqa: E402

BIN = os.environ.get("G4V_BIN", "g4v")
FX = pyutil.arg(1)
LIBDIR = pyutil.arg(2)
SRC = pyutil.arg(3)
QUANTS = ("q4_0", "q8_0", "q4_k")
PROMPT = "Describe the image."
HAS_AMX = "amx_int8" in open("/proc/cpuinfo").read()
PROBE_DIR = tempfile.mkdtemp(prefix="g4v_probe_cache_")


def fx(n):
    return os.path.join(FX, n)


def env(**kw):
    e = dict(os.environ, G4V_LLAMA_PROBE_DIR=PROBE_DIR)
    for k in ("G4V_LLAMA_EXTRA_BUFFERS", "G4V_LLAMA_PROBE_FAULT"):
        e.pop(k, None)
    e.update({k: str(v) for k, v in kw.items()})
    return e


def chat(lm, *args, **kw):
    return subprocess.run([BIN, "chat", "--threads", "2", "--lm", fx(lm), "--model",
                           fx("vis-31b"), "--image", fx("img1.png"), "-p", PROMPT, "--json",
                           "--max-tokens", "8", "--temp", "0", *args],
                          capture_output=True, text=True, timeout=600, env=env(**kw))


def answer(lm, what, **kw):
    r = chat(lm, **kw)
    ok = check(r.returncode == 0, f"g4v chat {what}: exit 0 ({r.returncode} "
               f"{r.stderr.strip()[-300:]})")
    j = json.loads(r.stdout) if ok else {}
    return j.get("text"), (j.get("tokens") or {}).get("generated")


def extra(**kw):
    r = subprocess.run([BIN, "info", "--json", "--model", fx("vis-31b")], capture_output=True,
                       text=True, timeout=300, env=env(**kw))
    if not check(r.returncode == 0, f"g4v info --json {kw}: exit 0 ({r.stderr[-300:]})"):
        return {}
    return json.loads(r.stdout)["llama_cpu_backend"]["extra_buffers"]


def test_tile_configs_filled():
    script = os.path.join(SRC, "scripts", "check-tile-config.py")
    r = subprocess.run([sys.executable, script, LIBDIR], capture_output=True, text=True)
    check(r.returncode == 0, f"check-tile-config.py {LIBDIR}: every tile configuration filled "
          f"({r.returncode} {r.stdout[-400:]} {r.stderr[-300:]})")
    if platform.machine() == "x86_64" and os.path.exists(
            os.path.join(LIBDIR, "libggml-cpu-sapphirerapids.so")):
        check("filled" in r.stdout, "the AMX variant's ldtilecfg was found and judged "
              f"({r.stdout[-300:]!r})")


def test_q4_k_quantizer():
    import numpy as np
    sys.path.insert(0, os.path.join(SRC, "tools"))
    sys.path.insert(0, os.path.join(LIBDIR, "..", "src", "gguf-py"))
    import gguf
    import gen_lm_gguf
    x = (np.random.default_rng(1).standard_normal((16, 768)) * 0.05).astype(np.float32)
    q = gen_lm_gguf.quantize_q4_k(x)
    y = gguf.quants.dequantize(q, gguf.GGMLQuantizationType.Q4_K)
    rel = float(np.sqrt(((y - x) ** 2).mean() / (x ** 2).mean()))
    check(q.shape == (16, 3 * 144) and rel < 0.1, f"Q4_K blocks read back by gguf-py within "
          f"4-bit error (relative RMS {rel:.3f})")


def test_probe_verdicts():
    first = extra()
    check(first.get("checked") in ("probe", "none"), f"a fresh probe cache: the check runs "
          f"({first})")
    types = first.get("types", [])
    if not types:
        print("note: this CPU backend offers no extra buffer types; nothing to probe")
        return
    check(first.get("used") is True and first.get("reason") is None,
          f"the extra buffer types {types} pass the check on this CPU ({first})")
    again = extra()
    check(again.get("checked") == "cache" and again.get("used") is True,
          f"the second run reads the verdict from the cache ({again})")
    if HAS_AMX:
        check("AMX" in types, f"an AMX CPU: llama.cpp offers its AMX buffer type ({types})")
    else:
        print(f"note: no AMX on this CPU: the tile path is checked by its object code only "
              f"(types here: {types})")
    for fault, words in (("crash", "signal 4"), ("differ", "relative RMS"), ("hang", "hung")):
        kw = {"G4V_LLAMA_PROBE_FAULT": fault}
        if fault == "hang":
            kw["G4V_LLAMA_PROBE_TIMEOUT_MS"] = 1500
        v = extra(**kw)
        check(v.get("used") is False and words in (v.get("reason") or "") and
              "G4V_LLAMA_EXTRA_BUFFERS" in v.get("reason", ""),
              f"a probe that {fault}s: extra buffers off, the reason says so ({v})")
    off = extra(G4V_LLAMA_EXTRA_BUFFERS=0)
    check(off.get("used") is False and off.get("checked") == "environment",
          f"G4V_LLAMA_EXTRA_BUFFERS=0: off without a probe ({off})")


def test_quantized_models_answer():
    for q in QUANTS:
        lm = f"lm-31b-{q}.gguf"
        with_extra = answer(lm, f"{q} (extra buffer types)")
        without = answer(lm, f"{q} (G4V_LLAMA_EXTRA_BUFFERS=0)", G4V_LLAMA_EXTRA_BUFFERS=0)
        check(with_extra[0] and with_extra[1] == 8, f"{q}: 8 tokens generated ({with_extra})")
        check(with_extra == without, f"{q}: the greedy answer with the extra buffer types equals "
              f"the one without ({with_extra!r} vs {without!r})")
    # the setting takes effect: llama.cpp's log names a buffer of each extra type it used
    for kw, want in (({}, True), ({"G4V_LLAMA_EXTRA_BUFFERS": 0}, False),
                     ({"G4V_LLAMA_PROBE_FAULT": "crash"}, False)):
        r = chat("lm-31b-q4_0.gguf", "--verbose", **kw)
        used = [t for t in ("AMX", "CPU_REPACK") if f"{t} model buffer size" in r.stderr]
        check(r.returncode == 0 and bool(used) == want and (not HAS_AMX or not want or
                                                           "AMX" in used),
              f"q4_0 {kw}: llama.cpp's extra buffers {'used' if want else 'not used'} ({used})")
    # a probe child that dies: the chat falls back and still answers, as without extra buffers
    crashed = answer("lm-31b-q4_0.gguf", "q4_0 after a crashed probe",
                     G4V_LLAMA_PROBE_FAULT="crash")
    plain = answer("lm-31b-q4_0.gguf", "q4_0 without extra buffers", G4V_LLAMA_EXTRA_BUFFERS=0)
    check(crashed == plain, f"a crashed probe: the answer of the plain path ({crashed} {plain})")


def test_serve_quantized():
    with_servers("g4v_chat_quant_", serve_run)


def serve_run(tmp, servers):
    import base64
    uri = "data:image/png;base64," + base64.b64encode(open(fx("img1.png"), "rb").read()).decode()
    req = {"model": "any", "max_tokens": 8, "temperature": 0, "messages": [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": uri}},
                                     {"type": "text", "text": PROMPT}]}]}
    for q, kw in (("q4_0", {}), ("q8_0", {}), ("q4_k", {}),
                  ("q4_0", {"G4V_LLAMA_PROBE_FAULT": "crash"})):
        s = ServeProcess(tmp, f"serve-{q}", [BIN, "serve", "--port", "0", "--model", fx("vis-31b"),
                                            "--lm", fx(f"lm-31b-{q}.gguf"), "--lm-threads", "2",
                                            "--threads", "1"], env=env(**kw), stop_timeout=120)
        servers.append(s)
        st, _, raw = s.request("POST", "/v1/chat/completions", req, timeout=300)
        r = json.loads(raw) if st == 200 else {}
        check(st == 200 and r["usage"]["completion_tokens"] == 8,
              f"serve --lm {q} {kw}: answered ({st} {raw[:200]!r})")
        st, _, raw = s.request("GET", "/v1/info")
        info = json.loads(raw).get("text_model", {}).get("extra_buffers", {}) if st == 200 else {}
        if kw:
            check(info.get("used") is False and "signal 4" in (info.get("reason") or ""),
                  f"/v1/info: a crashed probe's reason ({info})")
        else:
            check("used" in info and "types" in info, f"/v1/info names the verdict ({info})")
        check(s.stop() == 0, f"serve --lm {q}: SIGTERM, exit 0")


def test_fatal_signal_line():
    p = subprocess.Popen([BIN, "chat", "--threads", "1", "--lm", fx("lm-31b-q4_0.gguf"),
                          "--model", fx("vis-31b"), "--image", fx("img1.png"), "-p", PROMPT,
                          "--max-tokens", "4000", "--temp", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    time.sleep(3)  # into the prefill or the generation
    p.send_signal(signal.SIGILL)
    _, err = p.communicate(timeout=120)
    check(p.returncode == -signal.SIGILL, f"SIGILL: g4v chat dies of it ({p.returncode})")
    check(f"g4v: fatal signal SIGILL (illegal instruction), sent by process {os.getpid()}, "
          "not raised by the code running here" in err,
          f"SIGILL sent: the line says what it was and who sent it ({err.strip()[-400:]!r})")
