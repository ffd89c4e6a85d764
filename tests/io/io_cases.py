#!/usr/bin/python3
"""io_cases.py - writes the checkpoint-loading fixtures: good checkpoints in every layout and a
corrupted checkpoint per validation error, plus manifest.json describing what each must give.

Usage: io_cases.py OUTDIR   (the ctest fixture "io_fixtures"; test_checkpoint.c and
tests/cli/test_cli_info.py both read OUTDIR/manifest.json).

Good cases come from tools/gen_checkpoint.py; their expectations (config fields, parameter count,
bytes, a crc32 of every vision tensor's bytes, the clip values) are computed here from the
generator's own tensor specs, never from our loader. Bad cases take a good tiny checkpoint and
break one thing, with the status and a message substring the loader must report.
"""
import copy
import json
import os
import shutil
import struct
import sys
import zlib

import numpy as np

SRC = os.environ.get("G4V_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tools"))
import gen_checkpoint as G  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_cases  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402

LIN = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
       "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]


def gen(out, *args):
    """tools/gen_checkpoint.py, run in-process (saves a Python start per checkpoint)."""
    G.main([out, *args])


# ---- raw safetensors editing (independent of the generator's writer: tests/pyutil.py) -----------

read_st = pyutil.st_load
write_st = pyutil.st_write
edit_st = pyutil.st_edit


def edit_json(path, fn):
    with open(path) as f:
        j = json.load(f)
    fn(j)
    with open(path, "w") as f:
        json.dump(j, f, indent=1)


# ---- expectations -----------------------------------------------------------------------------

def expectation(args_dict, c, naming, source):
    """What the loader must report for a checkpoint made with these generator settings."""
    dtype = G.DTYPES[args_dict.get("dtype", "bf16")]
    specs = G.vision_specs(c, dtype, args_dict.get("seed", 0), args_dict.get("qk_scale", 1.0))
    tensors, clips, norms = {}, {}, {}
    params = nbytes = 0
    for s in specs:
        b = s.data()
        if s.name.endswith(("self_attn.q_norm.weight", "self_attn.k_norm.weight")):
            norms[s.name] = G_decode_all(b, s.dtype).astype(np.float64)
        tensors[s.name] = {"dtype": s.dtype, "shape": s.shape, "crc32": zlib.crc32(b)}
        params += int(np.prod(s.shape, dtype=np.int64))
        nbytes += len(b)
        if not s.shape:
            clips[s.name] = float(G_decode(b, s.dtype))
    clip_table = None
    if c["clipped"]:
        clip_table = [[[clips[f"vision_tower.encoder.layers.{i}.{lin}.{k}"] for k in G.CLIP_KEYS]
                       for lin in LIN] for i in range(c["layers"])]
    variant = {(768, 1536): "e2b", (768, 2560): "e4b", (1152, 2816): "26b-a4b",
               (1152, 5376): "31b"}.get((c["D"], c["T"]), "custom")
    return {
        "cfg": {"variant": variant, "hidden_size": c["D"], "intermediate_size": c["I"],
                "num_layers": c["layers"], "num_heads": c["H"], "num_kv_heads": c["Hkv"],
                "head_dim": c["d"], "patch_size": 16, "pooling_kernel_size": 3,
                "position_embedding_size": c["P"], "default_output_length": 280,
                "text_hidden_size": c["T"], "rope_theta": c["rope_theta"], "rms_norm_eps": 1e-6,
                "use_clipped_linears": c["clipped"], "standardize": c["standardize"],
                "image_token_id": 258880, "boi_token_id": 255999, "eoi_token_id": 258882,
                "video_token_id": 258884},
        "param_count": params, "weight_bytes": nbytes, "naming": naming, "source": source,
        "dtype": dtype, "tensors": tensors, "clips": clip_table,
        # docs/NUMERICS.md §6.5: each layer's sharpness, sqrt(sum (q_norm k_norm)^2), as stored
        "sharpness": [float(np.sqrt(np.sum((norms[f"vision_tower.encoder.layers.{i}.self_attn."
                                                  "q_norm.weight"] *
                                            norms[f"vision_tower.encoder.layers.{i}.self_attn."
                                                  "k_norm.weight"]) ** 2)))
                      for i in range(c["layers"])],
    }


