#!/usr/bin/python3
"""gen_checkpoint.py - writes a synthetic Gemma 4 checkpoint directory for tests and demos.

The directory has the real layout and tensor names (docs/NUMERICS.md §2, and §9 for the 12B
unified embedder: --config 12b or unified-tiny): config.json as HF-convert writes it, and the weights as model.safetensors, as shards plus model.safetensors.index.json
(--shards N), or as an mlx-bun style optiq_vision.safetensors sidecar (--sidecar). Names carry
the "model." prefix (--naming hf) or not (--naming mlx). A few decoy tensors that a vision loader
must ignore are written too: a text embedding, a U32 (quantized-looking) text tensor, an audio
weight, rotary_emb.inv_freq and pooler.scale.

Values are random but well scaled (the issue's recipe), and deterministic: each tensor draws from
its own generator seeded by (--seed, crc32 of its un-prefixed name), so the same seed gives the
same float values whatever the naming, sharding, layout or layer cut (dtype rounding aside).
bf16 is round-to-nearest-even of the f32 value, stored as little-endian uint16.

Output is standard safetensors (8-byte LE header length, JSON header padded with spaces to a
multiple of 8, raw little-endian data; no alignment of tensor data is promised). Tensors are
streamed one at a time, so memory stays at one tensor; e4b (~340 MB) takes a few seconds.
Needs only numpy. Not a converter: there are no real weights here.
"""
import argparse
import json
import os
import struct
import sys
import zlib

import numpy as np

# docs/NUMERICS.md §2.2; tiny is ours (fast tests, GQA, both options on).
CONFIGS = {
    "e2b": dict(D=768, I=3072, layers=16, H=12, Hkv=12, d=64, P=10240, T=1536, clipped=True,
                standardize=False, rope_theta=100.0),
    "e4b": dict(D=768, I=3072, layers=16, H=12, Hkv=12, d=64, P=10240, T=2560, clipped=True,
                standardize=False, rope_theta=100.0),
    "26b-a4b": dict(D=1152, I=4304, layers=27, H=16, Hkv=16, d=72, P=10240, T=2816,
                    clipped=False, standardize=True, rope_theta=100.0),
    "31b": dict(D=1152, I=4304, layers=27, H=16, Hkv=16, d=72, P=10240, T=5376, clipped=False,
                standardize=True, rope_theta=100.0),
    "tiny": dict(D=64, I=128, layers=2, H=4, Hkv=2, d=16, P=256, T=96, clipped=True,
                 standardize=True, rope_theta=100.0),
    # Every GEMM's K off a multiple of 16 (D = H*d = 60, I = 120; the patch embedding's 768 is
    # fixed) so the SIMD GEMM's K tail runs in the encoder tests, not only in test_gemm.
    "tiny-oddk": dict(D=60, I=120, layers=2, H=3, Hkv=1, d=20, P=256, T=100, clipped=True,
                      standardize=True, rope_theta=100.0),
}
# The 12B "unified" model has no tower: an encoder-free patch embedder (docs/NUMERICS.md §9).
# E = mm_embed_dim, P = mm_posemb_size, T = text hidden size; unified-tiny is ours (fast tests).
UNIFIED_CONFIGS = {
    "12b": dict(E=3840, P=1120, T=3840),
    "unified-tiny": dict(E=64, P=64, T=96),
}
# Where the unified tensors live: "hub" as the released files store them, "transformers" as
# transformers names its modules (what a re-saved checkpoint carries; docs/NUMERICS.md §9.3).
UNIFIED_SPELLINGS = {
    "hub": ("vision_embedder.", "embed_vision.embedding_projection.weight"),
    "transformers": ("embed_vision.", "embed_vision.multimodal_embedder.embedding_projection.weight"),
}
PATCH = 16
POOL = 3
EPS = 1e-6
TOKEN_IDS = dict(image_token_id=258880, boi_token_id=255999, eoi_token_id=258882,
                 video_token_id=258884, audio_token_id=258881, boa_token_id=256000,
                 eoa_token_id=258883)
DTYPES = {"bf16": "BF16", "f16": "F16", "f32": "F32"}
LINEARS = [("self_attn", "q_proj"), ("self_attn", "k_proj"), ("self_attn", "v_proj"),
           ("self_attn", "o_proj"), ("mlp", "gate_proj"), ("mlp", "up_proj"),
           ("mlp", "down_proj")]
CLIP_KEYS = ("input_min", "input_max", "output_min", "output_max")

