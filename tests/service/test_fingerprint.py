#!/usr/bin/python3
"""test_fingerprint.py - g4v_model_fingerprint as `g4v info --json` shows it.

The same weights in every layout the loader reads (one file, 1 or 3 shards, an optiq sidecar;
Hugging Face or mlx names; clip scalars as [] or [1]; text weights absent, undecodable or in
between) give one fingerprint; a different dtype, the precise mode, a changed configuration value
that matters, or one changed byte of one vision tensor give another; a changed byte of a text
tensor and changed token ids do not.

Usage: test_fingerprint.py IO_FIXTURES (tests/io/io_cases.py's output).
"""
import json
import os
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from pyutil import check, g4v  # noqa: E402

FIX = pyutil.arg(1)


def fingerprint(d, *extra):
    r = g4v("info", "--model", d, "--json", *extra)
    if r.returncode != 0:
        check(False, f"g4v info {d}: exit {r.returncode}: {r.stderr.strip()}")
        return None
    j = json.loads(r.stdout)
    fp = j["fingerprint"]
    check(len(fp) == 64 and all(c in "0123456789abcdef" for c in fp), f"{os.path.basename(d)}: 64 hex digits", show_ok=False)
    return fp


def flip_byte(path, tensor, where=0.5):
    """Adds 1 to one byte inside tensor's data (by the safetensors header, not our loader)."""
    with open(path, "r+b") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        h = json.loads(f.read(n))
        b, e = h[tensor]["data_offsets"]
        off = 8 + n + b + int((e - b) * where)
        f.seek(off)
        v = f.read(1)[0]
        f.seek(off)
        f.write(bytes([(v + 1) & 255]))


def test_fingerprint():
    by_dtype = {}
    for dt in ("bf16", "f16", "f32"):
        fps = {}
        for naming in ("hf", "mlx"):
            for layout in ("single", "shards1", "shards3", "sidecar"):
                name = f"tiny_{layout}_{naming}_{dt}"
                fps[name] = fingerprint(os.path.join(FIX, name))
        check(len(set(fps.values())) == 1, f"{dt}: one fingerprint over 8 layouts ({len(set(fps.values()))} found)")
        by_dtype[dt] = next(iter(fps.values()))
    check(len(set(by_dtype.values())) == 3, "bf16, f16 and f32 weights: three fingerprints")

    base = fingerprint(os.path.join(FIX, "tiny_base"))
    for same in ("tiny_clip_shape1", "tiny_weird_decoy", "tiny_text_between", "tiny_text_shard_absent",
                 "tiny_ids_default", "tiny_ids_custom"):
        check(fingerprint(os.path.join(FIX, same)) == base, f"{same}: same fingerprint as tiny_base")
    for differs in ("tiny_std_ignored", "tiny_old_rope", "tiny_mqa"):
        check(fingerprint(os.path.join(FIX, differs)) != base, f"{differs}: a different fingerprint")
    precise = fingerprint(os.path.join(FIX, "tiny_base"), "--precise")
    check(precise != base, "--precise: a different fingerprint")
    check(fingerprint(os.path.join(FIX, "tiny_base")) == base, "stable across runs")

    with tempfile.TemporaryDirectory() as tmp:
        # one byte of one vision tensor
        d = os.path.join(tmp, "weights")
        shutil.copytree(os.path.join(FIX, "tiny_base"), d)
        st = os.path.join(d, "model.safetensors")
        flip_byte(st, "model.vision_tower.encoder.layers.1.mlp.down_proj.linear.weight")
        changed = fingerprint(d)
        check(changed != base, "one byte of one vision weight changed: a different fingerprint")
        flip_byte(st, "model.vision_tower.encoder.layers.1.mlp.down_proj.linear.weight")  # +1 again
        check(fingerprint(d) not in (base, changed), "a second change: yet another fingerprint")
        # a text tensor's byte: not part of the vision tower
        d2 = os.path.join(tmp, "text")
        shutil.copytree(os.path.join(FIX, "tiny_base"), d2)
        flip_byte(os.path.join(d2, "model.safetensors"), "model.language_model.embed_tokens.weight")
        check(fingerprint(d2) == base, "one byte of a text weight changed: the same fingerprint")
        # a configuration value that changes the computation
        d3 = os.path.join(tmp, "eps")
        shutil.copytree(os.path.join(FIX, "tiny_base"), d3)
        cfg = os.path.join(d3, "config.json")
        with open(cfg) as f:
            j = json.load(f)
        j["vision_config"]["rms_norm_eps"] = 1e-5
        with open(cfg, "w") as f:
            json.dump(j, f)
        check(fingerprint(d3) != base, "rms_norm_eps changed: a different fingerprint")

    r = g4v("info", "--model", os.path.join(FIX, "tiny_base"))
    check(f"fingerprint   {base}" in r.stdout, "g4v info (text) shows the fingerprint")