def G_decode_all(b, dtype):
    if dtype == "BF16":
        return (np.frombuffer(b, "<u2").astype(np.uint32) << 16).view(np.float32)
    return np.frombuffer(b, {"F16": "<f2", "F32": "<f4"}[dtype]).astype(np.float32)


def G_decode(b, dtype):
    if dtype == "BF16":
        return (np.frombuffer(b, "<u2").astype(np.uint32) << 16).view(np.float32)[0]
    return np.frombuffer(b, {"F16": "<f2", "F32": "<f4"}[dtype])[0]


def config_of(name, layers=None, clipped=None, standardize=None, kv=None):
    c = dict(G.CONFIGS[name])
    if layers is not None:
        c["layers"] = layers
    if clipped is not None:
        c["clipped"] = bool(clipped)
    if standardize is not None:
        c["standardize"] = bool(standardize)
    if kv is not None:
        c["Hkv"] = kv
    return c


class Cases:
    def __init__(self, out):
        self.out = out
        self.good, self.bad = [], []

    def path(self, name):
        return os.path.join(self.out, name)

    def add_good(self, name, exp, gen_args=None, max_mapped=None):
        d = self.path(name)
        with open(d + ".expect.json", "w") as f:
            json.dump(exp, f)
        self.good.append({"name": name, "dir": d, "expect": d + ".expect.json",
                          "gen_args": gen_args or [], "max_mapped_bytes": max_mapped})

    def add_bad(self, name, status, substring, d=None):
        self.bad.append({"name": name, "dir": d or self.path(name), "status": status,
                         "substring": substring})

    def base_copy(self, name, src="tiny_base"):
        d = self.path(name)
        shutil.copytree(self.path(src), d)
        return d


