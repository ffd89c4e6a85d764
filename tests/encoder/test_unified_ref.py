#!/usr/bin/python3
"""test_unified_ref.py - the 12B unified (encoder-free) embedder against the float64 reference.

Synthetic unified checkpoints come from tools/gen_checkpoint.py (--config unified-tiny: width 64;
--config 12b: the real shapes, 6912 -> 3840 -> 3840, position table 1120 x 2 x 3840), images
already at a target size go through tests/encoder/encode_tool (g4v_embedder directly) and
tests/reference/reference.py (encode_unified, float64). We print relative RMSE ||c - ref|| /
||ref|| and the max abs error and require (about 1.5x the largest measured, docs/NUMERICS.md §9.6):

  PRECISE (f32 GEMM inputs):              rel RMSE <= 2.6e-6  measured 1.03e-6 .. 1.70e-6
  FAST (bf16 inputs to patch_dense only): rel RMSE <= 2.5e-3  measured 1.23e-3 .. 1.64e-3

The images mix four kinds of 48x48 patch (random noise, flat, nearly flat with +-1 noise,
gradients): the LayerNorm eps only matters on (nearly) flat patches, where the variance of u/255
is ~1e-5. Grids are non-square both ways, so swapped position axes show. Planted bugs and the
PRECISE rel RMSE they gave here (docs/NUMERICS.md §9.6): LayerNorm eps 1e-6 instead of 1e-5
8.1e-6 .. 2.2e-4 (PRECISE only); eps not rescaled to the integer scale 8.6e-6 .. 2.4e-4; position
planes swapped 0.53 .. 0.77 (all but the single-patch case); patch values in (c, dy, dx) order
0.99 .. 1.40; patch_dense read as [Q, E] 1.01 .. 1.29; the embed_vision.pos_* spelling unmapped:
the layout cases fail to load.

Also checked: 1 and 2 threads, and chunks of 1, 7 and 256 patches, give identical bits; every name
spelling and file layout (Hub names with "model.", transformers' embed_vision.* names without it in
an optiq sidecar, shards) gives identical bits and the same fingerprint; `g4v info` reports kind
"unified" and variant "12b" for the real shapes; `g4v encode --model DIR IMAGE` (a PNG, resized
by the budget rule as for the tower: checked against Pillow's BICUBIC + the reference), its
--cache, and the Python package work unchanged on a unified model.

Default cases (~10 s): unified-tiny at five grids, a float16 transformers-named copy, and the 12B
shapes at 480x336 (budget 70's target size for a 10:7 image, 70 tokens). With --long (make
unified-long) also 12B at 768x768 (budget 280, 256 tokens) and 1584x1584 (budget 1120, 1089
tokens; the float64 reference then takes ~30 s).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from pyutil import check, fail, gen_checkpoint as gen  # noqa: E402
import reference  # noqa: E402

TOOL = os.environ.get("G4V_ENCODE_TOOL",
                      os.path.join(pyutil.BUILD, "tests", "encoder", "encode_tool"))
TOL = {"precise": 2.6e-6, "fast": 2.5e-3}
S = 48


def make_image(w, h, seed):
    """uint8 [h, w, 3] at a target size, patch kinds cycling noise / flat / +-1 / gradient."""
    rng = np.random.default_rng(seed)
    img = np.empty((h, w, 3), dtype=np.uint8)
    for i in range(h // S):
        for j in range(w // S):
            kind = (i * (w // S) + j + seed) % 4
            if kind == 0:
                p = rng.integers(0, 256, (S, S, 3))
            elif kind == 1:
                p = np.broadcast_to(rng.integers(0, 256, 3), (S, S, 3))
            elif kind == 2:
                p = rng.integers(1, 255, 3) + rng.integers(-1, 2, (S, S, 3))
            else:
                ramp = np.add.outer(np.arange(S), 2 * np.arange(S))[:, :, None]
                p = (ramp + rng.integers(0, 100, 3)) % 256
            img[i * S:(i + 1) * S, j * S:(j + 1) * S] = p
    return img


def run_c(ck, img, out, mode, threads=2, chunk=None):
    cmd = [TOOL, ck, img, out, "--threads", str(threads)] + (["--precise"] if mode == "precise" else [])
    if chunk:
        cmd += ["--chunk", str(chunk)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr}")
    return np.load(out)


def case(tmp, name, ck, w, h, seed, modes=("precise", "fast"), extra=None):
    img = make_image(w, h, seed)
    for b in (70, 140, 280, 560, 1120):  # the big cases are the full target size of a budget
        if max(w, h) > 240 and pyutil.target_size(h, w, b) == (h, w):
            print(f"     {w}x{h} is the target size at budget {b}: {(w // S) * (h // S)} tokens")
    ipath = os.path.join(tmp, f"{name}_{w}x{h}.npy")
    np.save(ipath, img)
    t0 = time.time()
    ref = reference.encode_unified(reference.Checkpoint(ck), img)
    t_ref = time.time() - t0
    outs = {}
    for mode in modes:
        t0 = time.time()
        c = run_c(ck, ipath, os.path.join(tmp, "out.npy"), mode)
        t_c = time.time() - t0
        outs[mode] = c
        if c.shape != ref.shape:
            fail(f"{name} {w}x{h} {mode}: shape {c.shape} != {ref.shape}")
            continue
        rel = np.linalg.norm(c - ref) / np.linalg.norm(ref)
        mx = np.abs(c - ref).max()
        check(rel <= TOL[mode],
              f"{name:16s} {w:4d}x{h:<4d} {mode:8s} rel_rmse {rel:.3e} <= {TOL[mode]:.1e}, "
              f"max_abs {mx:.3e}  (ref {t_ref:.1f}s, C {t_c:.2f}s)")
    if extra:
        extra(ipath, outs)
    return ipath, outs


def fingerprint(ck):
    r = pyutil.g4v("info", "--model", ck, "--json")
    if r.returncode:
        fail(f"g4v info {ck}: exit {r.returncode}: {r.stderr.strip()}")
        return {}
    return json.loads(r.stdout)


def cli_and_python(tmp, ck):
    """`g4v encode --model DIR IMAGE` and the Python package on a unified model: the budget fills
    as for the tower (512x512 at 280 -> 768x768, 256 tokens: what llama.cpp got wrong), the
    features match Pillow's resize + the reference, the span has N image tokens."""
    from PIL import Image
    rng = np.random.default_rng(7)
    src = make_image(528, 528, 5)[:512, :512]
    src[::7] = rng.integers(0, 256, src[::7].shape)  # some texture across patch borders
    png = os.path.join(tmp, "cli.png")
    Image.fromarray(src).save(png)
    th, tw = pyutil.target_size(512, 512, 280)
    check((th, tw) == (768, 768), f"512x512 at budget 280 -> 768x768 (got {tw}x{th})")
    resized = pyutil.pillow_resize(src, tw, th)
    ref = reference.encode_unified(reference.Checkpoint(ck), resized)
    out = os.path.join(tmp, "cli.npy")
    r = pyutil.g4v("encode", "--model", ck, png, "--precise", "-o", out)
    check(r.returncode == 0, f"g4v encode on a unified model: exit 0 ({r.stderr.strip()[:200]})")
    if r.returncode == 0:
        c = np.load(out)
        rel = np.linalg.norm(c - ref) / np.linalg.norm(ref) if c.shape == ref.shape else 1.0
        check(c.shape == (256, 96) and rel <= TOL["precise"],
              f"g4v encode 512x512: {c.shape} (256, 96), precise rel RMSE {rel:.3e}")
        lines = r.stdout.splitlines()
        check(lines[:1] == ["<|image>" + "<|image|>" * 256 + "<image|>"],
              "g4v encode prints the span with 256 image tokens")
    cache = os.path.join(tmp, "cache")
    runs = [pyutil.g4v("encode", "--model", ck, png, "--precise", "--json", "--cache", cache,
                       "-o", os.path.join(tmp, f"cached{i}.npy")) for i in range(2)]
    said = [json.loads(r.stdout).get("cache") if r.returncode == 0 else None for r in runs]
    same = said == ["miss", "hit"] and all(
        np.array_equal(np.load(os.path.join(tmp, f"cached{i}.npy")), np.load(out)) for i in range(2))
    check(same, f"--cache: miss then hit, both the same bits as without (got {said})")
    r = pyutil.g4v("info", "--model", ck)
    check(r.returncode == 0 and "kind          unified" in r.stdout, "g4v info prints the kind")
    env = dict(os.environ, PYTHONPATH=os.path.join(pyutil.SRC, "python"),
               G4V_LIBRARY=os.path.join(pyutil.BUILD, "libg4v.so"))
    code = ("import sys, numpy as np\n"
            "from gemma4_vision import Model\n"
            "with Model(sys.argv[1], threads=2, precise=True) as m:\n"
            "    r = m.encode(sys.argv[2], tokens=280)\n"
            "    assert m.info.kind == 'unified', m.info.kind\n"
            "    assert np.array_equal(r.features, np.load(sys.argv[3]))\n"
            "    rng = np.random.default_rng(5)\n"
            "    ims = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8)\n"
            "           for h, w in [(100, 150), (48, 48), (300, 97)]]\n"
            "    b = m.encode_batch(ims, tokens=70)\n"
            "    for im, rb in zip(ims, b):\n"
            "        assert np.array_equal(rb.features, m.encode(im, tokens=70).features)\n"
            "    print(m.info.kind, r.features.shape)\n")
    r = subprocess.run([sys.executable, "-c", code, ck, png, out], capture_output=True, text=True,
                       env=env)
    check(r.returncode == 0, f"Python Model: info.kind unified, same bits as g4v encode, "
                             f"encode_batch == encode per image "
                             f"({(r.stdout + r.stderr).strip()[-200:]})")


