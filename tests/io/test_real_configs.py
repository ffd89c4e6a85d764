"""test_real_configs.py - the real published config.json / processor_config.json files load, and
give the soft tokens our own generated config gives for the same weights.

For each weight shape (e2b, e4b, 26b-a4b, 31b, 12b) tools/gen_checkpoint.py writes full-size
synthetic vision weights (bf16) once, with its own config.json. Then, beside the same weights
(linked), each real config.json of that shape with its processor_config.json:
  - `g4v info --json` reports what ours reports (variant, shapes, token ids, default budget,
    fingerprint: the fingerprint hashes every parsed value, so equal means parsed alike);
  - `g4v encode --tokens 70` rows are bit-identical (compared as bytes) to ours;
  - without --tokens the real files give budget 280 (read from them, docs/GUIDE.md);
and once per shape the repository layout: 2 shards (model-0000N-of-00002.safetensors +
model.safetensors.index.json) holding the vision tensors split over both shards, mixed with every
text-model, audio-tower and audio-embedder tensor under its real name (tests/io/real_layout.py;
tiny dummies), for the 26B in mlx-community's spelling with its quantization map's U32 text
weights (+ scales, biases). Those rows must be bit-identical too.

The real files are found via G4V_REAL_FILES (docs/TESTING.md "Real metadata"); without them
the test skips (exit 77). --arg=fast (the default suite): e2b, e4b (both files), 12b, ~50 s on 2
cores. --arg=full: the 1152-wide towers, 26b-a4b (mlx 4-bit re-save) and 31b (both files),
~570M parameters each: run only with G4V_REAL_FULL=1 (ctest -L real_full), 4 min on 2 shared
cores (238 s measured; the fast part 49 s).
"""
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyutil  # noqa: E402
import real_layout  # noqa: E402
from pyutil import BIN, GEN, SRC, check, st_header  # noqa: E402

E2B_PROC = "gemma-4-e2b-it.processor_config.json"  # hash-verified equal to the 26B's
# shape -> (gen_checkpoint args, [(real config.json, processor_config.json)], fast?)
# E4B's and 31B's processor_config.json are not stored; the E2B one (identical for 26B, and
# the 31B's has the same 75 lines) stands in.
SHAPES = {
    "e2b": (["--config", "e2b"], [("gemma-4-e2b-it.config.json", E2B_PROC)], True),
    "e4b": (["--config", "e4b"], [("reconstructed/gemma-4-e4b-it.config.json", E2B_PROC),
                                  ("gemma-4-e4b-it.config.resaved-transformers-5.12.1.json",
                                   E2B_PROC)], True),
    "12b": (["--config", "12b", "--spelling", "transformers"],
            [("gemma-4-12b-it.config.json", "gemma-4-12b-it.processor_config.json")], True),
    "26b-a4b": (["--config", "26b-a4b", "--naming", "mlx"],
                [("gemma-4-26b-a4b-it.config.mlx-community-4bit.json", E2B_PROC)], False),
    "31b": (["--config", "31b"], [("reconstructed/gemma-4-31b-it.config.json", E2B_PROC),
                                  ("gemma-4-31b-it.config.printed-transformers-5.7.0.json",
                                   E2B_PROC)], False),
}
INFO_KEYS = ("variant", "kind", "hidden_size", "intermediate_size", "num_layers", "num_heads",
             "num_kv_heads", "head_dim", "patch_size", "pooling_kernel_size",
             "position_embedding_size", "default_output_length", "default_budget",
             "text_hidden_size", "rope_theta", "rms_norm_eps", "param_count", "image_token_id",
             "boi_token_id", "eoi_token_id", "video_token_id", "use_clipped_linears",
             "standardize", "fingerprint")
BUDGET = 70  # the smallest: 630 patches, the cheapest encode of a full-size tower


def real_dir():
    d = os.environ.get("G4V_REAL_FILES", "")
    return d if os.path.isfile(os.path.join(d, "gemma-4-e2b-it.config.json")) else None


def mode():
    return pyutil.ARGS[0] if pyutil.ARGS else "fast"


def run(*args):
    r = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"g4v {' '.join(map(str, args))}: rc {r.returncode}\n{r.stderr}"
    return r.stdout


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    real = real_dir()
    if not real:
        pytest.skip("the real files are not there (set G4V_REAL_FILES to the real-files folder)")
    if mode() == "full" and os.environ.get("G4V_REAL_FULL") != "1":
        pytest.skip("the full-size 26B/31B part runs only with G4V_REAL_FULL=1")
    d = tmp_path_factory.mktemp("real")
    from PIL import Image
    rng = np.random.default_rng(3)
    Image.fromarray((rng.random((61, 97, 3)) * 255).astype(np.uint8)).save(d / "img.png")
    return real, d


def encode(work_dir, model, *extra):
    out = work_dir / (model.name + ".npy")
    run("encode", "--model", str(model), str(work_dir / "img.png"), "-o", str(out), "-q", *extra)
    return out.read_bytes()