def make(out):
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    C = Cases(out)

    # -- good: tiny in every layout x naming x dtype --------------------------------------------
    for dt in ("bf16", "f16", "f32"):
        for naming in ("hf", "mlx"):
            for layout in ("single", "shards1", "shards3", "sidecar"):
                name = f"tiny_{layout}_{naming}_{dt}"
                args = ["--config", "tiny", "--dtype", dt, "--naming", naming, "--seed", "7"]
                if layout == "shards1":
                    args += ["--shards", "1"]
                elif layout == "shards3":
                    args += ["--shards", "3"]
                elif layout == "sidecar":
                    args += ["--sidecar"]
                gen(C.path(name), *args)
                source = {"single": "model.safetensors",
                          "shards1": "(1 of 1 shards, via model.safetensors.index.json)",
                          "shards3": "(2 of 3 shards, via model.safetensors.index.json)",
                          "sidecar": "optiq_vision.safetensors"}[layout]
                eff_naming = "mlx" if layout == "sidecar" else naming
                C.add_good(name, expectation({"dtype": dt, "seed": 7}, config_of("tiny"),
                                             eff_naming, source), args)

    # -- good: the real variants cut to 2 layers --------------------------------------------------
    for i, v in enumerate(("e2b", "e4b", "26b-a4b", "31b")):
        name = f"{v}_2layers"
        args = ["--config", v, "--layers", "2", "--seed", str(20 + i)]
        if v == "31b":
            args += ["--shards", "3", "--naming", "mlx"]
        gen(C.path(name), *args)
        C.add_good(name, expectation({"seed": 20 + i}, config_of(v, layers=2),
                                     "mlx" if v == "31b" else "hf",
                                     "(2 of 3 shards" if v == "31b" else "model.safetensors"), args)

    # -- good: option overrides -------------------------------------------------------------------
    args = ["--config", "tiny", "--clipped", "0", "--standardize", "0", "--kv-heads", "4",
            "--seed", "3"]
    gen(C.path("tiny_plain_mha"), *args)
    C.add_good("tiny_plain_mha", expectation({"seed": 3}, config_of("tiny", clipped=0, standardize=0, kv=4),
                                             "hf", "model.safetensors"), args)
    args = ["--config", "tiny", "--kv-heads", "1", "--qk-scale", "3", "--seed", "4"]
    gen(C.path("tiny_mqa"), *args)
    C.add_good("tiny_mqa", expectation({"seed": 4, "qk_scale": 3.0}, config_of("tiny", kv=1), "hf",
                                       "model.safetensors"), args)

    # the base every bad case and a few good variants start from
    gen(C.path("tiny_base"), "--config", "tiny", "--seed", "5")
    base_exp = expectation({"seed": 5}, config_of("tiny"), "hf", "model.safetensors")
    C.add_good("tiny_base", base_exp)
    st_name = "model.safetensors"

    def good_variant(name, fn, exp_fn=None):
        d = C.base_copy(name)
        fn(d)
        exp = copy.deepcopy(base_exp)
        if exp_fn:
            exp_fn(exp)
        C.add_good(name, exp)

    # standardize off in config while std tensors exist: they are ignored
    def no_std_exp(e):
        e["cfg"]["standardize"] = False
        for k in ("vision_tower.std_bias", "vision_tower.std_scale"):
            t = e["tensors"].pop(k)
            e["param_count"] -= 64
            e["weight_bytes"] -= 128
            assert t["shape"] == [64]
    good_variant("tiny_std_ignored",
                 lambda d: edit_json(os.path.join(d, "config.json"),
                                     lambda j: j["vision_config"].update(standardize=False)),
                 no_std_exp)

    # token ids: absent -> docs/NUMERICS.md §5.1 defaults; present -> read
    def drop_ids(j):
        for k in ("image_token_id", "boi_token_id", "eoi_token_id", "video_token_id"):
            del j[k]
    good_variant("tiny_ids_default", lambda d: edit_json(os.path.join(d, "config.json"), drop_ids))

    def set_ids(j):
        j.update(image_token_id=11, boi_token_id=12, eoi_token_id=13, video_token_id=14)

    def set_ids_exp(e):
        e["cfg"].update(image_token_id=11, boi_token_id=12, eoi_token_id=13, video_token_id=14)
    good_variant("tiny_ids_custom", lambda d: edit_json(os.path.join(d, "config.json"), set_ids),
                 set_ids_exp)

    # older config spelling: rope_theta directly in vision_config, no rope_parameters
    def old_rope(j):
        del j["vision_config"]["rope_parameters"]
        j["vision_config"]["rope_theta"] = 250.0
    good_variant("tiny_old_rope", lambda d: edit_json(os.path.join(d, "config.json"), old_rope),
                 lambda e: e["cfg"].update(rope_theta=250.0))

    # clip scalars stored with shape [1] (some converters)
    def clips_as_1(h, d):
        for k, v in h.items():
            if k.endswith(("_min", "_max")):
                v["shape"] = [1]
    good_variant("tiny_clip_shape1", lambda d: edit_st(os.path.join(d, st_name), clips_as_1))

    # a non-vision tensor with an unknown dtype and offsets outside the data: never looked at
    def weird_decoy(h, d):
        e = h["model.language_model.embed_tokens.weight"]
        e["dtype"] = "X9"
        e["data_offsets"] = [10 ** 12, 10 ** 12 + 5]
    good_variant("tiny_weird_decoy", lambda d: edit_st(os.path.join(d, st_name), weird_decoy))

    # the text-only shard is absent: never opened, not needed
    name = "tiny_text_shard_absent"
    gen(C.path(name), "--config", "tiny", "--seed", "5", "--shards", "3")
    os.remove(os.path.join(C.path(name), "model-00001-of-00003.safetensors"))
    e = copy.deepcopy(base_exp)
    e["source"] = "(2 of 3 shards"
    C.add_good(name, e)

    # 8 MB of text weights between embed_vision and vision_tower (as in HF files, where names
    # sort that way): the loader must not map them (test_checkpoint.c reads /proc/self/maps).
    def text_between(d):
        p = os.path.join(d, st_name)
        h, data = read_st(p)
        names = [k for k in h if k != "__metadata__"]
        first = [k for k in names if k.startswith("model.embed_vision")]
        rest = [k for k in names if k not in first]
        big = "model.language_model.layers.0.mlp.gate_proj.weight"
        blob = np.random.default_rng(1).integers(0, 65536, 4 << 20, dtype=np.uint16).tobytes()
        out, nh, off = bytearray(), {"__metadata__": h["__metadata__"]}, 0
        for k in first + [big] + rest:
            if k == big:
                chunk, e = blob, {"dtype": "BF16", "shape": [4 << 20]}
            else:
                b, en = h[k]["data_offsets"]
                chunk, e = data[b:en], dict(h[k])
            e["data_offsets"] = [off, off + len(chunk)]
            nh[k] = e
            out += chunk
            off += len(chunk)
        write_st(p, nh, out)
    d = C.base_copy("tiny_text_between")
    text_between(d)
    C.add_good("tiny_text_between", copy.deepcopy(base_exp), max_mapped=2 << 20)

    # -- bad cases --------------------------------------------------------------------------------
    C.add_bad("missing_dir", "G4V_ERR_IO", "No such file or directory")
    with open(C.path("not_a_dir"), "w") as f:
        f.write("x")
    C.add_bad("not_a_dir", "G4V_ERR_IO", "not a directory")  # a file that is not a GGUF

    def bad(name, status, substring, fn):
        d = C.base_copy(name)
        fn(d)
        C.add_bad(name, status, substring)

    def cfg_edit(fn):
        return lambda d: edit_json(os.path.join(d, "config.json"), fn)

    def st_edit(fn, fname=st_name):
        return lambda d: edit_st(os.path.join(d, fname), fn)

    def write_file(fname, content):
        def f(d):
            with open(os.path.join(d, fname), "wb") as fh:
                fh.write(content)
        return f

    bad("no_config", "G4V_ERR_IO", "config.json: cannot open",
        lambda d: os.remove(os.path.join(d, "config.json")))
    bad("config_malformed", "G4V_ERR_MODEL", "config.json: malformed JSON",
        write_file("config.json", b'{"vision_config": {"hidden_size": 64,'))
    bad("config_trailing", "G4V_ERR_MODEL", "unexpected data",
        write_file("config.json", b'{"vision_config": {}} x'))
    bad("config_no_vision", "G4V_ERR_MODEL", "no vision_config",
        cfg_edit(lambda j: j.pop("vision_config")))
    bad("config_bad_type", "G4V_ERR_MODEL", "vision_config.hidden_size must be an integer",
        cfg_edit(lambda j: j["vision_config"].update(hidden_size="64")))
    bad("config_gqa", "G4V_ERR_MODEL", "not a multiple of num_key_value_heads",
        cfg_edit(lambda j: j["vision_config"].update(num_key_value_heads=3)))
    bad("config_model_type", "G4V_ERR_UNSUPPORTED", "model_type is 'siglip_vision_model'",
        cfg_edit(lambda j: j["vision_config"].update(model_type="siglip_vision_model")))
    bad("config_rope_type", "G4V_ERR_UNSUPPORTED", "rope_type is 'linear'",
        cfg_edit(lambda j: j["vision_config"]["rope_parameters"].update(rope_type="linear")))
    bad("config_no_text", "G4V_ERR_MODEL", "text_config.hidden_size is missing",
        cfg_edit(lambda j: j.pop("text_config")))
    bad("no_weights", "G4V_ERR_IO", "no weights",
        lambda d: os.remove(os.path.join(d, st_name)))
    bad("short_file", "G4V_ERR_MODEL", "too short for a safetensors header",
        write_file(st_name, b"\x10\x00\x00"))

    def set_len(delta=None, value=None):
        def f(d):
            p = os.path.join(d, st_name)
            with open(p, "r+b") as fh:
                (n,) = struct.unpack("<Q", fh.read(8))
                size = os.path.getsize(p)
                fh.seek(0)
                fh.write(struct.pack("<Q", value if value is not None else size - 8 + delta))
        return f
    bad("header_past_eof", "G4V_ERR_MODEL", "runs past the end of the file", set_len(delta=1))
    bad("header_above_limit", "G4V_ERR_LIMIT", "above the limit of 100000000 bytes",
        set_len(value=1 << 40))

    def corrupt_header(d):
        p = os.path.join(d, st_name)
        h, data = read_st(p)
        raw = json.dumps(h).encode()
        raw = raw[:len(raw) // 2] + b"@@" + raw[len(raw) // 2 + 2:]
        write_st(p, None, data, raw=raw)
    bad("header_malformed", "G4V_ERR_MODEL", "safetensors header: malformed JSON", corrupt_header)

    def header_array(d):
        p = os.path.join(d, st_name)
        _, data = read_st(p)
        write_st(p, None, data, raw=b"[1, 2]  ")
    bad("header_not_object", "G4V_ERR_MODEL", "header does not start with '{'", header_array)

    def header_trailing(d):
        p = os.path.join(d, st_name)
        h, data = read_st(p)
        write_st(p, None, data, raw=json.dumps(h).encode() + b" }")
    bad("header_trailing", "G4V_ERR_MODEL", "unexpected data", header_trailing)

    Q = "model.vision_tower.encoder.layers.0.self_attn.q_proj.linear.weight"
    K = "model.vision_tower.encoder.layers.0.self_attn.k_proj.linear.weight"
    V = "model.vision_tower.encoder.layers.0.self_attn.v_proj.linear.weight"
    DOWN1 = "model.vision_tower.encoder.layers.1.mlp.down_proj.linear.weight"

    def offsets_outside(h, d):
        b, e = h[Q]["data_offsets"]
        n = len(d)
        h[Q]["data_offsets"] = [n - (e - b) + 2, n + 2]
    bad("offsets_outside", "G4V_ERR_MODEL", "lie outside the data section", st_edit(offsets_outside))

    def offsets_reversed(h, d):
        b, e = h[Q]["data_offsets"]
        h[Q]["data_offsets"] = [e, b]
    bad("offsets_reversed", "G4V_ERR_MODEL", "end before begin", st_edit(offsets_reversed))

    def offsets_overlap(h, d):
        # v gets k's bytes shifted by 2: same length, overlapping k
        b, e = h[K]["data_offsets"]
        h[V]["data_offsets"] = [b + 2, e + 2]
    bad("offsets_overlap", "G4V_ERR_MODEL", "overlap", st_edit(offsets_overlap))

    def length_mismatch(h, d):
        b, e = h[Q]["data_offsets"]
        h[Q]["data_offsets"] = [b, e - 2]
    bad("length_mismatch", "G4V_ERR_MODEL", "hold 8190 bytes, but shape [64, 64] of BF16 needs 4096",
        st_edit(length_mismatch))

    def shape_mismatch(h, d):
        h[Q]["shape"] = [32, 128]
    bad("shape_mismatch", "G4V_ERR_MODEL",
        Q + ": expected shape [64, 64] (from config.json), found [32, 128]", st_edit(shape_mismatch))

    def inner_dim_mismatch(h, d):  # a consistent byte length, only the last dim is wrong
        b, e = h[Q]["data_offsets"]
        h[Q].update(shape=[64, 32], data_offsets=[b, b + 64 * 32 * 2])
    bad("inner_dim_mismatch", "G4V_ERR_MODEL",
        Q + ": expected shape [64, 64] (from config.json), found [64, 32]", st_edit(inner_dim_mismatch))

    def rank_mismatch(h, d):
        h["model.vision_tower.std_bias"]["shape"] = [1, 64]
    bad("rank_mismatch", "G4V_ERR_MODEL", "std_bias: expected shape [64] (from config.json), found [1, 64]",
        st_edit(rank_mismatch))
    bad("missing_tensor", "G4V_ERR_MODEL", "missing tensor " + DOWN1,
        st_edit(lambda h, d: h.pop(DOWN1)))
    bad("missing_std", "G4V_ERR_MODEL", "missing tensor model.vision_tower.std_scale",
        st_edit(lambda h, d: h.pop("model.vision_tower.std_scale")))
    clip = "model.vision_tower.encoder.layers.1.mlp.gate_proj.output_max"
    bad("missing_clip", "G4V_ERR_MODEL", "missing tensor " + clip, st_edit(lambda h, d: h.pop(clip)))
    bad("unknown_dtype", "G4V_ERR_UNSUPPORTED", "unsupported dtype 'X7'",
        st_edit(lambda h, d: h[Q].update(dtype="X7")))

    def quantized(h, d):
        h[Q].update(dtype="U32", shape=[64, 32])
    bad("quantized", "G4V_ERR_UNSUPPORTED", "quantized vision weights are not", st_edit(quantized))
    bad("negative_shape", "G4V_ERR_MODEL", "shape entry 0 is not a non-negative integer",
        st_edit(lambda h, d: h[Q].update(shape=[-64, -64])))
    bad("shape_overflow", "G4V_ERR_MODEL", "element count overflows",
        st_edit(lambda h, d: h[Q].update(shape=[2 ** 40, 2 ** 40])))
    bad("offsets_type", "G4V_ERR_MODEL", "data_offsets must be two non-negative integers",
        st_edit(lambda h, d: h[Q].update(data_offsets="0-8192")))
    bad("entry_not_object", "G4V_ERR_MODEL", "header entry is not an object",
        st_edit(lambda h, d: h.update({Q: [1, 2]})))

    def duplicate(h, d):
        h["vision_tower.std_bias"] = dict(h["model.vision_tower.std_bias"])
    bad("duplicate", "G4V_ERR_MODEL", "appears twice", st_edit(duplicate))

    def clip_unordered(h, d):
        k = "model.vision_tower.encoder.layers.0.self_attn.o_proj.input_min"
        b, _ = h[k]["data_offsets"]
        d[b:b + 2] = struct.pack("<H", 0x4120)  # bf16 10.0 > input_max
    bad("clip_unordered", "G4V_ERR_MODEL", "are not ordered", st_edit(clip_unordered))

    # sharded checkpoints
    def sharded(name):
        d = C.path(name)
        gen(d, "--config", "tiny", "--seed", "5", "--shards", "3")
        return d
    d = sharded("missing_shard")
    os.remove(os.path.join(d, "model-00002-of-00003.safetensors"))
    C.add_bad("missing_shard", "G4V_ERR_IO",
              "shard model-00002-of-00003.safetensors named in model.safetensors.index.json")

    d = sharded("index_malformed")
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        f.write('{"weight_map": {"a": ')
    C.add_bad("index_malformed", "G4V_ERR_MODEL", "model.safetensors.index.json: malformed JSON")

    d = sharded("index_traversal")
    edit_json(os.path.join(d, "model.safetensors.index.json"),
              lambda j: j["weight_map"].update({Q: "../model-00002-of-00003.safetensors"}))
    C.add_bad("index_traversal", "G4V_ERR_MODEL", "is not a plain file name")

    d = sharded("index_wrong_shard")
    idx = os.path.join(d, "model.safetensors.index.json")
    with open(idx) as f:
        wm = json.load(f)["weight_map"]
    shard = wm[DOWN1]
    edit_json(idx, lambda j: j["weight_map"].update({DOWN1: "model-00001-of-00003.safetensors"}))
    edit_st(os.path.join(d, shard), lambda h, dd: h.pop(DOWN1))
    C.add_bad("index_wrong_shard", "G4V_ERR_MODEL",
              "places it in model-00001-of-00003.safetensors, which does not hold it")

    d = sharded("shard_corrupt")
    with open(os.path.join(d, "model.safetensors.index.json")) as f:
        wm = json.load(f)["weight_map"]
    p = os.path.join(d, wm[Q])
    with open(p, "r+b") as fh:
        fh.write(struct.pack("<Q", os.path.getsize(p)))
    C.add_bad("shard_corrupt", "G4V_ERR_MODEL", wm[Q] + ": safetensors header length")

    # a corrupt sidecar is reported, not silently skipped
    d = C.path("sidecar_corrupt")
    gen(d, "--config", "tiny", "--seed", "5", "--sidecar")
    with open(os.path.join(d, "optiq_vision.safetensors"), "r+b") as fh:
        fh.seek(8)
        fh.write(b"[")
    C.add_bad("sidecar_corrupt", "G4V_ERR_MODEL", "optiq_vision.safetensors: not a safetensors file")

    gguf_good = gguf_cases.add(C, out)  # mmproj GGUF files (docs/GGUF.md)

    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"good": C.good, "bad": C.bad, "gguf_good": gguf_good}, f, indent=1)
    return C


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: io_cases.py OUTDIR")
    c = make(sys.argv[1])
    print(f"io_cases: {len(c.good)} good and {len(c.bad)} bad checkpoints in {sys.argv[1]}")