# Clip bounds (magnitudes, drawn uniformly in [lo, hi] per bound), chosen from the activation
# magnitudes these weight scales give (--measure-clipping L prints them): post-norm inputs of
# q/k/v and gate/up and their outputs have RMS ~1; the o_proj input is an attention average of
# unit-RMS v rows (RMS ~0.45) and its output RMS ~0.45; the down_proj input gelu(g)*u is
# heavy-tailed (RMS ~0.65), its output RMS ~0.55. Measured (tiny L=100, e4b L=400): each bound
# pair clips ~0.3-4% of the values it sees -- exercised, never dominant.
CLIP_RANGES = {
    "q_proj": ((2.0, 3.0), (2.0, 3.0)), "k_proj": ((2.0, 3.0), (2.0, 3.0)),
    "o_proj": ((0.9, 1.4), (1.0, 1.6)), "gate_proj": ((2.0, 3.0), (2.0, 3.0)),
    "down_proj": ((1.5, 2.5), (1.0, 1.6)),
}
CLIP_SHARED = {"v_proj": "k_proj", "up_proj": "gate_proj"}  # same values, docs/NUMERICS.md §3.2


def rng_for(seed, name):
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def normal(seed, name, shape):
    return rng_for(seed, name).standard_normal(shape, dtype=np.float32)


