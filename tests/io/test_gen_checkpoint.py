#!/usr/bin/python3
"""test_gen_checkpoint.py - gen_checkpoint.py writes what the issue and docs/NUMERICS.md §2 ask for.

Checked with a small independent safetensors reader: standard layout (LE length, JSON header padded
to 8, offsets contiguous and covering the data section, bytes == shape x dtype size); determinism;
the same values whatever the naming/sharding/sidecar layout; bf16 = round to nearest even of the f32
values (against a float64 nearest-value computation, ties included); config.json keys
(docs/NUMERICS.md §2.1, §5.1); the tensor set (§2.3) for each option; clip scalars 0-d, shared k/v
and gate/up, ordered; value scales; decoys; index.json consistency.
"""
import functools
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from pyutil import GEN, SRC, gen_checkpoint as gen  # noqa: E402

check = functools.partial(pyutil.check, show_ok=False)  # many small checks: failures only
SIZES = {"BF16": 2, "F16": 2, "F32": 4, "U32": 4}


def read_st(path):
    """name -> (dtype, shape, raw bytes); checks the container as it goes."""
    header, meta, data, n = pyutil.st_parse(open(path, "rb").read())
    check(n % 8 == 0, f"{path}: header length {n} not padded to 8")
    check(meta == {"format": "pt"}, f"{path}: __metadata__")
    spans, out = [], {}
    for name, e in header.items():
        b, en = e["data_offsets"]
        count = int(np.prod(e["shape"], dtype=np.int64))
        check(en - b == count * SIZES[e["dtype"]], f"{path}: {name} length")
        spans.append((b, en))
        out[name] = (e["dtype"], e["shape"], data[b:en])
    spans.sort()
    pos = 0
    for b, en in spans:
        check(b == pos, f"{path}: gap or overlap at {b}")
        pos = en
    check(pos == len(data), f"{path}: data section {len(data)} bytes, tensors end at {pos}")
    return out