def info(model):
    js = json.loads(run("info", "--model", str(model), "--json"))
    return {k: js.get(k) for k in INFO_KEYS}, js


def beside(dst, weights_dir, real, cfg, proc):
    """dst: weights_dir's safetensors files (linked) + the real config and processor files."""
    dst.mkdir()
    for f in os.listdir(weights_dir):
        if f.endswith(".safetensors") or f == "model.safetensors.index.json":
            os.symlink(weights_dir / f, dst / f)
    shutil.copyfile(os.path.join(real, cfg), dst / "config.json")
    shutil.copyfile(os.path.join(real, proc), dst / "processor_config.json")
    return dst


def write_st(path, items, src):
    """A safetensors file of items [(name, dtype, shape, (offset, size) in src or bytes)],
    streamed from the open file src."""
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, dt, shape, data in items:
        size = data[1] if isinstance(data, tuple) else len(data)
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + size]}
        off += size
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb)
        for _, _, _, data in items:
            if isinstance(data, tuple):
                src.seek(data[0])
                f.write(src.read(data[1]))
            else:
                f.write(data)
    return off


def repo_layout(dst, weights_dir, real, cfg_name, naming):
    """dst: the 2-shard repository layout of the real config, weights from weights_dir."""
    dst.mkdir()
    cfg = json.load(open(os.path.join(real, cfg_name)))
    src_path = weights_dir / "model.safetensors"
    header, base = st_header(src_path)
    header.pop("__metadata__", None)
    vision = [(n, e["dtype"], e["shape"], (base + e["data_offsets"][0],
                                            e["data_offsets"][1] - e["data_offsets"][0]))
              for n, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0])]
    spell = real_layout.to_mlx if naming == "mlx" else (lambda n: n)
    other = []
    for n in real_layout.other_tensor_names(cfg):
        shape = real_layout.dummy_shape(n)
        other.append((spell(n), "BF16", shape, b"\x80\x3f" * (2 if shape else 1)))
    # mlx-community's quantized text modules: U32-packed weight + scales + biases
    for key, q in (cfg.get("quantization") or {}).items():
        if isinstance(q, dict):
            other += [(key + ".weight", "U32", [2], b"\x01\x00\x00\x00" * 2),
                      (key + ".scales", "BF16", [2], b"\x80\x3f" * 2),
                      (key + ".biases", "BF16", [2], b"\x00\x00" * 2)]
    names = {n for n, *_ in vision}
    other = [o for o in other if o[0] not in names]
    # as save_pretrained fills shards: text first, the vision tower straddling the boundary
    half = len(vision) // 2
    shards = [other[: len(other) // 2] + vision[:half], vision[half:] + other[len(other) // 2:]]
    weight_map, total = {}, 0
    with open(src_path, "rb") as src:
        for k, items in enumerate(shards):
            fname = f"model-{k + 1:05d}-of-00002.safetensors"
            total += write_st(dst / fname, items, src)
            weight_map.update({n: fname for n, *_ in items})
    with open(dst / "model.safetensors.index.json", "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    return len(other), len(vision)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_real_config(work, shape):
    real, d = work
    gen_args, files, fast = SHAPES[shape]
    if fast != (mode() == "fast"):
        pytest.skip(f"{shape} runs with --arg={'fast' if fast else 'full'}")
    own = d / f"own-{shape}"
    subprocess.run([sys.executable, GEN, str(own), "--no-decoys", *gen_args], check=True)
    ref = encode(d, own, "--tokens", str(BUDGET))
    ref_info, _ = info(own)
    check(ref_info["default_budget"] == 280, f"{shape}: our config's default budget is 280")
    naming = "mlx" if "mlx" in gen_args else "hf"
    for i, (cfg, proc) in enumerate(files):
        model = beside(d / f"real-{shape}-{i}", own, real, cfg, proc)
        got_info, js = info(model)
        diff = {k: (ref_info[k], got_info[k]) for k in INFO_KEYS if ref_info[k] != got_info[k]}
        check(not diff, f"{shape} {cfg}: info as ours ({diff or 'variant ' + js['variant']})")
        check(encode(d, model, "--tokens", str(BUDGET)) == ref,
              f"{shape} {cfg}: {BUDGET} soft tokens bit-identical to our config's")
    # the repository layout, with the first real config
    cfg, proc = files[0]
    model = d / f"repo-{shape}"
    n_other, n_vision = repo_layout(model, own, real, cfg, naming)
    shutil.copyfile(os.path.join(real, cfg), model / "config.json")
    shutil.copyfile(os.path.join(real, proc), model / "processor_config.json")
    _, js = info(model)
    check("2 shards" in js["source"] and js["param_count"] == ref_info["param_count"],
          f"{shape}: 2-shard layout with {n_other} text/audio tensors read "
          f"{n_vision} vision tensors from {js['source']}")
    check(encode(d, model, "--tokens", str(BUDGET)) == ref,
          f"{shape}: 2-shard repository layout gives the same {BUDGET} soft tokens")
    shutil.rmtree(own)  # the full-size weights: ~0.1-1.1 GB each
    shutil.rmtree(model)