def loader_cases(tmp, ck):
    """config.json and naming cases of the loader, through `g4v info` (exit 3: model error)."""
    import shutil

    def variant(name, edit_cfg=None, edit_header=None):
        d = os.path.join(tmp, "loader-" + name)
        shutil.copytree(ck, d)
        if edit_cfg:
            with open(os.path.join(d, "config.json")) as f:
                cfg = json.load(f)
            edit_cfg(cfg)
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(cfg, f)
        if edit_header:
            pyutil.st_edit(os.path.join(d, "model.safetensors"), lambda h, _: edit_header(h))
        return pyutil.g4v("info", "--model", d, "--json")

    def expect(name, r, code, text):
        out = r.stdout if code == 0 else r.stderr
        check(r.returncode == code and text in out,
              f"loader {name}: exit {code} with '{text}' (got {r.returncode}: "
              f"{(r.stderr or r.stdout).strip()[:160]!r})")

    def no_vision_type(c):
        del c["vision_config"]["model_type"]

    expect("top-level gemma4_unified", variant("toplevel", no_vision_type), 0, '"kind":\t"unified"')
    expect("model_patch_size", variant("mps", lambda c: c["vision_config"].update(model_patch_size=32)),
           3, "model_patch_size 32 is not patch_size x pooling_kernel_size = 48")
    expect("output_proj_dims", variant("opd", lambda c: c["vision_config"].update(output_proj_dims=32)),
           3, "output_proj_dims 32 differs from mm_embed_dim 64")
    expect("other vision model_type", variant("siglip", lambda c: c["vision_config"].update(model_type="siglip")),
           3, "supported: gemma4_vision, gemma4_unified_vision")

    def both_spellings(h):
        h["model.embed_vision.pos_norm.weight"] = dict(h["model.vision_embedder.pos_norm.weight"])

    expect("one tensor under both spellings", variant("dup", edit_header=both_spellings), 3,
           "appears twice")

    def wrong_shape(h):
        h["model.vision_embedder.pos_embedding"]["shape"] = [2, 64, 64]

    expect("position table [2, P, E] (the tower's layout)", variant("shape", edit_header=wrong_shape),
           3, "expected shape [64, 2, 64]")
    tower = os.path.join(tmp, "tower")
    gen(tower, "--config", "tiny", "--seed", "1")
    expect("a tower model", pyutil.g4v("info", "--model", tower, "--json"), 0, '"kind":\t"tower"')


