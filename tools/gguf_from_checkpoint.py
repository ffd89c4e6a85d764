#!/usr/bin/python3
"""gguf_from_checkpoint.py - converts a Gemma 4 checkpoint directory (safetensors + config.json,
e.g. tools/gen_checkpoint.py output) to a llama.cpp mmproj GGUF, the way llama.cpp's converter
(convert_hf_to_gguf.py --mmproj: conversion/gemma.py Gemma4VisionAudioModel and
Gemma4UnifiedVisionAudioModel over conversion/base.py MmprojModel) writes the vision part:

  keys     general.architecture "clip", general.type "mmproj", general.name (the directory's
           name), general.file_type, clip.has_vision_encoder, clip.vision.{projection_dim,
           image_size (224), patch_size, embedding_length, feed_forward_length, block_count,
           attention.head_count, image_mean, image_std, projector_type,
           attention.layer_norm_epsilon}, general.quantization_version 2; in that order.
  tensors  v.patch_embd.weight (the tower's [D, p*p*3] reshaped to [D, p, p, 3] and permuted to
           the conv layout [D, 3, p, p]), v.position_embd.weight, v.blk.N.{ln1, attn_q, attn_k,
           attn_v, attn_out, attn_q_norm, attn_k_norm, attn_post_norm, ln2, ffn_gate, ffn_up,
           ffn_down, ffn_post_norm}.weight, v.blk.N.<linear>.{input,output}_{min,max} (0-d -> [1]),
           v.std_bias, v.std_scale, mm.input_projection.weight; for the 12B (gemma4uv)
           v.patch_norm.{1,2,3}.{weight,bias} (patch_ln1 permuted to channel-first order),
           v.patch_embd.weight (patch_dense, columns permuted the same way), v.patch_embd.bias,
           v.position_embd.weight (pos_embedding [P, 2, E] permuted to [2, P, E]).
  dtypes   bf16 sources are widened to f32 first. 1-D tensors, *_norm.weight and the position
           tables are F32; the patch embedding is F16 in an f16 file and F32 otherwise; every
           other matrix is the --outtype (f32, f16, bf16 or q8_0); a matrix whose rows are not a
           multiple of 32 falls back to F16 in a q8_0 file. Q8_0 is gguf-py's quants.py (bit-exact
           with ggml: d = max|x| / 127 in f32, q = roundf(x / d) half away from zero, d stored
           f16). Data aligned to 32 bytes.

Not written: the audio part (use --audio-decoy for a stand-in the reader must skip), and the
general.* keys the converter derives from a model card (basename, size_label, license...). The
stock converter cannot run here (it needs torch >= 2.1); this writer needs only numpy. With
--gguf-py DIR (llama.cpp's gguf-py) it writes the same file through gguf-py's GGUFWriter,
TensorNameMap and quants instead, which is how its output was checked byte for byte.

usage: gguf_from_checkpoint.py CHECKPOINT_DIR OUT.gguf [--outtype f32|f16|bf16|q8_0]
                               [--gguf-py DIR] [--audio-decoy] [--name NAME] [--use-gelu]
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGN = 32
# ggml types and llama_ftype values (gguf-py constants.py)
F32, F16, Q8_0, Q4_K, BF16 = 0, 1, 8, 12, 30
Q8_0_BLOCK = 32  # values per Q8_0 block (G4V_Q8_BLOCK in src/base/dtype.h)
FTYPE = {"f32": 0, "f16": 1, "q8_0": 7, "bf16": 32}
# GGUF value types
U32, F32V, BOOL, STRING, ARRAY = 4, 6, 7, 8, 9

LAYER_MAP = {
    "input_layernorm": "ln1", "post_attention_layernorm": "attn_post_norm",
    "pre_feedforward_layernorm": "ln2", "post_feedforward_layernorm": "ffn_post_norm",
    "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_out", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
TOP_MAP = {
    "model.vision_tower.patch_embedder.input_proj": "v.patch_embd",
    "model.vision_tower.patch_embedder.position_embedding_table": "v.position_embd",
    "model.vision_tower.std_bias": "v.std_bias", "model.vision_tower.std_scale": "v.std_scale",
    "model.embed_vision.embedding_projection": "mm.input_projection",
    "model.vision_embedder.patch_ln1": "v.patch_norm.1",
    "model.vision_embedder.patch_ln2": "v.patch_norm.2",
    "model.vision_embedder.patch_ln3": "v.patch_norm.3",
    "model.vision_embedder.patch_dense": "v.patch_embd",
    "model.vision_embedder.pos_embedding": "v.position_embd",
}
SUFFIXES = (".weight", ".bias", ".input_max", ".input_min", ".output_max", ".output_min")


# ---- reading the checkpoint --------------------------------------------------------------

def read_safetensors(path):
    """(name, float32-or-float16 array) for every F32/F16/BF16 tensor, in header order."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        for name, e in header.items():
            if name == "__metadata__" or e["dtype"] not in ("F32", "F16", "BF16"):
                continue
            b, en = e["data_offsets"]
            f.seek(base + b)
            raw = f.read(en - b)
            shape = tuple(e["shape"])
            if e["dtype"] == "BF16":  # the converter: .to(torch.float32), exact
                a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
            else:
                a = np.frombuffer(raw, "<f4" if e["dtype"] == "F32" else "<f2")
            yield name, a.reshape(shape).copy()


