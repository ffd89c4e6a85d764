#!/usr/bin/python3
"""test_cli_info.py - `g4v info` on the io fixtures (io_cases.py), through the real CLI.

usage: ctest -R test_io_info_cli (pytest test_cli_info.py --arg=FIXTURE_DIR; env G4V_BIN: the g4v binary)
Good checkpoints: `--json` field by field against the generator's expectations (config, counts,
bytes, dtype census, naming, source, token ids, budgets), and the text form of one. Bad ones:
exit status 3 (model error) and the expected message on stderr, nothing on stdout. Usage errors:
exit 1; --help: exit 0.
"""
import functools
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402

check = functools.partial(pyutil.check, show_ok=False)  # hundreds of checks: failures only
EXIT_FOR = {"G4V_ERR_IO": 3, "G4V_ERR_MODEL": 3, "G4V_ERR_LIMIT": 3, "G4V_ERR_UNSUPPORTED": 3}
# g4v_model_options' defaults: the limits `g4v info` loads under and reports
DEFAULT_LIMITS = {"max_pixels": 178956970, "max_dimension": 65500, "max_file_bytes": 1 << 30,
                  "max_header_bytes": 100000000, "max_config_bytes": 16000000,
                  "max_tensor_count": 1000000, "max_video_frames": 216000,
                  "max_video_seconds": 3600}


def run(*args):
    return pyutil.g4v("info", *args)


def good(case):
    exp = json.load(open(case["expect"]))
    r = run("--json", "--model", case["dir"])
    name = case["name"]
    check(r.returncode == 0, f"{name}: exit {r.returncode}: {r.stderr}")
    if r.returncode:
        return
    j = json.loads(r.stdout)
    for k, v in exp["cfg"].items():
        check(j.get(k) == v, f"{name}: {k} = {j.get(k)!r}, expected {v!r}")
    for k in ("param_count", "weight_bytes", "naming"):
        check(j.get(k) == exp[k], f"{name}: {k} = {j.get(k)!r}, expected {exp[k]!r}")
    check(exp["source"] in j.get("source", ""), f"{name}: source {j.get('source')!r}")
    census = {}
    for t in exp["tensors"].values():
        c = census.setdefault(t["dtype"], {"tensors": 0, "bytes": 0})
        c["tensors"] += 1
        c["bytes"] += (4 if t["dtype"] == "F32" else 2) * max(1, _prod(t["shape"]))
    check(j.get("dtypes") == census, f"{name}: dtypes {j.get('dtypes')} vs {census}")
    check(j.get("budgets") == [70, 140, 280, 560, 1120], f"{name}: budgets {j.get('budgets')}")
    check(j.get("model") == case["dir"], f"{name}: model {j.get('model')}")
    check(j.get("limits") == DEFAULT_LIMITS, f"{name}: limits {j.get('limits')}")
    sharpness(name, j, exp)
    amx = j.get("amx", {})
    check(isinstance(amx.get("usable"), bool) and "AMX" in amx.get("reason", "")
          and amx.get("self_test", "").startswith(("passed: ", "failed: ", "not run: ")),
          f"{name}: amx {amx}")


def sharpness(name, j, exp, mode="fast"):
    """docs/NUMERICS.md §6.5: each layer's sharpness, and which layers run as PRECISE."""
    s = j.get("sharpness") or {}
    layers = s.get("layers", [])
    want = exp.get("sharpness", [])
    check(s.get("threshold") == 2.0, f"{name}: sharpness threshold {s.get('threshold')}")
    check(len(layers) == len(want) == j.get("num_layers"), f"{name}: {len(layers)} layers listed")
    for i, (l, w) in enumerate(zip(layers, want)):
        sharp = w > 2.0
        check(l.get("layer") == i and abs(l.get("sharpness", -1) - w) <= 1e-5 * w
              and l.get("sharp") == sharp
              and l.get("runs_precise") == (sharp or mode == "precise"),
              f"{name}: layer {i}: {l}, expected sharpness {w:.6f}")
    check(s.get("sharp_layers") == sum(w > 2.0 for w in want)
          and s.get("precise_layers") == sum(lr.get("runs_precise", False) for lr in layers),
          f"{name}: counts {s.get('sharp_layers')} {s.get('precise_layers')}")


def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def bad(case):
    r = run("--model", case["dir"])
    name = case["name"]
    want = EXIT_FOR[case["status"]]
    check(r.returncode == want, f"{name}: exit {r.returncode}, expected {want}: {r.stderr}")
    check(case["substring"] in r.stderr, f"{name}: stderr {r.stderr!r} lacks {case['substring']!r}")
    check(case["status"] in r.stderr, f"{name}: stderr lacks the status name {case['status']}")
    check(r.stdout == "", f"{name}: stdout not empty: {r.stdout!r}")


