#!/usr/bin/python3
"""test_gguf_ref.py - soft tokens from llama.cpp mmproj GGUF files (docs/GGUF.md).

Synthetic checkpoints (tools/gen_checkpoint.py) are converted by tools/gguf_from_checkpoint.py
as llama.cpp's converter would, and encoded through tests/encoder/encode_tool (which opens
either source with g4v_checkpoint_open):

  bit-identical, FAST and PRECISE: the BF16 GGUF of a bf16 checkpoint against that checkpoint,
      the F32 GGUF of an f32 checkpoint against that one, and the F32 GGUF of the bf16 checkpoint
      (F32 weights of bf16 values, which take the BF16 kernels) against the bf16 checkpoint; for
      tiny, tiny-oddk, unified-tiny, e4b and 31b (both cut to 2 layers);
  bounded: the F16 and Q8_0 GGUF files of the bf16 checkpoint against the float64 reference
      (tests/reference/reference.py, run on the safetensors checkpoint the GGUF came from). The
      relative RMSE ||c - ref|| / ||ref|| is printed with the safetensors checkpoint's own, and
      must stay under F16_TOL / Q8_TOL (about 1.5x the largest measured, docs/NUMERICS.md §10);
      the Q8_0 file in the INT8_BLOCKS mode (--int8=blocks: its codes and scales packed as
      stored, docs/NUMERICS.md §12.5) under Q8B_TOL.

Also: `g4v encode --model X.gguf` and `g4v info --model X.gguf` (source format, dtypes, the
fingerprint of a mapped and of a read (--read-weights) load: equal, so no owned tensor was
dropped), a directory holding one mmproj*.gguf, and the audio part of a file being skipped.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from pyutil import check, gen_checkpoint as gen  # noqa: E402
import reference  # noqa: E402

TOOL = os.environ.get("G4V_ENCODE_TOOL", os.path.join(pyutil.BUILD, "tests", "encoder", "encode_tool"))
CONV = os.path.join(pyutil.SRC, "tools", "gguf_from_checkpoint.py")
# rel RMSE bounds against float64 (measured maxima in docs/NUMERICS.md §10)
F16_TOL = {"precise": 2.0e-6, "fast": 3.5e-3}
Q8_TOL = {"precise": 2.3e-2, "fast": 2.3e-2}
Q8B_TOL = 2.2e-2  # 1.5x the largest measured (31b: 1.44e-2)

CASES = [  # config, extra generator args, image height, width
    ("tiny", [], 96, 144),
    ("tiny-oddk", [], 144, 96),
    ("unified-tiny", [], 144, 192),
    ("e4b", ["--layers", "2"], 96, 144),
    ("31b", ["--layers", "2"], 96, 144),
]


def convert(ck, out, outtype, *extra):
    subprocess.run([sys.executable, CONV, ck, out, "--outtype", outtype, *extra], check=True)
    return out


def encode(model, img, mode):
    out = img + f".{os.path.basename(model)}.{mode}.npy"
    args = [TOOL, model, img, out] + {"precise": ["--precise"],
                                      "int8b": ["--int8=blocks"]}.get(mode, [])
    r = subprocess.run(args, capture_output=True, text=True)
    if not check(r.returncode == 0, f"encode_tool {os.path.basename(model)} {mode}", show_ok=False):
        print(r.stderr)
        return None
    return np.load(out)


def rel(c, ref):
    return float(np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref))


def run_case(tmp, config, extra, h, w, measured):
    base = os.path.join(tmp, config)
    ck16, ck32 = base + "-bf16", base + "-f32"
    gen(ck16, "--config", config, "--seed", "11", *extra, quiet=True)
    gen(ck32, "--config", config, "--seed", "11", "--dtype", "f32", *extra, quiet=True)
    g = {t: convert(ck16, f"{base}-{t}.gguf", t) for t in ("bf16", "f16", "q8_0")}
    g["f32"] = convert(ck32, f"{base}-f32.gguf", "f32")
    # --outtype f32 of the bf16 checkpoint: F32 tensors whose values are all bf16 values
    g["f32-of-bf16"] = convert(ck16, f"{base}-f32-of-bf16.gguf", "f32")
    img = np.random.default_rng(3).integers(0, 256, (h, w, 3), dtype=np.uint8)
    ipath = base + "-img.npy"
    np.save(ipath, img)
    ck = reference.Checkpoint(ck16)
    ref = reference.encode_unified(ck, img) if reference.is_unified(ck.config) else reference.encode(ck, img)
    for mode in ("fast", "precise"):
        st16, st32 = encode(ck16, ipath, mode), encode(ck32, ipath, mode)
        for t, st in (("bf16", st16), ("f32", st32)):
            c = encode(g[t], ipath, mode)
            if c is not None and st is not None:
                check(c.shape == st.shape and np.array_equal(c, st),
                      f"{config} {mode}: {t.upper()} GGUF bit-identical to the {t} safetensors")
        # its F32 weights of bf16 values take the BF16 kernels (src/kernels/gemm.h): the bits of
        # the bf16 source on every table, vdpbf16ps included (docs/NUMERICS.md §10)
        c = encode(g["f32-of-bf16"], ipath, mode)
        if c is not None and st16 is not None:
            check(c.shape == st16.shape and np.array_equal(c, st16),
                  f"{config} {mode}: F32 GGUF of the bf16 checkpoint bit-identical to its "
                  f"safetensors (rel RMSE {rel(c, st16) if c.shape == st16.shape else -1:.2e})")
        if st16 is None:
            continue
        base_err = rel(st16, ref)
        for t, tol in (("f16", F16_TOL), ("q8_0", Q8_TOL)):
            c = encode(g[t], ipath, mode)
            if c is None:
                continue
            e = rel(c, ref)
            measured.append((config, mode, t, e, base_err))
            check(e <= tol[mode], f"{config} {mode}: {t.upper()} GGUF rel RMSE {e:.3e} <= {tol[mode]:.1e} "
                                  f"(safetensors bf16: {base_err:.3e})")
    # INT8_BLOCKS packs the Q8_0 file's codes and scales as stored (tests/kernels/test_gemm_q8.c
    # shows they equal requantizing its widened weights for converter-made blocks)
    st, c = encode(ck16, ipath, "int8b"), encode(g["q8_0"], ipath, "int8b")
    if c is not None and st is not None and not reference.is_unified(ck.config):
        e, base_err = rel(c, ref), rel(st, ref)
        measured.append((config, "int8b", "q8_0", e, base_err))
        check(e <= Q8B_TOL, f"{config} int8b: Q8_0 GGUF rel RMSE {e:.3e} <= {Q8B_TOL:.1e} "
                            f"(safetensors bf16 int8b: {base_err:.3e})")
    return g


def python_checks(gguf, png):
    """The Python package on a GGUF path, and the fingerprint of a mapped load (the encoder drops
    mapped pages after packing) against a read_weights load (nothing dropped): equal only if no
    owned (transformed) tensor had its pages dropped, which would zero them."""
    if os.environ.get("G4V_EMULATED"):
        print("skip the Python package checks: libg4v is built for another CPU (run under "
              + os.environ["G4V_EMULATED"] + ")")
        return
    sys.path.insert(0, os.path.join(pyutil.SRC, "python"))
    os.environ.setdefault("G4V_LIBRARY", os.path.join(pyutil.BUILD, "libg4v.so"))
    import ctypes
    import gemma4_vision as g4
    from gemma4_vision import _lib
    m = g4.Model(gguf, threads=1)
    feats = m.encode(png, tokens=70)
    check(feats.features.shape[0] > 0 and m.info.as_dict().get("naming") == "gguf",
          "Python Model() on a Q8_0 GGUF encodes")
    fp = m.fingerprint
    m.close()
    opts = _lib.ModelOptions()
    _lib.lib.g4v_model_options_init(ctypes.byref(opts))
    opts.read_weights = 1
    h, msg = ctypes.c_void_p(), ctypes.create_string_buffer(1024)
    st = _lib.lib.g4v_model_load(os.fsencode(gguf), ctypes.byref(opts), ctypes.byref(h), msg, 1024)
    buf = ctypes.create_string_buffer(80)
    if check(st == 0, f"read_weights load of a GGUF ({msg.value!r})"):
        _lib.lib.g4v_model_fingerprint(h, buf, 80, None, 0)
        _lib.lib.g4v_model_free(h)
    check(fp and fp == buf.value.decode(), "Q8_0 GGUF fingerprint: mapped == read_weights")


def cli_checks(tmp, g):
    """g4v encode / info on a GGUF path and on a directory holding one mmproj file."""
    from PIL import Image
    png = os.path.join(tmp, "img.png")
    Image.fromarray(np.random.default_rng(5).integers(0, 256, (100, 150, 3), dtype=np.uint8)).save(png)
    outs = {}
    for name, model in (("dir", os.path.join(tmp, "tiny-bf16")), ("gguf", g["bf16"])):
        out = os.path.join(tmp, f"cli-{name}.npy")
        r = pyutil.g4v("encode", "--model", model, png, "--tokens", "70", "-o", out)
        check(r.returncode == 0, f"g4v encode --model {name} (exit {r.returncode}: {r.stderr.strip()})")
        outs[name] = np.load(out) if r.returncode == 0 else None
        if name == "gguf" and r.returncode == 0:
            check(r.stdout.splitlines()[1].startswith("ids: 255999 258880x"),
                  "g4v encode on a GGUF prints Gemma 4's token ids")
    if outs["dir"] is not None and outs["gguf"] is not None:
        check(np.array_equal(outs["dir"], outs["gguf"]), "g4v encode: BF16 GGUF == safetensors, PNG end to end")

    r = pyutil.g4v("info", "--model", g["q8_0"], "--json")
    check(r.returncode == 0, f"g4v info --json on a Q8_0 GGUF ({r.stderr.strip()})")
    if r.returncode == 0:
        j = json.loads(r.stdout)
        check(j.get("naming") == "gguf" and "GGUF v3 mmproj, gemma4v, MOSTLY_Q8_0" in j.get("source", ""),
              f"info names the format: naming {j.get('naming')!r}, source {j.get('source')!r}")
    r = pyutil.g4v("info", "--model", g["bf16"])
    check(r.returncode == 0 and "GGUF v3 mmproj" in r.stdout and "BF16:" in r.stdout and "F32:" in r.stdout,
          "g4v info (text) names the GGUF source and the dtypes")
    python_checks(g["q8_0"], png)

    d = os.path.join(tmp, "one")
    os.makedirs(d)
    os.symlink(g["bf16"], os.path.join(d, "mmproj-tiny-BF16.gguf"))
    r = pyutil.g4v("info", "--model", d)
    check(r.returncode == 0 and "mmproj-tiny-BF16.gguf" in r.stdout,
          f"a directory with one mmproj*.gguf opens it ({r.stderr.strip()})")

    audio = convert(os.path.join(tmp, "tiny-bf16"), os.path.join(tmp, "audio.gguf"), "bf16", "--audio-decoy")
    out = os.path.join(tmp, "audio.npy")
    r = pyutil.g4v("encode", "--model", audio, png, "--tokens", "70", "-o", out)
    check(r.returncode == 0 and outs["gguf"] is not None and np.array_equal(np.load(out), outs["gguf"]),
          "the audio part (keys, a Q4_K tensor) is skipped")


def test_gguf_ref():
    measured = []
    with tempfile.TemporaryDirectory() as tmp:
        tiny = None
        for config, extra, h, w in CASES:
            g = run_case(tmp, config, extra, h, w, measured)
            if config == "tiny":
                tiny = g
        cli_checks(tmp, tiny)
    print("\nrel RMSE against float64 (GGUF; safetensors bf16 in brackets):")
    for config, mode, t, e, b in measured:
        print(f"  {config:13s} {mode:8s} {t:5s} {e:.3e}  [{b:.3e}]")