def values(dtype, shape, b):
    if dtype == "BF16":
        x = (np.frombuffer(b, "<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        x = np.frombuffer(b, {"F16": "<f2", "F32": "<f4"}[dtype])
    return x.astype(np.float64).reshape(shape)


def load_dir(d):
    """Un-prefixed name -> (dtype, shape, bytes), over every safetensors file of d."""
    out = {}
    for f in sorted(os.listdir(d)):
        if f.endswith(".safetensors"):
            for k, v in read_st(os.path.join(d, f)).items():
                out[k[6:] if k.startswith("model.") else k] = v
    return out


def bf16_nearest(x):
    """Independent RNE: the two bf16 neighbours of each finite f32, compared in float64."""
    x = np.asarray(x, np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    lo = (u >> 16).astype(np.uint64)
    hi = lo + 1
    vlo = ((lo << 16).astype(np.uint32)).view(np.float32).astype(np.float64)
    vhi = ((hi << 16).astype(np.uint32)).view(np.float32).astype(np.float64)
    vhi = np.where(np.isinf(vhi), np.sign(vhi) * 2.0 ** 128, vhi)  # IEEE overflow: as if finite
    xd = x.astype(np.float64)
    dlo, dhi = np.abs(xd - vlo), np.abs(vhi - xd)
    pick_hi = (dhi < dlo) | ((dhi == dlo) & (lo % 2 == 1))
    return np.where(pick_hi, hi, lo).astype(np.uint16)


def check_bf16():
    sys.path.insert(0, os.path.join(SRC, "tools"))
    import gen_checkpoint as G
    rng = np.random.default_rng(0)
    x = rng.standard_normal(100000).astype(np.float32) * np.float32(10) ** rng.integers(-5, 5, 100000)
    ties = ((rng.integers(0, 1 << 15, 1000).astype(np.uint32) << 16) | 0x8000).view(np.float32)
    x = np.concatenate([x, ties, -ties, np.float32([0, -0.0, 1, 65504, 3.4e38])])
    check(np.array_equal(G.to_bf16(x), bf16_nearest(x)), "to_bf16 is not round-to-nearest-even")


def check_layouts(tmp):
    base = os.path.join(tmp, "a")
    gen(base, "--config", "tiny", "--seed", "9")
    ref = load_dir(base)
    again = os.path.join(tmp, "a2")
    gen(again, "--config", "tiny", "--seed", "9")
    for f in os.listdir(base):
        check(open(os.path.join(base, f), "rb").read() == open(os.path.join(again, f), "rb").read(),
              f"{f} differs between two runs with the same seed")
    gen(os.path.join(tmp, "s2"), "--config", "tiny", "--seed", "10")
    other = load_dir(os.path.join(tmp, "s2"))
    check(ref["vision_tower.std_bias"][2] != other["vision_tower.std_bias"][2], "seed has no effect")

    vision = {k for k in ref if k.startswith(("vision_tower.encoder", "vision_tower.patch", "vision_tower.std", "embed_vision"))}
    for args in (["--naming", "mlx"], ["--shards", "3"], ["--shards", "3", "--naming", "mlx"],
                 ["--sidecar"], ["--shards", "1"]):
        d = os.path.join(tmp, "_".join(a.strip("-") for a in args))
        gen(d, "--config", "tiny", "--seed", "9", *args)
        got = load_dir(d)
        for k in vision:
            check(k in got and got[k][2] == ref[k][2], f"{args}: {k} differs from the single-file hf layout")
        files = sorted(os.listdir(d))
        if "--sidecar" in args:
            side = read_st(os.path.join(d, "optiq_vision.safetensors"))
            check(all(not k.startswith("model.") for k in side), "sidecar names carry model.")
            check(vision <= set(side), "sidecar lacks vision tensors")
            main = read_st(os.path.join(d, "model.safetensors"))
            check(not any("vision" in k for k in main), "sidecar mode: vision tensors in model.safetensors")
        if "--shards" in args:
            n = int(args[args.index("--shards") + 1])
            shards = [f"model-{k:05d}-of-{n:05d}.safetensors" for k in range(1, n + 1)]
            check(all(s in files for s in shards), f"{args}: shard files {files}")
            idx = json.load(open(os.path.join(d, "model.safetensors.index.json")))
            stored = {}
            for s in shards:
                for k, v in read_st(os.path.join(d, s)).items():
                    stored[k] = (s, len(v[2]))
            check(idx["weight_map"] == {k: v[0] for k, v in stored.items()}, f"{args}: weight_map")
            check(idx["metadata"]["total_size"] == sum(v[1] for v in stored.values()), f"{args}: total_size")
            if n == 3:
                first = read_st(os.path.join(d, shards[0]))
                check(not any("vision" in k for k in first), "shard 1 should hold only text/audio decoys")
        prefixed = any(k.startswith("model.vision_tower") for f in files if f.endswith(".safetensors")
                       for k in read_st(os.path.join(d, f)))
        check(prefixed == ("mlx" not in args and "--sidecar" not in args), f"{args}: naming")

    # dtypes: f32 holds the unrounded values, bf16 their RNE rounding, f16 their f16 rounding
    for dt in ("f32", "f16"):
        d = os.path.join(tmp, dt)
        gen(d, "--config", "tiny", "--seed", "9", "--dtype", dt)
        got = load_dir(d)
        for k in vision:
            check(got[k][0] == dt.upper(), f"{dt}: {k} dtype {got[k][0]}")
        if dt == "f32":
            for k in vision:
                f32 = np.frombuffer(got[k][2], "<f4")
                check(bf16_nearest(f32).tobytes() == ref[k][2], f"bf16 {k} != RNE(f32 values)")


def check_tensors_and_config(tmp):
    d = os.path.join(tmp, "t")
    gen(d, "--config", "tiny", "--seed", "3")
    cfg = json.load(open(os.path.join(d, "config.json")))
    vc = cfg["vision_config"]
    want = dict(model_type="gemma4_vision", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6,
                patch_size=16, pooling_kernel_size=3, position_embedding_size=256,
                default_output_length=280, use_clipped_linears=True, standardize=True,
                hidden_activation="gelu_pytorch_tanh")
    for k, v in want.items():
        check(vc.get(k) == v, f"config vision_config.{k} = {vc.get(k)!r}, expected {v!r}")
    check(vc.get("rope_parameters") == {"rope_type": "default", "rope_theta": 100.0}, "rope_parameters")
    check(cfg["text_config"]["hidden_size"] == 96, "text_config.hidden_size")
    for k, v in dict(image_token_id=258880, boi_token_id=255999, eoi_token_id=258882, video_token_id=258884).items():
        check(cfg.get(k) == v, f"config {k}")

    t = load_dir(d)
    D, I, H, Hkv, hd, P, T = 64, 128, 4, 2, 16, 256, 96
    shapes = {"vision_tower.patch_embedder.input_proj.weight": [D, 768],
              "vision_tower.patch_embedder.position_embedding_table": [2, P, D],
              "vision_tower.std_bias": [D], "vision_tower.std_scale": [D],
              "embed_vision.embedding_projection.weight": [T, D]}
    lin = {"self_attn.q_proj": [H * hd, D], "self_attn.k_proj": [Hkv * hd, D], "self_attn.v_proj": [Hkv * hd, D],
           "self_attn.o_proj": [D, H * hd], "mlp.gate_proj": [I, D], "mlp.up_proj": [I, D], "mlp.down_proj": [D, I]}
    for i in range(2):
        p = f"vision_tower.encoder.layers.{i}."
        for n in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                  "post_feedforward_layernorm"):
            shapes[p + n + ".weight"] = [D]
        shapes[p + "self_attn.q_norm.weight"] = [hd]
        shapes[p + "self_attn.k_norm.weight"] = [hd]
        for n, s in lin.items():
            shapes[p + n + ".linear.weight"] = s
            for k in ("input_min", "input_max", "output_min", "output_max"):
                shapes[f"{p}{n}.{k}"] = []
    decoys = {"language_model.embed_tokens.weight", "language_model.layers.0.mlp.down_proj.weight",
              "audio_tower.subsample_conv_projection.layer0.conv.weight",
              "vision_tower.rotary_emb.inv_freq", "vision_tower.pooler.scale"}
    check(set(t) == set(shapes) | decoys, f"tensor set: extra {set(t) - set(shapes) - decoys}, "
          f"missing {set(shapes) | decoys - set(t)}")
    for k, s in shapes.items():
        if k in t:
            check(t[k][1] == s and t[k][0] == "BF16", f"{k}: {t[k][:2]} expected BF16 {s}")
    v = {k: values(*t[k]) for k in shapes if k in t}
    for i in range(2):
        p = f"vision_tower.encoder.layers.{i}."
        for a, b in (("self_attn.k_proj", "self_attn.v_proj"), ("mlp.gate_proj", "mlp.up_proj")):
            for k in ("input_min", "input_max", "output_min", "output_max"):
                check(v[f"{p}{a}.{k}"] == v[f"{p}{b}.{k}"], f"{p}{a}/{b}.{k} not shared")
        for n in lin:
            lo, hi = v[f"{p}{n}.input_min"], v[f"{p}{n}.input_max"]
            check(-5 < lo < -0.5 and 0.5 < hi < 5, f"{p}{n} input bounds {lo} {hi}")
            lo, hi = v[f"{p}{n}.output_min"], v[f"{p}{n}.output_max"]
            check(-5 < lo < -0.5 and 0.5 < hi < 5, f"{p}{n} output bounds {lo} {hi}")
    # scales (tiny sample sizes: loose)
    def near(x, want, tol, what):
        check(abs(x - want) <= tol * abs(want), f"{what}: {x:.4g}, expected ~{want:.4g}")
    near(v["vision_tower.patch_embedder.input_proj.weight"].std(), 768 ** -0.5, 0.05, "input_proj std")
    near(v["vision_tower.patch_embedder.position_embedding_table"].std(), 0.5, 0.05, "position std")
    near(v["vision_tower.encoder.layers.0.mlp.down_proj.linear.weight"].std(), I ** -0.5, 0.05, "down std")
    near(v["vision_tower.encoder.layers.0.self_attn.q_proj.linear.weight"].std(), D ** -0.5, 0.05, "q std")
    near(v["vision_tower.encoder.layers.0.input_layernorm.weight"].mean(), 1.0, 0.05, "norm mean")
    near(v["vision_tower.encoder.layers.0.self_attn.q_norm.weight"].mean(), hd ** -0.25, 0.1, "q_norm mean")
    near(v["vision_tower.std_scale"].mean(), 1.0, 0.05, "std_scale mean")
    check(abs(v["vision_tower.std_bias"].mean()) < 0.05 and 0.05 < v["vision_tower.std_bias"].std() < 0.15,
          "std_bias ~ N(0, 0.1^2)")


def check_options(tmp):
    d = os.path.join(tmp, "o")
    gen(d, "--config", "tiny", "--clipped", "0", "--standardize", "0", "--kv-heads", "1",
        "--layers", "3", "--no-decoys", "--seed", "3")
    t = load_dir(d)
    vc = json.load(open(os.path.join(d, "config.json")))["vision_config"]
    check(vc["use_clipped_linears"] is False and vc["standardize"] is False and
          vc["num_key_value_heads"] == 1 and vc["num_hidden_layers"] == 3, "overrides in config.json")
    check(not any(k.endswith(("_min", "_max")) for k in t), "--clipped 0 still writes clip scalars")
    check("vision_tower.std_bias" not in t, "--standardize 0 still writes std_bias")
    check(t["vision_tower.encoder.layers.2.self_attn.k_proj.linear.weight"][1] == [16, 64], "kv-heads 1 k shape")
    check(not any(k.startswith(("language_model", "audio")) for k in t), "--no-decoys")
    base = load_dir(os.path.join(tmp, "t"))
    q2 = os.path.join(tmp, "q2")
    gen(q2, "--config", "tiny", "--seed", "3", "--qk-scale", "2")
    k = "vision_tower.encoder.layers.1.self_attn.q_norm.weight"
    check(np.allclose(values(*load_dir(q2)[k]), 2 * values(*base[k]), rtol=1e-2), "--qk-scale 2")
    for cfgname, want in (("e2b", (768, 3072, 12, 12, 64, 1536, True, False)),
                          ("e4b", (768, 3072, 12, 12, 64, 2560, True, False)),
                          ("26b-a4b", (1152, 4304, 16, 16, 72, 2816, False, True)),
                          ("31b", (1152, 4304, 16, 16, 72, 5376, False, True))):
        r = subprocess.run([sys.executable, GEN, "--config", cfgname, "--help"], capture_output=True)
        check(r.returncode == 0, "--help")
        sys.path.insert(0, os.path.join(SRC, "tools"))
        import gen_checkpoint as G
        c = G.CONFIGS[cfgname]
        got = (c["D"], c["I"], c["H"], c["Hkv"], c["d"], c["T"], c["clipped"], c["standardize"])
        check(got == want and c["layers"] == (16 if cfgname[0] == "e" else 27) and c["P"] == 10240,
              f"{cfgname} config {got} (docs/NUMERICS.md §2.2: {want})")


def test_gen_checkpoint():
    check_bf16()
    with tempfile.TemporaryDirectory() as tmp:
        check_layouts(tmp)
        check_tensors_and_config(tmp)
        check_options(tmp)