def text_form(fx):
    d = os.path.join(fx, "e4b_2layers")
    r = run("--model", d)
    check(r.returncode == 0, f"text form: exit {r.returncode}: {r.stderr}")
    lines = {ln.split()[0]: ln for ln in r.stdout.splitlines() if ln.strip()}
    want = {
        "variant": "variant       e4b",
        "vision": "2 layers, hidden 768, intermediate 3072, 12 heads (12 kv), head_dim 64",
        "options": "clipped linears: yes, standardize: no, rope_theta 100",
        "text": "text hidden   2560",
        # docs/NUMERICS.md §7.1: input_proj 589,824 + position table 15,728,640 + 9,440,384 per
        # layer + projection 2560 x 768, plus 28 clip scalars per layer
        "parameters": f"parameters    {589824 + 15728640 + 2 * 9440384 + 2560 * 768 + 2 * 28:,} "
                      f"({2 * (589824 + 15728640 + 2 * 9440384 + 2560 * 768 + 2 * 28):,} bytes",
        "dtypes": "BF16:",
        "image": "image 258880, boi 255999, eoi 258882, video 258884",
        "budgets": "budgets       70 140 280 560 1120",
        "limits": "limits        max_pixels 178,956,970, max_dimension 65,500, "
                  "max_file_bytes 1,073,741,824",
        "max_header_bytes": "max_header_bytes 100,000,000, max_config_bytes 16,000,000, "
                            "max_tensor_count 1,000,000",
        "max_video_frames": "max_video_frames 216,000, max_video_seconds 3,600",
    }
    for key, sub in want.items():
        check(sub in lines.get(key, ""), f"text form: line {key!r} lacks {sub!r}: {lines.get(key)!r}")
    check(lines.get("sharp", "").startswith("sharp layers  0 of 2 layers sharp (logit std > 2.0), "
                                            "0 run as PRECISE"), f"text form: {lines.get('sharp')!r}")
    check("self-test " in r.stdout, "text form: the AMX self-test's verdict")
    # a sharp tower (--qk-scale 3: sharpness ~9): every layer sharp, each runs as PRECISE in the
    # default mode; in --math precise every layer does anyway
    m = json.load(open(os.path.join(fx, "manifest.json")))
    case = next(c for c in m["good"] if c["name"] == "tiny_mqa")
    exp = json.load(open(case["expect"]))
    check(all(w > 2.0 for w in exp["sharpness"]), f"tiny_mqa: not sharp: {exp['sharpness']}")
    r = run("--model", case["dir"])
    n = len(exp["sharpness"])
    want_line = (f"sharp layers  {n} of {n} layers sharp (logit std > 2.0), {n} run as PRECISE: "
                 + ",".join(str(i) for i in range(n)))
    check(want_line in r.stdout, f"tiny_mqa text form: {r.stdout!r} lacks {want_line!r}")
    r = run("--json", "--math", "precise", "--model", os.path.join(fx, "e4b_2layers"))
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    exp = json.load(open(next(c["expect"] for c in m["good"] if c["name"] == "e4b_2layers")))
    sharpness("e4b_2layers --math precise", j, exp, mode="precise")
    check(j.get("sharpness", {}).get("precise_layers") == 2, "--math precise: every layer PRECISE")


def usage():
    r = run()
    check(r.returncode == 1 and "--model DIR is required" in r.stderr, f"no args: {r.returncode} {r.stderr!r}")
    r = run("--model")
    check(r.returncode == 1, f"--model without value: exit {r.returncode}")
    r = run("--model", "x", "--frobnicate")
    check(r.returncode == 1 and "unknown option '--frobnicate'" in r.stderr, f"bad option: {r.stderr!r}")
    r = run("--help")
    check(r.returncode == 0 and "usage: g4v info --model DIR [--json]" in r.stdout
          and "exit codes" in r.stdout, f"--help: {r.returncode} {r.stdout!r}")


def test_cli_info():
    fx = pyutil.arg(1)
    m = json.load(open(os.path.join(fx, "manifest.json")))
    for c in m["good"]:
        good(c)
    for c in m["bad"]:
        bad(c)
    text_form(fx)
    usage()
    n = len(m["good"]) + len(m["bad"])
    print(f"test_cli_info: {n} checkpoints")

