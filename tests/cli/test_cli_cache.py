#!/usr/bin/python3
"""test_cli_cache.py - `g4v encode --cache DIR`: the persistent feature cache.

Miss then hit, with bytes identical to an uncached encode (f32 and bf16, file and raw .npy
inputs); every part of the key (budget, EXIF choice, mode, model) makes a different entry; two
processes encoding the same images into one cache at once; a damaged entry (flipped byte,
truncated, garbage) is detected, recomputed and rewritten, never served; least-recently-used
eviction under --cache-max-bytes.
"""
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pyutil import BIN, check, g4v, gen_checkpoint  # noqa: E402


def encode(model, cache, img, out, *extra):
    args = ["encode", "--model", model, img, "-o", out, "--json", "--threads", "1", *extra]
    if cache:
        args += ["--cache", cache]
    r = g4v(*args)
    if r.returncode != 0:
        check(False, f"g4v {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
        return None
    return json.loads(r.stdout.splitlines()[-1])["cache"]


def entries(cache):
    out = set()
    for sub in sorted(os.listdir(cache)):
        p = os.path.join(cache, sub)
        if os.path.isdir(p):
            out |= {os.path.join(p, f) for f in os.listdir(p)}
    return out


def test_cli_cache():
    tmp = tempfile.mkdtemp(prefix="g4v_cache_")
    try:
        run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp):
    model = os.path.join(tmp, "tiny")
    gen_checkpoint(model, "--config", "tiny", "--seed", "11", quiet=True)
    rng = np.random.default_rng(3)
    imgs = []
    for i in range(5):  # the same size: entries of one size (for the eviction case)
        p = os.path.join(tmp, f"img{i}.png")
        Image.fromarray(rng.integers(0, 256, (150, 200, 3), dtype=np.uint8)).save(p)
        imgs.append(p)
    raw = os.path.join(tmp, "raw.npy")
    np.save(raw, rng.integers(0, 256, (97, 131, 3), dtype=np.uint8))
    ref = os.path.join(tmp, "ref")
    os.makedirs(ref)

    # -- hit and miss, identical bytes ---------------------------------------------------------
    cache = os.path.join(tmp, "c1")
    for src in (imgs[0], raw):
        name = os.path.basename(src)
        for extra in ((), ("--bf16",)):
            tag = name + "".join(extra)
            plain = os.path.join(ref, tag + ".plain.npy")
            check(encode(model, None, src, plain, *extra) == "off", f"{tag}: uncached run reports cache off")
            a, b = os.path.join(ref, tag + ".a.npy"), os.path.join(ref, tag + ".b.npy")
            first = encode(model, cache, src, a, *extra)
            second = encode(model, cache, src, b, *extra)
            if not extra:
                check(first == "miss" and second == "hit", f"{tag}: miss, then hit ({first}, {second})")
            else:  # bf16 is derived from the same float32 entry
                check(first == "hit" and second == "hit", f"{tag}: the f32 entry serves bf16 ({first}, {second})")
            check(filecmp.cmp(plain, a, shallow=False) and filecmp.cmp(plain, b, shallow=False),
                  f"{tag}: cached outputs are byte-identical to the uncached one")
    n0 = len(entries(cache))
    check(n0 == 2, f"one entry per image ({n0})")
    for extra, what in ((("--tokens", "70"), "budget"), (("--no-exif",), "EXIF choice"),
                        (("--precise",), "mode"), (("--int8",), "mode (INT8)"),
                        (("--int8=blocks",), "mode (INT8, per block)")):
        out = os.path.join(ref, "k.npy")
        check(encode(model, cache, imgs[0], out, *extra) == "miss", f"another {what}: a miss")
        plain = os.path.join(ref, "k.plain.npy")
        encode(model, None, imgs[0], plain, *extra)
        check(filecmp.cmp(plain, out, shallow=False), f"another {what}: output as uncached")
    other = os.path.join(tmp, "tiny2")
    gen_checkpoint(other, "--config", "tiny", "--seed", "12", quiet=True)
    check(encode(other, cache, imgs[0], os.path.join(ref, "m.npy")) == "miss", "another model: a miss")
    check(len(entries(cache)) == n0 + 6, "every key part made its own entry")

    # -- a damaged entry is never served -------------------------------------------------------
    cache = os.path.join(tmp, "c2")
    plain = os.path.join(ref, "img1.plain.npy")
    encode(model, None, imgs[1], plain)
    encode(model, cache, imgs[1], os.path.join(ref, "x.npy"))
    (entry,) = entries(cache)
    size = os.path.getsize(entry)
    good = open(entry, "rb").read()

    def damage(how):
        data = bytearray(good)
        if how == "flipped data byte":
            data[size - 100] ^= 0x01
        elif how == "flipped header byte":
            i = data.index(b'"grid":"') + 8
            data[i] = ord("9") if data[i] != ord("9") else ord("8")
        elif how == "truncated":
            data = data[: size // 2]
        elif how == "garbage":
            data = bytearray(b"not a safetensors file at all")
        elif how == "empty":
            data = bytearray()
        with open(entry, "wb") as f:
            f.write(data)

    for how in ("flipped data byte", "flipped header byte", "truncated", "garbage", "empty"):
        damage(how)
        out = os.path.join(ref, "d.npy")
        state = encode(model, cache, imgs[1], out)
        check(state == "miss", f"{how}: not served ({state})")
        check(filecmp.cmp(plain, out, shallow=False), f"{how}: recomputed output is correct")
        check(open(entry, "rb").read() == good, f"{how}: the entry was rewritten")
        check(encode(model, cache, imgs[1], out) == "hit", f"{how}: then a hit again")

    # -- two processes, one cache --------------------------------------------------------------
    cache = os.path.join(tmp, "c3")
    plain_dir = os.path.join(tmp, "plain_dir")
    subprocess.run([BIN, "encode", "--model", model, *imgs, "-o", plain_dir, "--quiet"], check=True)
    procs, outs = [], []
    for k in range(2):
        o = os.path.join(tmp, f"conc{k}")
        outs.append(o)
        procs.append(subprocess.Popen([BIN, "encode", "--model", model, *imgs, raw, "-o", o, "--json",
                                       "--threads", "1", "--cache", cache],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for k, p in enumerate(procs):
        so, se = p.communicate(timeout=120)
        check(p.returncode == 0, f"concurrent writer {k}: exit 0 ({se.strip()})")
    for o in outs:
        for img in imgs:
            n = os.path.basename(img)[:-4] + ".npy"
            check(filecmp.cmp(os.path.join(plain_dir, n), os.path.join(o, n), shallow=False),
                  f"concurrent writers: {os.path.basename(o)}/{n} identical to uncached", show_ok=False)
    es = entries(cache)
    check(len(es) == len(imgs) + 1, f"concurrent writers: one entry per image ({len(es)})")
    check(not [f for f in os.listdir(cache) if f.startswith("tmp-")], "no temporary files left")
    r = g4v("encode", "--model", model, *imgs, raw, "-o", os.path.join(tmp, "conc3"), "--json",
            "--cache", cache)
    states = [json.loads(line)["cache"] for line in r.stdout.splitlines()]
    check(states == ["hit"] * (len(imgs) + 1), f"after them every image is a hit ({states})")

    # -- least recently used eviction ----------------------------------------------------------
    cache = os.path.join(tmp, "c4")
    out = os.path.join(ref, "e.npy")
    encode(model, cache, imgs[0], out)
    (e0,) = entries(cache)
    one = os.path.getsize(e0)
    limit = str(int(one * 3.5))  # room for three entries
    seen = [e0]
    for img in imgs[1:3]:  # A B C
        before = entries(cache)
        encode(model, cache, img, out, "--cache-max-bytes", limit)
        seen += list(entries(cache) - before)
    check(len(entries(cache)) == 3, "three entries fit")
    check(encode(model, cache, imgs[0], out, "--cache-max-bytes", limit) == "hit", "A: a hit (now the most recent)")
    encode(model, cache, imgs[3], out, "--cache-max-bytes", limit)  # D: one must go
    left = entries(cache)
    check(len(left) == 3, f"still three entries ({len(left)})")
    check(seen[1] not in left, "B, the least recently used, was evicted")
    check(seen[0] in left and seen[2] in left, "A (recently hit) and C stay")
    check(encode(model, cache, imgs[1], out, "--cache-max-bytes", limit) == "miss", "B: a miss now")
    check(encode(model, cache, imgs[3], out, "--cache-max-bytes", limit) == "hit", "D: a hit")
    check(sum(os.path.getsize(e) for e in entries(cache)) <= int(limit), "total stays under the bound")

    # -- usage errors --------------------------------------------------------------------------
    r = g4v("encode", "--model", model, imgs[0], "-o", out, "--cache-max-bytes", "100")
    check(r.returncode == 1 and "needs --cache" in r.stderr, "--cache-max-bytes without --cache: usage error")
    blocker = os.path.join(tmp, "file")
    open(blocker, "w").close()
    r = g4v("encode", "--model", model, imgs[0], "-o", out, "--cache", os.path.join(blocker, "sub"))
    check(r.returncode == 4 and "cache directory" in r.stderr, f"unusable cache directory: exit 4 with a message ({r.stderr.strip()})")