def to_bf16(x):
    """f32 -> bf16 bits, round to nearest even (NaN kept quiet)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    r = ((u + np.uint32(0x7FFF) + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    if nan.any():
        r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def encode(x, dtype):
    if dtype == "BF16":
        return to_bf16(x).astype("<u2").tobytes()
    if dtype == "F16":
        return np.asarray(x, dtype="<f2").tobytes()
    return np.asarray(x, dtype="<f4").tobytes()


class Spec:
    """One tensor to write: canonical (un-prefixed) name, dtype, shape and a value maker."""

    def __init__(self, name, dtype, shape, make, vision=True):
        self.name, self.dtype, self.shape, self.make, self.vision = name, dtype, list(shape), make, vision

    @property
    def nbytes(self):
        size = {"BF16": 2, "F16": 2, "F32": 4, "U32": 4}[self.dtype]
        return int(np.prod(self.shape, dtype=np.int64)) * size

    def data(self):
        x = self.make()
        if self.dtype == "U32":
            return np.asarray(x, dtype="<u4").tobytes()
        return encode(x, self.dtype)


def clip_value(seed, layer, proj, key):
    """One 0-d clip bound for layer/proj (shared ones come from their partner's name)."""
    src = CLIP_SHARED.get(proj, proj)
    (ilo, ihi), (olo, ohi) = CLIP_RANGES[src]
    lo, hi = (ilo, ihi) if key.startswith("input") else (olo, ohi)
    name = f"vision_tower.encoder.layers.{layer}.{src}.{key}"
    mag = lo + (hi - lo) * rng_for(seed, name).random()
    return np.float32(-mag if key.endswith("min") else mag)


def vision_specs(c, dtype, seed, qk_scale):
    D, I, H, Hkv, d, P, T = c["D"], c["I"], c["H"], c["Hkv"], c["d"], c["P"], c["T"]
    specs = []

    def add(name, shape, make):
        specs.append(Spec(name, dtype, shape, make))

    def linear(name, shape):
        add(name, shape, lambda: normal(seed, name, shape) * np.float32(shape[1] ** -0.5))

    def norm(name, n, scale=1.0):
        add(name, [n], lambda: np.float32(scale) * (1 + np.float32(0.1) * normal(seed, name, [n])))

    pe = "vision_tower.patch_embedder."
    add(pe + "input_proj.weight", [D, 3 * PATCH * PATCH],
        lambda: normal(seed, pe + "input_proj.weight", [D, 3 * PATCH * PATCH]) * np.float32(768 ** -0.5))
    add(pe + "position_embedding_table", [2, P, D],
        lambda: normal(seed, pe + "position_embedding_table", [2, P, D]) * np.float32(0.5))
    shapes = {"q_proj": [H * d, D], "k_proj": [Hkv * d, D], "v_proj": [Hkv * d, D],
              "o_proj": [D, H * d], "gate_proj": [I, D], "up_proj": [I, D], "down_proj": [D, I]}
    for i in range(c["layers"]):
        p = f"vision_tower.encoder.layers.{i}."
        norm(p + "input_layernorm.weight", D)
        for block, proj in LINEARS:
            linear(f"{p}{block}.{proj}.linear.weight", shapes[proj])
            if c["clipped"]:
                for key in CLIP_KEYS:
                    add(f"{p}{block}.{proj}.{key}", [],
                        lambda i=i, proj=proj, key=key: clip_value(seed, i, proj, key))
        qk = d ** -0.25 * qk_scale
        norm(p + "self_attn.q_norm.weight", d, qk)
        norm(p + "self_attn.k_norm.weight", d, qk)
        norm(p + "post_attention_layernorm.weight", D)
        norm(p + "pre_feedforward_layernorm.weight", D)
        norm(p + "post_feedforward_layernorm.weight", D)
    if c["standardize"]:
        add("vision_tower.std_bias", [D],
            lambda: np.float32(0.1) * normal(seed, "vision_tower.std_bias", [D]))
        norm("vision_tower.std_scale", D)
    linear("embed_vision.embedding_projection.weight", [T, D])
    return specs


def unified_specs(c, dtype, seed, spelling):
    """The 12B embedder's tensors, named as `spelling` stores them. Values are drawn from the
    canonical (hub) name, so both spellings hold the same numbers."""
    E, P, T = c["E"], c["P"], c["T"]
    Q = 3 * (PATCH * POOL) ** 2
    pre, proj = UNIFIED_SPELLINGS[spelling]
    canon_pre, canon_proj = UNIFIED_SPELLINGS["hub"]
    specs = []

    def add(leaf, shape, make, name=None):
        specs.append(Spec(name or pre + leaf, dtype, shape, make))

    def vec(leaf, n, mean, std):
        key = canon_pre + leaf
        add(leaf, [n], lambda: np.float32(mean) + np.float32(std) * normal(seed, key, [n]))

    for ln, n in (("patch_ln1", Q), ("patch_ln2", E), ("pos_norm", E)):
        vec(ln + ".weight", n, 1.0, 0.1)
        vec(ln + ".bias", n, 0.0, 0.1)
    add("patch_dense.weight", [E, Q],
        lambda: normal(seed, canon_pre + "patch_dense.weight", [E, Q]) * np.float32(Q ** -0.5))
    vec("patch_dense.bias", E, 0.0, 0.1)
    add("pos_embedding", [P, 2, E],
        lambda: normal(seed, canon_pre + "pos_embedding", [P, 2, E]) * np.float32(0.5))
    add(None, [T, E], lambda: normal(seed, canon_proj, [T, E]) * np.float32(E ** -0.5), name=proj)
    return specs


def unified_decoys(c, dtype, seed, naming):
    """What a 12B file holds besides the embedder: text weights and the audio projection."""
    T = c["T"]
    lm = "language_model." if naming == "hf" else "language_model.model."
    return [
        Spec(lm + "embed_tokens.weight", dtype, [256, T],
             lambda: normal(seed, "decoy.embed", [256, T]) * np.float32(0.02), vision=False),
        Spec(lm + "layers.0.mlp.down_proj.weight", "U32", [T, 8],
             lambda: rng_for(seed, "decoy.u32").integers(0, 2 ** 32, [T, 8], dtype=np.uint32),
             vision=False),
        Spec("embed_audio.embedding_projection.weight", dtype, [T, 640],
             lambda: normal(seed, "decoy.audio", [T, 640]), vision=False),
    ]


def unified_config_json(c, args):
    vc = {
        "model_type": "gemma4_unified_vision", "mm_embed_dim": c["E"], "mm_posemb_size": c["P"],
        "model_patch_size": PATCH * POOL, "num_soft_tokens": 280, "output_proj_dims": c["E"],
        "patch_size": PATCH, "pooling_kernel_size": POOL, "rms_norm_eps": EPS,
    }
    cfg = {
        "architectures": ["Gemma4UnifiedForConditionalGeneration"],
        "model_type": "gemma4_unified",
        "text_config": {"model_type": "gemma4_unified_text", "hidden_size": c["T"],
                        "vocab_size": 262144, "num_hidden_layers": 1},
        "vision_config": vc,
        "audio_config": {"model_type": "gemma4_unified_audio", "output_proj_dims": 640},
        "vision_soft_tokens_per_image": 280,
        "torch_dtype": {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}[DTYPES[args.dtype]],
        "g4v_synthetic": {"generator": "tools/gen_checkpoint.py", "config": args.config,
                          "seed": args.seed, "naming": args.naming, "spelling": args.spelling,
                          "note": "random weights for tests; not a real Gemma 4 checkpoint"},
    }
    cfg.update(TOKEN_IDS)
    return cfg


def decoy_specs(c, dtype, seed, naming):
    """Tensors a vision loader must ignore (text, audio, buffers, quantized-looking U32)."""
    T, D, d = c["T"], c["D"], c["d"]
    lm = "language_model." if naming == "hf" else "language_model.model."
    out = [
        Spec(lm + "embed_tokens.weight", dtype, [256, T],
             lambda: normal(seed, "decoy.embed", [256, T]) * np.float32(0.02), vision=False),
        Spec(lm + "layers.0.mlp.down_proj.weight", "U32", [T, 8],
             lambda: rng_for(seed, "decoy.u32").integers(0, 2 ** 32, [T, 8], dtype=np.uint32),
             vision=False),
        Spec("audio_tower.subsample_conv_projection.layer0.conv.weight", dtype, [32, 1, 3, 3],
             lambda: normal(seed, "decoy.audio", [32, 1, 3, 3]), vision=False),
        Spec("vision_tower.rotary_emb.inv_freq", "F32", [d // 4],
             lambda: 1.0 / (100.0 ** (np.arange(d // 4, dtype=np.float32) / (d // 4)))),
        Spec("vision_tower.pooler.scale", dtype, [D],
             lambda: np.ones(D, dtype=np.float32)),
    ]
    return out


def write_safetensors(path, items):
    """items: list of (stored name, Spec). Streams the data, one tensor at a time."""
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, s in items:
        header[name] = {"dtype": s.dtype, "shape": s.shape, "data_offsets": [off, off + s.nbytes]}
        off += s.nbytes
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for _, s in items:
            b = s.data()
            assert len(b) == s.nbytes, s.name
            f.write(b)
    return off


def config_json(c, args):
    vc = {
        "model_type": "gemma4_vision",
        "hidden_size": c["D"], "intermediate_size": c["I"], "num_hidden_layers": c["layers"],
        "num_attention_heads": c["H"], "num_key_value_heads": c["Hkv"], "head_dim": c["d"],
        "global_head_dim": c["d"], "hidden_activation": "gelu_pytorch_tanh",
        "rms_norm_eps": EPS,
        "rope_parameters": {"rope_type": "default", "rope_theta": c["rope_theta"]},
        "patch_size": PATCH, "pooling_kernel_size": POOL,
        "position_embedding_size": c["P"], "default_output_length": 280,
        "use_clipped_linears": c["clipped"], "standardize": c["standardize"],
        "max_position_embeddings": 131072, "attention_bias": False, "attention_dropout": 0.0,
        "initializer_range": 0.02,
    }
    cfg = {
        "architectures": ["Gemma4ForConditionalGeneration"],
        "model_type": "gemma4",
        "text_config": {"model_type": "gemma4_text", "hidden_size": c["T"],
                        "vocab_size": 262144, "num_hidden_layers": 1},
        "vision_config": vc,
        "vision_soft_tokens_per_image": 280,
        "torch_dtype": {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}[DTYPES[args.dtype]],
        "g4v_synthetic": {"generator": "tools/gen_checkpoint.py", "config": args.config,
                          "seed": args.seed, "naming": args.naming, "note":
                          "random weights for tests; not a real Gemma 4 checkpoint"},
    }
    cfg.update(TOKEN_IDS)
    return cfg


def split_by_bytes(items, k):
    """k non-empty consecutive groups of roughly equal bytes."""
    groups, total, acc, g = [[] for _ in range(k)], sum(s.nbytes for s in items), 0, 0
    for idx, s in enumerate(items):
        if groups[g] and g < k - 1 and (acc >= total * (g + 1) / k or len(items) - idx == k - 1 - g):
            g += 1
        groups[g].append(s)
        acc += s.nbytes
    return groups


def shard_split(specs, decoys, n):
    """n groups: with n >= 2 the text/audio decoys sit alone in shard 1 (a shard a vision loader
    never needs to open) and the vision tensors are split by bytes over the others."""
    text = [s for s in decoys if not s.vision]
    vis = specs + [s for s in decoys if s.vision]
    if n == 1:
        return [text + vis]
    if n - 1 > len(vis):
        raise SystemExit(f"--shards {n}: only {len(vis)} vision tensors to spread")
    return ([text] if text else []) + split_by_bytes(vis, n - 1 if text else n)


def decode_values(s):
    """The tensor's values as the file stores them (dtype-rounded), as float64."""
    b = s.data()
    if s.dtype == "BF16":
        x = (np.frombuffer(b, "<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        x = np.frombuffer(b, {"F16": "<f2", "F32": "<f4"}[s.dtype])
    return x.astype(np.float64).reshape(s.shape)


def measure_clipping(c, specs, L, seed):
    """Rough float64 forward (no RoPE: a rotation, it leaves magnitudes alone) on random pixels,
    printing per linear the input/output RMS and the fraction of values each bound clips. Used
    to choose CLIP_RANGES; not a reference implementation."""
    w = {s.name: decode_values(s) for s in specs}
    D, H, Hkv, d = c["D"], c["H"], c["Hkv"], c["d"]
    rng = np.random.default_rng(seed)
    side = int(np.sqrt(L))
    pos = np.stack(np.meshgrid(np.arange(side), np.arange(side)), -1).reshape(-1, 2)
    x = rng.random((len(pos), 3 * PATCH * PATCH)) * 2 - 1
    pt = w["vision_tower.patch_embedder.position_embedding_table"]
    h = x @ w["vision_tower.patch_embedder.input_proj.weight"].T + pt[0, pos[:, 0]] + pt[1, pos[:, 1]]

    def rms(v, wt=None):
        n = v / np.sqrt(np.mean(v * v, -1, keepdims=True) + EPS)
        return n if wt is None else n * wt

    stats = {}

    def lin(v, p, proj):
        wt = w[f"{p}{proj}.linear.weight"]
        st = stats.setdefault(proj.split(".")[-1], [[], [], [], []])
        if c["clipped"]:
            lo, hi = w[f"{p}{proj}.input_min"], w[f"{p}{proj}.input_max"]
            st[0].append(np.mean(v * v) ** 0.5)
            st[1].append(np.mean((v < lo) | (v > hi)))
            v = np.clip(v, lo, hi)
        y = v @ wt.T
        if c["clipped"]:
            lo, hi = w[f"{p}{proj}.output_min"], w[f"{p}{proj}.output_max"]
            st[2].append(np.mean(y * y) ** 0.5)
            st[3].append(np.mean((y < lo) | (y > hi)))
            y = np.clip(y, lo, hi)
        return y

    for i in range(c["layers"]):
        p = f"vision_tower.encoder.layers.{i}."
        a = rms(h, w[p + "input_layernorm.weight"])
        q = lin(a, p, "self_attn.q_proj").reshape(-1, H, d)
        k = lin(a, p, "self_attn.k_proj").reshape(-1, Hkv, d)
        v = lin(a, p, "self_attn.v_proj").reshape(-1, Hkv, d)
        q, k, v = rms(q, w[p + "self_attn.q_norm.weight"]), rms(k, w[p + "self_attn.k_norm.weight"]), rms(v)
        k, v = np.repeat(k, H // Hkv, 1), np.repeat(v, H // Hkv, 1)
        s_ = np.einsum("qhd,khd->hqk", q, k)
        pr = np.exp(s_ - s_.max(-1, keepdims=True))
        pr /= pr.sum(-1, keepdims=True)
        o = np.einsum("hqk,khd->qhd", pr, v).reshape(len(h), H * d)
        h = h + rms(lin(o, p, "self_attn.o_proj"), w[p + "post_attention_layernorm.weight"])
        m = rms(h, w[p + "pre_feedforward_layernorm.weight"])
        g = lin(m, p, "mlp.gate_proj")
        g = 0.5 * g * (1 + np.tanh(np.sqrt(2 / np.pi) * (g + 0.044715 * g ** 3))) * lin(m, p, "mlp.up_proj")
        h = h + rms(lin(g, p, "mlp.down_proj"), w[p + "post_feedforward_layernorm.weight"])
    print(f"L={len(h)}  (mean over {c['layers']} layers)  in_rms  in_clipped  out_rms  out_clipped")
    for proj, st in stats.items():
        print(f"  {proj:10s} " + "  ".join(f"{np.mean(v):.4f}" for v in st))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", help="output directory (created; existing files are overwritten)")
    ap.add_argument("--config", choices=sorted(CONFIGS) + sorted(UNIFIED_CONFIGS), default="tiny")
    ap.add_argument("--spelling", choices=sorted(UNIFIED_SPELLINGS), default="hub",
                    help="unified configs: tensor names as the Hub files (vision_embedder.*) or "
                         "as transformers' modules (embed_vision.*) spell them")
    ap.add_argument("--layers", type=int, help="cut the number of encoder layers")
    ap.add_argument("--naming", choices=["hf", "mlx"], default="hf",
                    help="hf: 'model.' prefix; mlx: un-prefixed (mlx-community)")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    ap.add_argument("--shards", type=int, default=0,
                    help="write N shards + model.safetensors.index.json (N >= 1)")
    ap.add_argument("--sidecar", action="store_true",
                    help="vision tensors in optiq_vision.safetensors (un-prefixed), text decoys "
                         "in model.safetensors")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--clipped", type=int, choices=[0, 1])
    ap.add_argument("--standardize", type=int, choices=[0, 1])
    ap.add_argument("--kv-heads", type=int)
    ap.add_argument("--text-hidden", type=int, metavar="T",
                    help="the language model's hidden size T (floats per soft token), e.g. to "
                         "pair a small tower with a synthetic text model (tools/gen_lm_gguf.py)")
    ap.add_argument("--qk-scale", type=float, default=1.0,
                    help="multiplies q_norm/k_norm weights (sharper attention)")
    ap.add_argument("--no-decoys", action="store_true", help="write only the vision tensors")
    ap.add_argument("--measure-clipping", type=int, metavar="L",
                    help="write nothing; print activation RMS and clip rates for L patches")
    args = ap.parse_args(argv)

    unified = args.config in UNIFIED_CONFIGS
    c = dict(UNIFIED_CONFIGS[args.config] if unified else CONFIGS[args.config])
    if unified and (args.layers or args.clipped is not None or args.standardize is not None or
                    args.kv_heads or args.measure_clipping):
        ap.error("--layers, --clipped, --standardize, --kv-heads and --measure-clipping are for "
                 "tower configs")
    if args.layers is not None:
        if args.layers < 1:
            ap.error("--layers must be >= 1")
        c["layers"] = args.layers
    if args.clipped is not None:
        c["clipped"] = bool(args.clipped)
    if args.standardize is not None:
        c["standardize"] = bool(args.standardize)
    if args.kv_heads is not None:
        if args.kv_heads < 1 or c["H"] % args.kv_heads:
            ap.error(f"--kv-heads must divide num_attention_heads ({c['H']})")
        c["Hkv"] = args.kv_heads
    if args.text_hidden is not None:
        if args.text_hidden < 1:
            ap.error("--text-hidden must be >= 1")
        c["T"] = args.text_hidden
    if args.out is None and not args.measure_clipping:
        ap.error("the output directory is required")
    if args.sidecar and args.shards:
        ap.error("--sidecar and --shards are exclusive")
    if args.shards < 0 or args.shards > 99999:
        ap.error("--shards must be in [1, 99999]")

    dtype = DTYPES[args.dtype]
    if unified:
        specs = unified_specs(c, dtype, args.seed, args.spelling)
    else:
        specs = vision_specs(c, dtype, args.seed, args.qk_scale)
    if args.measure_clipping:
        measure_clipping(c, specs, args.measure_clipping, args.seed)
        return 0
    make_decoys = unified_decoys if unified else decoy_specs
    decoys = [] if args.no_decoys else make_decoys(c, dtype, args.seed, args.naming)
    os.makedirs(args.out, exist_ok=True)
    for stale in os.listdir(args.out):  # a previous layout must not linger and be picked up
        if stale.endswith(".safetensors") or stale == "model.safetensors.index.json":
            os.remove(os.path.join(args.out, stale))
    pre = "model." if args.naming == "hf" else ""

    def stored(s):
        return pre + s.name

    if args.sidecar:
        vis = specs + [s for s in decoys if s.vision]
        write_safetensors(os.path.join(args.out, "optiq_vision.safetensors"), [(s.name, s) for s in vis])
        text = [s for s in decoys if not s.vision]
        write_safetensors(os.path.join(args.out, "model.safetensors"), [(stored(s), s) for s in text])
    elif args.shards:
        groups = shard_split(specs, decoys, args.shards)
        n, weight_map, total = len(groups), {}, 0
        for k, g in enumerate(groups):
            fname = f"model-{k + 1:05d}-of-{n:05d}.safetensors"
            total += write_safetensors(os.path.join(args.out, fname), [(stored(s), s) for s in g])
            for s in g:
                weight_map[stored(s)] = fname
        with open(os.path.join(args.out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    else:
        write_safetensors(os.path.join(args.out, "model.safetensors"),
                          [(stored(s), s) for s in decoys if not s.vision] +
                          [(stored(s), s) for s in specs + [d for d in decoys if d.vision]])
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump((unified_config_json if unified else config_json)(c, args), f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
