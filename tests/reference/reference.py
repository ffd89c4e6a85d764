#!/usr/bin/python3
"""reference.py - an independent float64 oracle for the Gemma 4 vision encoder (image -> soft tokens).

Written from docs/NUMERICS.md (§2-§4) and docs/PREPROCESSING.md §7, not from the C code. It reads a
checkpoint directory with its own small safetensors reader (single file, sharded index, optiq_vision
sidecar; names with or without "model."; BF16/F16/F32), takes an image that is ALREADY at its target
size (both sides multiples of 48: a PNG/any Pillow format, or a raw uint8 [H, W, 3] .npy), and
computes the soft tokens [N, T] with every operation in float64. The only f32 steps are the two of
docs/NUMERICS.md §8.1: the pixel values (float32)(u/255) and the RoPE angles pos * f32(inv_freq) (HF
computes both in f32). No bf16 rounding anywhere: this is the ideal the C code's f32 / bf16-GEMM
modes are measured against.

The 12B "unified" checkpoints (vision_config model_type gemma4_unified_vision) take the
encoder-free path of docs/NUMERICS.md §9 instead (encode_unified): LayerNorm -> dense -> LayerNorm
-> + factorized positions -> LayerNorm -> weightless RMSNorm -> projection, per 48x48 patch.

Limits: batch 1, unpadded (docs/NUMERICS.md §4.1), no resize (give it a target-size image).
Attention is one full [L, L] float64 matrix per head: fine up to L ~ 2500 (50 MB), slow beyond.

Usage: reference.py CHECKPOINT_DIR IMAGE -o OUT.npy [--f32] [--dump DIR]
  --dump DIR writes per-stage intermediates (embed.npy, layer_NN.npy, pooled.npy, normed.npy).
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402  (the safetensors header reader)


# ---------------------------------------------------------------------------------------------
# Checkpoint reading (docs/NUMERICS.md §2.1, §2.3, §2.4)

class Checkpoint:
    """Vision tensors of a checkpoint directory, looked up by their un-prefixed name."""

    DTYPES = {"BF16": ("<u2", 2), "F16": ("<f2", 2), "F32": ("<f4", 4)}

    def __init__(self, path):
        self.path = path
        with open(os.path.join(path, "config.json")) as f:
            self.config = json.load(f)
        self.entries = {}  # stored name -> (file, dtype, shape, begin, end)
        files = []
        sidecar = os.path.join(path, "optiq_vision.safetensors")
        index = os.path.join(path, "model.safetensors.index.json")
        if os.path.exists(sidecar):
            files.append(sidecar)
        if os.path.exists(index):
            with open(index) as f:
                files += sorted({os.path.join(path, v) for v in json.load(f)["weight_map"].values()})
        elif os.path.exists(os.path.join(path, "model.safetensors")):
            files.append(os.path.join(path, "model.safetensors"))
        if not files:
            raise SystemExit(f"{path}: no safetensors files")
        for fn in files:
            self._read_header(fn)

    def _read_header(self, fn):
        header, base = pyutil.st_header(fn)
        for name, e in header.items():
            if name == "__metadata__":
                continue
            b, en = e["data_offsets"]
            # the first file listed wins (the sidecar before the main weights)
            self.entries.setdefault(name, (fn, e["dtype"], tuple(e["shape"]), base + b, base + en))

    # docs/NUMERICS.md §9.3: transformers' module names for the unified embedder's tensors, which
    # re-saved files carry instead of the Hub's (tried after the Hub name)
    ALIASES = (("vision_embedder.", "embed_vision."),
               ("embed_vision.embedding_projection.", "embed_vision.multimodal_embedder.embedding_projection."))

    def _key(self, name):
        names = [name] + [alt + name[len(hub):] for hub, alt in self.ALIASES if name.startswith(hub)]
        for n in names:
            for key in (n, "model." + n):
                if key in self.entries:
                    return key
        return None

    def has(self, name):
        return self._key(name) is not None

    def get(self, name):
        """The tensor as float64, exact for every supported dtype."""
        key = self._key(name)
        if key is None:
            raise KeyError(f"{self.path}: tensor {name} not found")
        fn, dt, shape, b, e = self.entries[key]
        if dt not in self.DTYPES:
            raise ValueError(f"{name}: unsupported dtype {dt}")
        np_dt, size = self.DTYPES[dt]
        count = int(np.prod(shape, dtype=np.int64))
        assert e - b == count * size, name
        raw = np.fromfile(fn, dtype=np_dt, count=count, offset=b)
        if dt == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        return raw.astype(np.float64).reshape(shape)


def vision_config(cfg):
    """docs/NUMERICS.md §2.1: the keys that matter, with the class defaults."""
    v = cfg.get("vision_config", {})
    rope = v.get("rope_parameters") or {}
    theta = rope.get("rope_theta", v.get("rope_theta", 100.0))
    return dict(
        D=v.get("hidden_size", 768), I=v.get("intermediate_size", 3072),
        layers=v.get("num_hidden_layers", 16), H=v.get("num_attention_heads", 12),
        Hkv=v.get("num_key_value_heads", v.get("num_attention_heads", 12)),
        d=v.get("head_dim", 64), eps=v.get("rms_norm_eps", 1e-6), theta=float(theta),
        p=v.get("patch_size", 16), k=v.get("pooling_kernel_size", 3),
        clipped=bool(v.get("use_clipped_linears", False)),
        standardize=bool(v.get("standardize", False)),
        T=cfg.get("text_config", {}).get("hidden_size"),
    )


# ---------------------------------------------------------------------------------------------
# The forward pass (docs/NUMERICS.md §4), float64

def rms_norm(x, w=None, eps=1e-6):
    """docs/NUMERICS.md §3.1: x * (mean(x^2) + eps)^-0.5, times w (not 1 + w) when given."""
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y if w is None else y * w


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


class Linears:
    """ClippableLinear (docs/NUMERICS.md §3.2): clamp input, x W^T, clamp output (if clipped)."""

    def __init__(self, ck, clipped):
        self.ck, self.clipped = ck, clipped

    def __call__(self, x, prefix):
        w = self.ck.get(prefix + ".linear.weight")
        if self.clipped:
            x = np.clip(x, self.ck.get(prefix + ".input_min"), self.ck.get(prefix + ".input_max"))
        y = x @ w.T
        if self.clipped:
            y = np.clip(y, self.ck.get(prefix + ".output_min"), self.ck.get(prefix + ".output_max"))
        return y


def rope_tables(pos, d, theta):
    """docs/NUMERICS.md §4.5 for one axis: cos/sin [L, d/2] of f32 angles pos * f32(1/theta^(2j/c)),
    c = d/2, with the angle set repeated twice (emb = concat(ang, ang))."""
    c = d // 2
    inv_freq = (1.0 / theta ** (np.arange(0, c, 2, dtype=np.float64) / c)).astype(np.float32)
    ang = pos.astype(np.float32)[:, None] * inv_freq[None, :]  # f32 product, as HF
    ang = np.concatenate([ang, ang], axis=-1).astype(np.float64)
    return np.cos(ang), np.sin(ang)


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def apply_rope2d(x, cos_x, sin_x, cos_y, sin_y):
    """x [L, heads, d]: first half rotated by the column tables, second half by the row tables,
    rotate_half inside each half."""
    c = x.shape[-1] // 2
    p0, p1 = x[..., :c], x[..., c:]
    p0 = p0 * cos_x[:, None, :] + rotate_half(p0) * sin_x[:, None, :]
    p1 = p1 * cos_y[:, None, :] + rotate_half(p1) * sin_y[:, None, :]
    return np.concatenate([p0, p1], axis=-1)


def attention(q, k, v):
    """q [L, H, d], k/v [L, Hkv, d]; scale 1.0, no mask; query head h uses kv head h // (H/Hkv)."""
    L, H, d = q.shape
    n_rep = H // k.shape[1]
    out = np.empty_like(q)
    for h in range(H):
        s = q[:, h, :] @ k[:, h // n_rep, :].T
        s -= s.max(axis=-1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=-1, keepdims=True)
        out[:, h, :] = p @ v[:, h // n_rep, :]
    return out


def encode(ck, img, dump=None):
    """img: uint8 [H, W, 3] at target size. Returns float64 soft tokens [N, T]."""
    c = vision_config(ck.config)
    D, H, Hkv, d, p, k, eps = c["D"], c["H"], c["Hkv"], c["d"], c["p"], c["k"], c["eps"]
    Hi, Wi, _ = img.shape
    if Hi % (p * k) or Wi % (p * k):
        raise SystemExit(f"image {Wi}x{Hi} is not at a target size (multiples of {p * k})")
    gh, gw = Hi // p, Wi // p
    L = gh * gw

    def save(name, x):
        if dump:
            np.save(os.path.join(dump, name + ".npy"), x)

    # docs/PREPROCESSING.md §7, docs/NUMERICS.md §4.2: (float32)(u/255), then 2(x - 0.5) in
    # float64; patch order (dy, dx, c)
    x = (img.astype(np.float64) / 255.0).astype(np.float32).astype(np.float64)
    x = 2.0 * (x - 0.5)
    patches = x.reshape(gh, p, gw, p, 3).transpose(0, 2, 1, 3, 4).reshape(L, p * p * 3)
    px = np.tile(np.arange(gw), gh)      # column
    py = np.repeat(np.arange(gh), gw)    # row
    pe = "vision_tower.patch_embedder."
    table = ck.get(pe + "position_embedding_table")
    h = patches @ ck.get(pe + "input_proj.weight").T + (table[0, px] + table[1, py])
    save("embed", h)

    lin = Linears(ck, c["clipped"])
    cos_x, sin_x = rope_tables(px, d, c["theta"])
    cos_y, sin_y = rope_tables(py, d, c["theta"])
    for i in range(c["layers"]):
        pre = f"vision_tower.encoder.layers.{i}."
        g = lambda n: ck.get(pre + n)  # noqa: E731
        # docs/NUMERICS.md §4.3-§4.5: attention with sandwich norms
        a = rms_norm(h, g("input_layernorm.weight"), eps)
        q = lin(a, pre + "self_attn.q_proj").reshape(L, H, d)
        kk = lin(a, pre + "self_attn.k_proj").reshape(L, Hkv, d)
        v = lin(a, pre + "self_attn.v_proj").reshape(L, Hkv, d)
        q = rms_norm(q, g("self_attn.q_norm.weight"), eps)
        kk = rms_norm(kk, g("self_attn.k_norm.weight"), eps)
        v = rms_norm(v, None, eps)
        q = apply_rope2d(q, cos_x, sin_x, cos_y, sin_y)
        kk = apply_rope2d(kk, cos_x, sin_x, cos_y, sin_y)
        o = attention(q, kk, v).reshape(L, H * d)
        o = lin(o, pre + "self_attn.o_proj")
        h = h + rms_norm(o, g("post_attention_layernorm.weight"), eps)
        # docs/NUMERICS.md §4.6: GeGLU MLP with sandwich norms
        m = rms_norm(h, g("pre_feedforward_layernorm.weight"), eps)
        m = gelu_tanh(lin(m, pre + "mlp.gate_proj")) * lin(m, pre + "mlp.up_proj")
        m = lin(m, pre + "mlp.down_proj")
        h = h + rms_norm(m, g("post_feedforward_layernorm.weight"), eps)
        save(f"layer_{i:02d}", h)

    # docs/NUMERICS.md §4.7: pool k x k (row-major pooled grid), x sqrt(D)
    pooled = h.reshape(gh // k, k, gw // k, k, D).mean(axis=(1, 3)).reshape(-1, D)
    pooled = pooled * np.sqrt(D)
    # docs/NUMERICS.md §4.8: standardize
    if c["standardize"]:
        pooled = (pooled - ck.get("vision_tower.std_bias")) * ck.get("vision_tower.std_scale")
    save("pooled", pooled)
    # docs/NUMERICS.md §4.9: weightless RMSNorm, projection to T
    n = rms_norm(pooled, None, eps)
    save("normed", n)
    return n @ ck.get("embed_vision.embedding_projection.weight").T


# ---------------------------------------------------------------------------------------------
# The 12B unified (encoder-free) embedder (docs/NUMERICS.md §9), float64

def is_unified(cfg):
    v = cfg.get("vision_config", {})
    if "model_type" in v:
        return v["model_type"] == "gemma4_unified_vision"
    return cfg.get("model_type") == "gemma4_unified"


def layer_norm(x, w, b, eps):
    """torch.nn.LayerNorm: (x - mean) / sqrt(biased var + eps) * w + b over the last axis."""
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


LAYER_NORM_EPS = 1e-5  # torch's default; HF passes none to the three LayerNorms (§9.2)


def encode_unified(ck, img, dump=None):
    """img: uint8 [H, W, 3] at target size. Returns float64 soft tokens [N, T], one per patch."""
    v = ck.config.get("vision_config", {})
    s = v.get("patch_size", 16) * v.get("pooling_kernel_size", 3)  # 48
    eps = v.get("rms_norm_eps", 1e-6)
    Hi, Wi, _ = img.shape
    if Hi % s or Wi % s:
        raise SystemExit(f"image {Wi}x{Hi} is not at a target size (multiples of {s})")
    gh, gw = Hi // s, Wi // s
    N = gh * gw
    # §9.4 step 1: u/255 as f32 (as for the tower), patches row-major over the grid, each in
    # (dy, dx, c) order
    x = (img.astype(np.float64) / 255.0).astype(np.float32).astype(np.float64)
    patches = x.reshape(gh, s, gw, s, 3).transpose(0, 2, 1, 3, 4).reshape(N, s * s * 3)
    g = lambda n: ck.get("vision_embedder." + n)  # noqa: E731
    h = layer_norm(patches, g("patch_ln1.weight"), g("patch_ln1.bias"), LAYER_NORM_EPS)
    h = h @ g("patch_dense.weight").T + g("patch_dense.bias")
    h = layer_norm(h, g("patch_ln2.weight"), g("patch_ln2.bias"), LAYER_NORM_EPS)
    col = np.tile(np.arange(gw), gh)    # x
    row = np.repeat(np.arange(gh), gw)  # y
    pos = g("pos_embedding")            # [P, 2, E]
    h = h + pos[col, 0] + pos[row, 1]
    h = layer_norm(h, g("pos_norm.weight"), g("pos_norm.bias"), LAYER_NORM_EPS)
    if dump:
        np.save(os.path.join(dump, "embed.npy"), h)
    n = rms_norm(h, None, eps)
    return n @ ck.get("embed_vision.embedding_projection.weight").T


def load_image(path):
    if path.endswith(".npy"):
        img = np.load(path)
        if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
            raise SystemExit(f"{path}: expected uint8 [H, W, 3], got {img.dtype} {img.shape}")
        return img
    from PIL import Image
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"), dtype=np.uint8)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("image")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--f32", action="store_true", help="write float32 instead of float64")
    ap.add_argument("--dump", help="directory for per-stage intermediates")
    a = ap.parse_args(argv)
    if a.dump:
        os.makedirs(a.dump, exist_ok=True)
    ck = Checkpoint(a.checkpoint)
    out = (encode_unified if is_unified(ck.config) else encode)(ck, load_image(a.image), a.dump)
    np.save(a.out, out.astype(np.float32) if a.f32 else out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
