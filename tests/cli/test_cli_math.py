#!/usr/bin/python3
"""test_cli_math.py - the math-mode options of every front end: `--math fast|precise|int8|
int8-blocks` and the older spellings kept as its aliases (`--precise`, `--int8`, `--int8=blocks`).

On a synthetic checkpoint: `g4v encode` writes the same bytes (and prints the same lines) for
`--math NAME` as for its alias, and for `--math fast` as for no option; `g4v info` prints the same
text and JSON (timings aside) and names the mode as g4v_math_mode_name does; `g4v serve`'s
/v1/info reports the mode and the fingerprint `g4v info` gives for it. Two different modes, an
unknown name or a missing value are usage errors (exit 1) in encode, info, serve and chat (when
this g4v has chat); one mode given twice is not.
"""
import filecmp
import json
import os
import re
import subprocess
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pyutil import BIN, check, g4v, gen_checkpoint  # noqa: E402
from serveutil import ServeProcess, with_servers  # noqa: E402

# mode name -> the alias options that mean the same; fast has none (it is the default)
ALIASES = {"fast": [()], "precise": [("--precise",)], "int8": [("--int8",)],
           "int8-blocks": [("--int8=blocks",)]}


def encode(model, img, out, *extra):
    r = g4v("encode", "--model", model, img, "-o", out, "--threads", "1", "--full-span", *extra)
    check(r.returncode == 0, f"g4v encode {' '.join(extra)}: exit {r.returncode} {r.stderr.strip()}")
    return r.stdout


def info(model, *extra):
    """(text with the timing blanked, JSON without fingerprint_seconds)"""
    t = g4v("info", "--model", model, *extra)
    j = g4v("info", "--model", model, "--json", *extra)
    check(t.returncode == 0 and j.returncode == 0, f"g4v info {' '.join(extra)}: {t.stderr}{j.stderr}")
    doc = json.loads(j.stdout)
    doc.pop("fingerprint_seconds", None)
    return re.sub(r"computed in [0-9.]+ s", "computed in - s", t.stdout), doc


def usage_error(args, want):
    try:  # a serve that took the options would listen until stopped
        r = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        check(False, f"g4v {' '.join(args)}: still running after 30 s, not a usage error")
        return
    check(r.returncode == 1 and want in r.stderr and r.stdout == "",
          f"g4v {' '.join(args)}: usage error naming {want!r} (exit {r.returncode}: {r.stderr.strip()})")


def test_cli_math():
    with_servers("g4v_math_", run)


def run(tmp, servers):
    model = os.path.join(tmp, "tiny")
    gen_checkpoint(model, "--config", "tiny", "--seed", "7", quiet=True)
    img = os.path.join(tmp, "a.png")
    Image.fromarray(np.random.default_rng(3).integers(0, 256, (120, 170, 3), dtype=np.uint8)).save(img)

    fingerprints = {}
    for name, aliases in ALIASES.items():
        ref = os.path.join(tmp, f"{name}.npy")
        out_ref = encode(model, img, ref, "--math", name)
        text_ref, json_ref = info(model, "--math", name)
        check(json_ref["fingerprint_mode"] == name, f"info --math {name}: fingerprint_mode {name}")
        want = "default (fast)" if name == "fast" else name
        check(f"({want} mode, numerics version" in text_ref, f"info --math {name}: text names {want!r}")
        check(("int8_gemm" in json_ref) == name.startswith("int8"),
              f"info --math {name}: int8_gemm only for the INT8 modes")
        fingerprints[name] = json_ref["fingerprint"]
        for alias in aliases + [("--math", name, *aliases[0])]:  # also both spellings at once
            tag = " ".join(alias) or "(no option)"
            out = os.path.join(tmp, f"{name}-alias.npy")
            check(encode(model, img, out, *alias) == out_ref and filecmp.cmp(ref, out, shallow=False),
                  f"encode {tag}: the bytes and lines of --math {name}")
            text, doc = info(model, *alias)
            check(text == text_ref and doc == json_ref, f"info {tag}: the output of --math {name}")
    check(len(set(fingerprints.values())) == 4, "four modes, four fingerprints")

    # -- two modes, unknown names, missing values --------------------------------------------------
    for cmd in (["encode", "--model", model, img, "-o", os.path.join(tmp, "x.npy")],
                ["info", "--model", model], ["serve", "--model", model, "--port", "0"]):
        usage_error(cmd + ["--precise", "--int8"], "give one")
        usage_error(cmd + ["--math", "int8", "--int8=blocks"], "give one")
        usage_error(cmd + ["--int8=blocks", "--math", "fast"], "give one")
        usage_error(cmd + ["--math", "Int8"], "unknown math mode 'Int8'")
        usage_error(cmd + ["--math", "int8_blocks"], "(use fast, precise, int8 or int8-blocks)")
        usage_error(cmd + ["--math"], "--math")
    if g4v("chat", "--help").returncode == 0:  # built with libllama
        chat = ["chat", "--lm", os.path.join(tmp, "none.gguf"), "--model", model, "-p", "hi"]
        usage_error(chat + ["--int8", "--precise"], "give one")
        usage_error(chat + ["--math", "int4"], "unknown math mode 'int4'")

    # -- g4v serve: /v1/info names the mode; --math and the alias load the same model -------------
    for args in (("--math", "int8-blocks"), ("--int8=blocks",), ("--precise", "--math", "precise")):
        s = ServeProcess(tmp, "serve" + str(len(servers)),
                         [BIN, "serve", "--port", "0", "--model", model, "--threads", "1", *args])
        servers.append(s)
        st, _, body = s.request("GET", "/v1/info")
        j = json.loads(body)
        mode = "precise" if "precise" in args else "int8-blocks"
        check(st == 200 and j["mode"] == mode and j["fingerprint"] == fingerprints[mode],
              f"serve {' '.join(args)}: /v1/info mode {j.get('mode')}, the fingerprint of info --math {mode}")
