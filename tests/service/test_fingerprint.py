#!/usr/bin/python3
"""test_fingerprint.py - g4v_model_fingerprint as `g4v info --json` shows it.

The same weights in every layout the loader reads (one file, 1 or 3 shards, an optiq sidecar;
Hugging Face or mlx names; clip scalars as [] or [1]; text weights absent, undecodable or in
between) give one fingerprint; a different dtype, the precise mode, a changed configuration value
that matters, or one changed byte of one vision tensor give another; a changed byte of a text
tensor and changed token ids do not. Every vision tensor counts: one changed byte in any one
of them (the first and the last byte of the first and last in name order, the last byte of each
other) changes the fingerprint, on a tower checkpoint and on a unified (12B-style) one.

Usage: test_fingerprint.py IO_FIXTURES (tests/io/io_cases.py's output).
"""
import json
import os
import shutil
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


flip_byte = pyutil.st_bump_byte  # adds 1 to one byte of a tensor, by the header alone


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
    int8 = fingerprint(os.path.join(FIX, "tiny_base"), "--int8")
    check(int8 not in (base, precise), "--int8: a fingerprint of its own")
    int8b = fingerprint(os.path.join(FIX, "tiny_base"), "--int8=blocks")
    check(int8b not in (base, precise, int8), "--int8=blocks: a fingerprint of its own")
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


def each_tensor_counts(d, st, names, label):
    """Changes one byte of each tensor in turn (and back); each change must give a fingerprint
    of its own. names: the file's tensor names of the vision tensors."""
    base = fingerprint(d)
    seen = {base}
    order = sorted(names)
    spots = [(n, 1.0) for n in order] + [(order[0], 0.0), (order[-1], 0.0)]
    missed = []
    for name, where in spots:
        pyutil.st_bump_byte(st, name, where)
        fp = fingerprint(d)
        pyutil.st_bump_byte(st, name, where, delta=-1)
        if fp is None or fp in seen:
            missed.append(f"{name} ({'first' if where == 0 else 'last'} byte)")
        seen.add(fp)
    check(fingerprint(d) == base, f"{label}: the bytes restored, the fingerprint is back")
    check(not missed, f"{label}: each of {len(spots)} one-byte changes over {len(order)} tensors "
          f"gives its own fingerprint (first {order[0]}, last {order[-1]}; missed: {missed})")


def test_every_tensor_counts(tmp_path):
    # the tower: the vision tensors the generator's expectations list (decoys and text excluded)
    d = str(tmp_path / "tower")
    shutil.copytree(os.path.join(FIX, "tiny_base"), d)
    with open(os.path.join(FIX, "tiny_base.expect.json")) as f:
        vision = json.load(f)["tensors"]
    st = os.path.join(d, "model.safetensors")
    header, _ = pyutil.st_header(st)
    names = [n for n in header if n.removeprefix("model.") in vision]
    check(len(names) == len(vision), f"tower: {len(vision)} vision tensors found in the file")
    each_tensor_counts(d, st, names, "tower tiny")
    # the unified embedder (no decoys: every vision tensor in the file is the model's)
    u = str(tmp_path / "unified")
    pyutil.gen_checkpoint(u, "--config", "unified-tiny", "--seed", "1", "--no-decoys", quiet=True)
    st = os.path.join(u, "model.safetensors")
    header, _ = pyutil.st_header(st)
    names = [n for n in header if n != "__metadata__" and "language_model" not in n
             and "audio" not in n]
    check(len(names) >= 3, f"unified: {len(names)} vision tensors")
    each_tensor_counts(u, st, names, "unified tiny")