def test_unified_ref():
    assert os.path.exists(TOOL), f"encode_tool not found at {TOOL}"
    with tempfile.TemporaryDirectory() as tmp:
        tiny = os.path.join(tmp, "utiny")
        gen(tiny, "--config", "unified-tiny", "--seed", "1")

        def same_bits(ipath, outs):
            for mode, base in outs.items():
                for threads, chunk in ((1, None), (2, 1), (2, 7)):
                    c = run_c(tiny, ipath, os.path.join(tmp, "o.npy"), mode, threads, chunk)
                    check(np.array_equal(c, base),
                          f"tiny {mode}: {threads} thread(s), chunk {chunk or 'default'}: same bits")

        sizes = [(48, 48), (96, 48), (48, 144), (144, 96), (240, 192)]
        for i, (w, h) in enumerate(sizes):
            case(tmp, "unified-tiny", tiny, w, h, seed=10 + i,
                 extra=same_bits if i == 4 else None)

        # every spelling and layout: same bits, same fingerprint
        img = make_image(144, 96, 3)
        ipath = os.path.join(tmp, "layout.npy")
        np.save(ipath, img)
        base = run_c(tiny, ipath, os.path.join(tmp, "o.npy"), "precise")
        info = fingerprint(tiny)
        check(info.get("kind") == "unified" and info.get("variant") == "custom",
              f"g4v info: kind unified, variant custom (got {info.get('kind')}, {info.get('variant')})")
        layouts = [("mlx-transformers-sidecar", ["--naming", "mlx", "--spelling", "transformers", "--sidecar"]),
                   ("hf-transformers", ["--spelling", "transformers"]),
                   ("hf-hub-3-shards", ["--shards", "3"]),
                   ("mlx-hub", ["--naming", "mlx"])]
        for name, args in layouts:
            d = os.path.join(tmp, name)
            gen(d, "--config", "unified-tiny", "--seed", "1", *args)
            c = run_c(d, ipath, os.path.join(tmp, "o.npy"), "precise")
            check(np.array_equal(c, base), f"layout {name}: same bits as hub names in one file")
            fp = fingerprint(d)
            check(fp.get("fingerprint") == info.get("fingerprint"),
                  f"layout {name}: same fingerprint ({fp.get('naming')}, {fp.get('source')})")
        f16 = os.path.join(tmp, "utiny-f16")
        gen(f16, "--config", "unified-tiny", "--seed", "2", "--dtype", "f16", "--naming", "mlx",
            "--spelling", "transformers")
        case(tmp, "unified-tiny-f16", f16, 96, 144, seed=20)

        # the real 12B shapes at target sizes of the budgets (pyutil.target_size checks them)
        big = os.path.join(tmp, "12b")
        gen(big, "--config", "12b", "--seed", "3", "--no-decoys")
        info = fingerprint(big)
        check(info.get("kind") == "unified" and info.get("variant") == "12b",
              f"g4v info 12b: kind unified, variant 12b (got {info.get('kind')}, {info.get('variant')})")
        case(tmp, "12b", big, 480, 336, seed=30)
        if "--long" in pyutil.ARGS:
            case(tmp, "12b", big, 768, 768, seed=31)
            case(tmp, "12b", big, 1584, 1584, seed=32)
        cli_and_python(tmp, tiny)
        loader_cases(tmp, tiny)