def checkpoint_tensors(ck):
    idx = os.path.join(ck, "model.safetensors.index.json")
    if os.path.exists(idx):
        with open(idx) as f:
            files = list(dict.fromkeys(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    for fn in files:
        yield from read_safetensors(os.path.join(ck, fn))


def hf_name(name):
    """The Hub spelling with "model." (mlx and transformers re-saves drop or rename it)."""
    if not name.startswith("model."):
        name = "model." + name
    for a, b in (("model.embed_vision.multimodal_embedder.", "model.embed_vision."),
                 ("model.embed_vision.patch_", "model.vision_embedder.patch_"),
                 ("model.embed_vision.pos_", "model.vision_embedder.pos_")):
        if name.startswith(a):
            name = b + name[len(a):]
    return name


def is_vision(name):
    if name.endswith((".rotary_emb.inv_freq", "pooler.scale")):
        return False  # the converter skips inv_freq; pooler.scale is not in HF's model
    return name.startswith(("model.vision_tower.", "model.embed_vision.", "model.vision_embedder."))


# ---- the converter's per-tensor steps (conversion/gemma.py) -------------------------------

def chw_perm(p):
    i = np.arange(p * p * 3)
    ch, row, col = i // (p * p), (i % (p * p)) // p, i % p
    return row * p * 3 + col * 3 + ch  # perm[i] = HWC index for CHW position i


def modify(name, a, vc, unified):
    """Gemma4(Unified)VisionAudioModel.modify_tensors: (hf name after renames, array)."""
    if unified:
        p = vc.get("model_patch_size") or vc["patch_size"] * vc["pooling_kernel_size"]
        if name.endswith("pos_embedding"):
            name += ".weight"
            a = np.ascontiguousarray(a.transpose(1, 0, 2))
        elif ".pos_norm." in name:
            name = name.replace(".pos_norm.", ".patch_ln3.")
        elif "patch_dense.weight" in name:
            a = np.ascontiguousarray(a[:, chw_perm(p)])
        elif "patch_ln1.weight" in name or "patch_ln1.bias" in name:
            a = np.ascontiguousarray(a[chw_perm(p)])
    if a.ndim == 0:
        a = a.reshape(1)
    name = name.replace("model.vision_tower.encoder.", "vision_model.model.")
    name = name.replace(".linear.weight", ".weight")
    if name.endswith("layer_scalar") or name.endswith("position_embedding_table"):
        name += ".weight"
    if name.endswith("patch_embedder.input_proj.weight"):
        n, k = a.shape
        p = int((k // 3) ** 0.5)
        a = np.ascontiguousarray(a.reshape(n, p, p, 3).transpose(0, 3, 1, 2))
    return name, a


def gguf_name(name):
    """TensorNameMap.get_name(name, try_suffixes=SUFFIXES) for the Gemma 4 vision names: the whole
    name first, then without each suffix (which is put back)."""
    if name in TOP_MAP:
        return TOP_MAP[name]
    for suf in SUFFIXES:
        if not name.endswith(suf):
            continue
        base = name[: -len(suf)]
        if base in TOP_MAP:
            return TOP_MAP[base] + suf
        pre = "vision_model.model.layers."
        if base.startswith(pre):
            bid, _, rest = base[len(pre):].partition(".")
            if rest in LAYER_MAP:
                return f"v.blk.{bid}.{LAYER_MAP[rest]}{suf}"
    raise ValueError(f"Can not map tensor {name!r}")


def np_roundf(n):  # quants.py
    a = abs(n)
    floored = np.floor(a)
    b = floored + np.floor(2 * (a - floored))
    return np.sign(n) * b


def q8_0(a):
    """quants.py Q8_0 (bit-exact with ggml's quantize_row_q8_0_ref)."""
    rows = a.astype(np.float32, copy=False).reshape(-1, a.shape[-1])
    out = []
    for group in np.array_split(rows, (rows.shape[0] // 16) or 1):
        blocks = group.reshape(-1, Q8_0_BLOCK)
        d = abs(blocks).max(axis=1, keepdims=True) / 127
        with np.errstate(divide="ignore"):
            inv = np.where(d == 0, 0, 1 / d)
        qs = np_roundf(blocks * inv)
        out.append(np.concatenate([d.astype(np.float16).view(np.uint8),
                                   qs.astype(np.int8).view(np.uint8)], axis=1).ravel())
    return np.concatenate(out)


def bf16(a):
    """quants.py BF16 (ggml_compute_fp32_to_bf16: NaN quieted, round to nearest even)."""
    n = a.astype(np.float32, copy=False).view(np.uint32)
    n = np.where((n & 0x7fffffff) > 0x7f800000, (n & np.uint32(0xffff0000)) | np.uint32(64 << 16), n)
    n = (np.uint64(n) + (0x7fff + ((n >> 16) & 1))) >> 16
    return n.astype(np.uint16)


def pick_type(orig, new, ndim, outtype):
    """prepare_tensors + tensor_force_quant: the ggml type a tensor gets."""
    if "position_embedding_table" in orig:
        q = F32  # Gemma4VisionAudioModel.tensor_force_quant
    elif ".patch_embd.weight" in new:
        q = F16 if outtype == "f16" else F32  # MmprojModel.tensor_force_quant
    else:
        q = None
    if ndim <= 1 or new.endswith("_norm.weight"):
        q = F32
    if q is None and (new.startswith("v.position_embd") or new[-7:] not in (".weight", ".lora_a", ".lora_b")):
        q = F32  # POS_EMBD / V_ENC_EMBD_POS are kept f32
    if q is None:
        q = {"f32": F32, "f16": F16, "bf16": BF16, "q8_0": Q8_0}[outtype]
    return q


def quantize(a, q):
    if q == F32:
        return a.astype(np.float32, copy=False)
    if q == F16:
        return a.astype(np.float16, copy=False)
    if q == BF16:
        return bf16(a)
    return q8_0(a)


def convert(ck, outtype, map_name=gguf_name, quant=quantize):
    """[(gguf name, ggml type, torch-order shape, bytes)], the vision config, T, unified.
    map_name and quant are ours, or gguf-py's TensorNameMap and quants (--gguf-py)."""
    with open(os.path.join(ck, "config.json")) as f:
        cfg = json.load(f)
    vc = dict(cfg["vision_config"])
    unified = vc.get("model_type") == "gemma4_unified_vision" or (
        "model_type" not in vc and cfg.get("model_type") == "gemma4_unified")
    T = cfg["text_config"]["hidden_size"]
    out = []
    for name, a in checkpoint_tensors(ck):
        name = hf_name(name)
        if not is_vision(name):
            continue
        orig = name
        name, a = modify(name, a, vc, unified)
        new = map_name(name)
        q = pick_type(orig, new, a.ndim, outtype)
        if q == Q8_0 and a.shape[-1] % Q8_0_BLOCK:
            q = F16  # QuantError: falling back to F16
        out.append((new, q, a.shape, np.ascontiguousarray(quant(a, q)).tobytes()))
    return out, vc, T, unified, cfg


def metadata(vc, T, unified, ftype, name):
    """(key, type, value[, array element type]) in the converter's order."""
    if unified:
        D, ff, blocks, heads = vc.get("mm_embed_dim", 3840), 0, 0, 0
    else:
        D = vc.get("hidden_size", 768)
        ff = vc.get("intermediate_size", 3072)
        blocks = vc.get("num_hidden_layers", 16)
        heads = vc.get("num_attention_heads", 12)
    kv = [
        ("general.architecture", STRING, "clip"),
        ("general.type", STRING, "mmproj"),
        ("general.name", STRING, name),
        ("general.file_type", U32, ftype),
        ("clip.has_vision_encoder", BOOL, True),
        ("clip.vision.projection_dim", U32, T),
        ("clip.vision.image_size", U32, 224),
        ("clip.vision.patch_size", U32, vc.get("patch_size", 16)),
        ("clip.vision.embedding_length", U32, D),
        ("clip.vision.feed_forward_length", U32, ff),
        ("clip.vision.block_count", U32, blocks),
        ("clip.vision.attention.head_count", U32, heads),
        ("clip.vision.image_mean", ARRAY, [0.0, 0.0, 0.0], F32V),
        ("clip.vision.image_std", ARRAY, [1.0, 1.0, 1.0], F32V),
        # set twice for gemma4uv (gemma4v, then gemma4uv): the key keeps its first position
        ("clip.vision.projector_type", STRING, "gemma4uv" if unified else "gemma4v"),
        # HF's key is rms_norm_eps; the converter reads layer_norm_eps, so this is its default
        ("clip.vision.attention.layer_norm_epsilon", F32V, vc.get("layer_norm_eps", 1e-6)),
        ("general.quantization_version", U32, 2),
    ]
    return kv


# ---- the standalone writer (gguf_writer.py's byte layout) ---------------------------------

def pack_str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def pack_val(t, v, sub=None):
    if t == STRING:
        return pack_str(v)
    if t == U32:
        return struct.pack("<I", v)
    if t == F32V:
        return struct.pack("<f", v)
    if t == BOOL:
        return struct.pack("?", v)
    if t == ARRAY:
        return struct.pack("<IQ", sub, len(v)) + b"".join(pack_val(sub, x) for x in v)
    raise ValueError(t)


def pad(n, a=ALIGN):
    return (a - n % a) % a


def write_standalone(path, kv, tensors):
    with open(path, "wb") as f:
        f.write(GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(tensors), len(kv)))
        for item in kv:
            key, t, v = item[:3]
            f.write(pack_str(key) + struct.pack("<I", t) + pack_val(t, v, *item[3:]))
        off = 0
        for name, q, shape, data in tensors:
            f.write(pack_str(name) + struct.pack("<I", len(shape)))
            for dim in reversed(shape):
                f.write(struct.pack("<Q", dim))
            f.write(struct.pack("<IQ", q, off))
            off += len(data) + pad(len(data))
        f.write(b"\0" * pad(f.tell()))
        for _, _, _, data in tensors:
            f.write(data + b"\0" * pad(len(data)))


def gguf_py_backend(gguf_py):
    """gguf-py's TensorNameMap and quants.quantize, as convert()'s map_name and quant."""
    sys.path.insert(0, gguf_py)
    import gguf  # noqa: E402
    tmap = gguf.get_tensor_name_map(gguf.MODEL_ARCH.MMPROJ, 128)

    def map_name(name):
        new = tmap.get_name(name, try_suffixes=SUFFIXES)
        if new is None:
            raise ValueError(f"Can not map tensor {name!r}")
        return new

    def quant(a, q):
        return gguf.quants.quantize(a, gguf.GGMLQuantizationType(q))
    return map_name, quant


def write_gguf_py(path, kv, tensors, gguf_py):
    """The same file through llama.cpp's gguf-py GGUFWriter (the byte-for-byte cross-check)."""
    sys.path.insert(0, gguf_py)
    import gguf  # noqa: E402
    w = gguf.GGUFWriter(path=None, arch="clip")
    kinds = {STRING: gguf.GGUFValueType.STRING, U32: gguf.GGUFValueType.UINT32,
             F32V: gguf.GGUFValueType.FLOAT32, BOOL: gguf.GGUFValueType.BOOL,
             ARRAY: gguf.GGUFValueType.ARRAY}
    for item in kv[1:]:  # general.architecture comes from the constructor
        key, t, v = item[:3]
        sub = kinds[item[3]] if len(item) > 3 else None
        w.add_key_value(key, v, kinds[t], sub_type=sub)
    for name, q, shape, data in tensors:
        qt = gguf.GGMLQuantizationType(q)
        if q == F32:
            arr = np.frombuffer(data, np.float32).reshape(shape)
        elif q == F16:
            arr = np.frombuffer(data, np.float16).reshape(shape)
        else:
            arr = np.frombuffer(data, np.uint8).reshape(gguf.quant_shape_to_byte_shape(shape, qt))
        w.add_tensor(name, arr, raw_dtype=None if q in (F32, F16) else qt)
    w.write_header_to_file(path=path)
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()


def audio_decoy(kv, tensors):
    """An audio projector part the vision reader must skip: keys and one Q4_K tensor."""
    kv.insert(-1, ("clip.has_audio_encoder", BOOL, True))
    kv.insert(-1, ("clip.audio.projector_type", STRING, "gemma4a"))
    tensors.append(("a.blk.0.ffn_up.weight", Q4_K, (2, 256), bytes(range(256)) + bytes(32)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("out")
    ap.add_argument("--outtype", choices=sorted(FTYPE), default="bf16")
    ap.add_argument("--gguf-py", help="llama.cpp's gguf-py directory: write through it instead")
    ap.add_argument("--audio-decoy", action="store_true",
                    help="add audio keys and a Q4_K audio tensor (the reader must skip them)")
    ap.add_argument("--name", help="general.name (default: the checkpoint directory's name)")
    ap.add_argument("--use-gelu", action="store_true",
                    help="also write clip.use_gelu = true: llama.cpp's vision FFN then runs the "
                         "tanh GELU Gemma 4 uses instead of its default gelu_quick (the stock "
                         "converter does not write it)")
    args = ap.parse_args()
    backend = gguf_py_backend(args.gguf_py) if args.gguf_py else (gguf_name, quantize)
    tensors, vc, T, unified, _ = convert(args.checkpoint, args.outtype, *backend)
    name = args.name or os.path.basename(os.path.normpath(args.checkpoint))
    kv = metadata(vc, T, unified, FTYPE[args.outtype], name)
    if args.audio_decoy:
        audio_decoy(kv, tensors)
    if args.use_gelu:
        kv.insert(-1, ("clip.use_gelu", BOOL, True))
    if args.gguf_py:
        write_gguf_py(args.out, kv, tensors, args.gguf_py)
    else:
        write_standalone(args.out, kv, tensors)


if __name__ == "__main__":
    main()
