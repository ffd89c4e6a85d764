#!/usr/bin/python3
"""gen_lm_gguf.py - writes a small synthetic Gemma 4 *text* model as a llama.cpp GGUF (for the
`g4v chat` tests and `make chat-demo`): random weights, the real Gemma 4 tokenizer.

The file is what llama.cpp's `gemma4` architecture loads (llama.cpp/src/models/gemma4.cpp): the
hyperparameter keys and tensor names of gguf-py's constants for MODEL_ARCH.GEMMA4, a sliding-window
pattern as a bool array, KV sharing between the last layers, rope frequency factors on the
full-attention layers, a final logit softcap, and (--config e2b, e4b) per-layer embeddings. The
tokenizer keys (model "gemma4": BPE with merges, 262,144 tokens, the special tokens at their real
ids: <|image> 255999, <|image|> 258880, <image|> 258882, <|video|> 258884, <|turn> 105,
<turn|> 106, bos 2, eos 1, pad 0) and the chat template are copied from llama.cpp's own
vocabulary file models/ggml-vocab-gemma-4.gguf (--vocab), so tokenization is Gemma 4's.

Configs (the width is what decides causal vs. bidirectional image attention in llama.cpp's
mtmd_decode_use_non_causal: 1536 and 2560 are the causal e2b / e4b widths):
  e2b   n_embd 1536, per-layer embeddings (8 per layer), 2 of 4 layers share KV   (causal)
  e4b   n_embd 2560, per-layer embeddings, 2 of 4 layers share KV                 (causal)
  31b   n_embd 512, no per-layer embeddings                 (bidirectional with a gemma4v tower)
  12b   n_embd 384, no per-layer embeddings                 (bidirectional: gemma4uv always)
  e2b-full  every shape of the real E2B text model (timing only: --layers 35 --quant q4_0)
The vocabulary dominates the size: the token embedding (tied to the output) is stored as Q4_0
with random blocks (226 MB for e2b, 377 MB for e4b, 76 MB for 31b, 57 MB for 12b; the files
are ~60 MB more: per-layer table, tokenizer); every other
weight is F16 (norms F32). Deterministic in --seed.

Needs numpy and llama.cpp's gguf-py (--gguf-py DIR, or on PYTHONPATH).

usage: gen_lm_gguf.py OUT.gguf --config e2b|e4b|31b|12b --vocab ggml-vocab-gemma-4.gguf
                      [--gguf-py DIR] [--seed N] [--layers N] [--no-template] [--arch NAME]
                      [--quant q4_0]   (every matrix as random Q4_0 blocks instead of F16)
                      [--quant q8_0|q4_k] (the F16 matrices quantized: gguf-py's Q8_0, our Q4_K)
The quantized files are what the chat tests run llama.cpp's quantized kernels with (its AMX and
repacked paths take Q4_0, Q8_0 and Q4_K weights: docs/CHAT.md §6). --quant q8_0 and q4_k draw
the same random weights as f16 and quantize them, so the model's answers are those of a quantized
F16 model; a matrix whose rows do not split into the type's blocks stays F16, as llama.cpp's own
quantizer keeps such tensors in another type.
"""
import argparse
import os
import sys

import numpy as np

CONFIGS = {
    # n_embd, heads, kv heads, head dim (full / sliding), ffn, per-layer width, shared kv layers
    "e2b": dict(n_embd=1536, n_head=4, n_head_kv=1, hd=128, hd_swa=64, n_ff=512, n_ple=8,
                shared=2, window=512),
    "e4b": dict(n_embd=2560, n_head=4, n_head_kv=2, hd=128, hd_swa=64, n_ff=512, n_ple=8,
                shared=2, window=512),
    "31b": dict(n_embd=512, n_head=4, n_head_kv=2, hd=128, hd_swa=64, n_ff=512, n_ple=0,
                shared=0, window=1024),
    "12b": dict(n_embd=384, n_head=4, n_head_kv=2, hd=96, hd_swa=48, n_ff=512, n_ple=0,
                shared=0, window=1024),
    # the real E2B text model's shapes (google/gemma-4-e2b-it config.json as published: 35
    # layers, 4 sliding per global, 8 heads of 256 / 512, one KV head, FFN 6144 and twice that on
    # the 20 KV-sharing layers, per-layer inputs of 256) for timing (`make bench-chat`), with
    # random weights; use --layers 35 --quant q4_0 (about 2.3 GB)
    "e2b-full": dict(n_embd=1536, n_head=8, n_head_kv=1, hd=512, hd_swa=256, n_ff=6144,
                     n_ff_shared=12288, n_ple=256, shared=20, window=512, swa_every=5),
}
N_VOCAB = 262144


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--config", choices=sorted(CONFIGS), required=True)
    ap.add_argument("--vocab", required=True,
                    help="llama.cpp's models/ggml-vocab-gemma-4.gguf (tokenizer + chat template)")
    ap.add_argument("--gguf-py", help="llama.cpp's gguf-py directory")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=4, help="layers (>= 2)")
    ap.add_argument("--no-template", action="store_true", help="leave out tokenizer.chat_template")
    ap.add_argument("--template", help="write this chat template instead of Gemma 4's")
    ap.add_argument("--quant", choices=["f16", "q4_0", "q8_0", "q4_k"], default="f16",
                    help="matrices as F16 (default), as random Q4_0 blocks (for the large configs), "
                         "or quantized to Q8_0 or Q4_K")
    ap.add_argument("--arch", default="gemma4",
                    help="general.architecture to write (tests write a non-Gemma-4 one)")
    args = ap.parse_args(argv)
    if args.gguf_py:
        sys.path.insert(0, args.gguf_py)
    import gguf  # noqa: E402  (llama.cpp's gguf-py)

    c = CONFIGS[args.config]
    L = args.layers
    if L < 2:
        ap.error("--layers must be >= 2")
    rng = np.random.default_rng(args.seed)
    E, H, Hkv, hd, hds, F, P = (c["n_embd"], c["n_head"], c["n_head_kv"], c["hd"], c["hd_swa"],
                                c["n_ff"], c["n_ple"])
    # sliding-window and global layers alternate (the real models have 4 or 5 sliding per
    # global); the last layer is global, and the KV-sharing layers find one of each kind before
    # them (llama.cpp reuses the last KV layer of the same kind)
    every = c.get("swa_every", 2)
    swa = [(i % every) != every - 1 for i in range(L)]
    swa[-1] = False
    shared = min(c["shared"], L - 2)
    ffn = [c.get("n_ff_shared", F) if i >= L - shared else F for i in range(L)]

    voc = gguf.GGUFReader(args.vocab)

    def field(name):
        f = voc.fields.get(name)
        return None if f is None else f.contents()

    if field("tokenizer.ggml.model") != "gemma4" or len(voc.fields["tokenizer.ggml.tokens"].data) != N_VOCAB:
        sys.exit(f"gen_lm_gguf: {args.vocab} is not a Gemma 4 vocabulary")

    arch = args.arch
    tmp = args.out + ".tmp"
    w = gguf.GGUFWriter(tmp, arch)
    w.add_name(f"g4v synthetic gemma4 text {args.config}")
    w.add_file_type({"q4_0": gguf.LlamaFileType.MOSTLY_Q4_0, "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
                     "q4_k": gguf.LlamaFileType.MOSTLY_Q4_K_M}.get(args.quant,
                                                                gguf.LlamaFileType.MOSTLY_F16))
    w.add_uint32(f"{arch}.block_count", L)
    w.add_uint32(f"{arch}.context_length", 131072)
    w.add_uint32(f"{arch}.embedding_length", E)
    if len(set(ffn)) == 1:
        w.add_uint32(f"{arch}.feed_forward_length", F)
    else:
        w.add_array(f"{arch}.feed_forward_length", ffn)
    w.add_uint32(f"{arch}.attention.head_count", H)
    w.add_array(f"{arch}.attention.head_count_kv", [Hkv] * L)
    w.add_float32(f"{arch}.rope.freq_base", 1000000.0)
    w.add_float32(f"{arch}.rope.freq_base_swa", 10000.0)
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6)
    w.add_uint32(f"{arch}.attention.key_length", hd)
    w.add_uint32(f"{arch}.attention.value_length", hd)
    w.add_uint32(f"{arch}.attention.key_length_swa", hds)
    w.add_uint32(f"{arch}.attention.value_length_swa", hds)
    w.add_uint32(f"{arch}.rope.dimension_count", hd)
    w.add_uint32(f"{arch}.rope.dimension_count_swa", hds)
    w.add_float32(f"{arch}.final_logit_softcapping", 30.0)
    w.add_uint32(f"{arch}.attention.sliding_window", c["window"])
    w.add_uint32(f"{arch}.attention.shared_kv_layers", shared)
    w.add_uint32(f"{arch}.embedding_length_per_layer_input", P)
    w.add_array(f"{arch}.attention.sliding_window_pattern", swa)

    # the tokenizer, verbatim
    w.add_tokenizer_model("gemma4")
    w.add_token_list(field("tokenizer.ggml.tokens"))
    w.add_token_scores(field("tokenizer.ggml.scores"))
    w.add_token_types(field("tokenizer.ggml.token_type"))
    w.add_token_merges(field("tokenizer.ggml.merges"))
    for k in ("bos", "eos", "unknown", "padding", "mask"):
        v = field(f"tokenizer.ggml.{k}_token_id")
        if v is not None:
            w.add_uint32(f"tokenizer.ggml.{k}_token_id", int(v))
    w.add_bool("tokenizer.ggml.add_space_prefix", bool(field("tokenizer.ggml.add_space_prefix")))
    w.add_bool("tokenizer.ggml.add_bos_token", bool(field("tokenizer.ggml.add_bos_token")))
    tmpl = args.template or field("tokenizer.chat_template")
    if tmpl and not args.no_template:
        w.add_chat_template(tmpl)

    def f16(name, shape, scale):  # numpy shape = ggml ne reversed
        if args.quant == "q4_0" and len(shape) == 2 and shape[1] % 32 == 0:
            q4(name, shape, scale)
            return
        x = (rng.standard_normal(shape, dtype=np.float32) * scale).astype(np.float16)
        if args.quant == "q8_0" and len(shape) == 2 and shape[1] % 32 == 0:
            q = gguf.quants.quantize(x.astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
            w.add_tensor(name, q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        elif args.quant == "q4_k" and len(shape) == 2 and shape[1] % 256 == 0:
            w.add_tensor(name, quantize_q4_k(x.astype(np.float32)),
                         raw_dtype=gguf.GGMLQuantizationType.Q4_K)
        else:
            w.add_tensor(name, x)

    def q4(name, shape, scale):
        # random Q4_0 blocks: nibbles uniform in 0..15 give (q - 8) * d with a standard deviation
        # of ~4.6 d, so d = scale / 4.6 matches the F16 weights' spread
        rows, nb = shape[0], shape[1] // 32
        blocks = rng.integers(0, 256, size=(rows, nb, 18), dtype=np.uint8)
        d = np.full((rows, nb), scale / 4.6, dtype=np.float16)
        blocks[:, :, 0:2] = d.view(np.uint8).reshape(rows, nb, 2)
        w.add_tensor(name, blocks.reshape(rows, nb * 18), raw_dtype=gguf.GGMLQuantizationType.Q4_0)

    def norm(name, n):
        w.add_tensor(name, (1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)).astype(np.float32))

    # token embedding (tied output): random Q4_0 blocks, d in [0.002, 0.006]: small next to the
    # layers' output, so that the model does not just repeat its last token (tied embeddings)
    nb = E // 32
    blocks = rng.integers(0, 256, size=(N_VOCAB, nb, 18), dtype=np.uint8)
    d = rng.uniform(0.002, 0.006, size=(N_VOCAB, nb)).astype(np.float16)
    blocks[:, :, 0:2] = d.view(np.uint8).reshape(N_VOCAB, nb, 2)
    w.add_tensor("token_embd.weight", blocks.reshape(N_VOCAB, nb * 18),
                 raw_dtype=gguf.GGMLQuantizationType.Q4_0)
    del blocks
    norm("output_norm.weight", E)
    if P:
        f16("per_layer_token_embd.weight", (N_VOCAB, P * L), 1.0)
        f16("per_layer_model_proj.weight", (P * L, E), E ** -0.5)
        norm("per_layer_proj_norm.weight", P)
    # proportional rope on the global layers: the first quarter of the pairs rotate, the rest not
    rf = np.ones(hd // 2, dtype=np.float32)
    rf[hd // 8:] = 1e30
    w.add_tensor("rope_freqs.weight", rf)
    n_kv_from_start = L - shared
    for i in range(L):
        b = f"blk.{i}."
        h = hds if swa[i] else hd
        norm(b + "attn_norm.weight", E)
        f16(b + "attn_q.weight", (H * h, E), E ** -0.5)
        if i < n_kv_from_start:
            f16(b + "attn_k.weight", (Hkv * h, E), E ** -0.5)
            f16(b + "attn_v.weight", (Hkv * h, E), E ** -0.5)
            norm(b + "attn_k_norm.weight", h)
        f16(b + "attn_output.weight", (E, H * h), (H * h) ** -0.5)
        norm(b + "attn_q_norm.weight", h)
        norm(b + "post_attention_norm.weight", E)
        norm(b + "ffn_norm.weight", E)
        f16(b + "ffn_gate.weight", (ffn[i], E), E ** -0.5)
        f16(b + "ffn_up.weight", (ffn[i], E), E ** -0.5)
        f16(b + "ffn_down.weight", (E, ffn[i]), ffn[i] ** -0.5)
        norm(b + "post_ffw_norm.weight", E)
        if P:
            f16(b + "inp_gate.weight", (P, E), E ** -0.5)
            f16(b + "proj.weight", (E, P), P ** -0.5)
            norm(b + "post_norm.weight", E)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, args.out)  # a whole file or none
    return 0


def quantize_q4_k(x):
    """Rows of x (a multiple of 256 floats each) as Q4_K blocks, as uint8 [rows, bytes]: per
    256 values, f16 d and dmin, twelve bytes of eight 6-bit scales and mins, 128 bytes of 4-bit
    codes; value = d * scale_j * q - dmin * min_j for sub-block j of 32 (ggml's block_q4_K, read
    back by gguf-py's Q4_K.dequantize_blocks). A plain min/max fit per sub-block: not llama.cpp's
    searched one, but the same format."""
    rows, k = x.shape
    b = x.reshape(rows * (k // 256), 8, 32)
    lo = np.minimum(b.min(axis=2), 0.0)            # each sub-block's offset (<= 0)
    scale = (b.max(axis=2) - lo) / 15.0             # each sub-block's step
    mins = -lo
    d = (scale.max(axis=1) / 63.0).astype(np.float16)
    dmin = (mins.max(axis=1) / 63.0).astype(np.float16)
    df, dmf = d.astype(np.float32)[:, None], dmin.astype(np.float32)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.where(df > 0, np.rint(scale / df), 0).clip(0, 63).astype(np.uint8)
        mn = np.where(dmf > 0, np.rint(mins / dmf), 0).clip(0, 63).astype(np.uint8)
        step = (df * sc)[:, :, None]
        off = (dmf * mn)[:, :, None]
        q = np.where(step > 0, np.rint((b + off) / step), 0).clip(0, 15).astype(np.uint8)
    # scales[12]: bytes 0-3 low 6 bits of scales 0-3 (top 2 bits: scale 4-7's high bits),
    # bytes 4-7 the same for the mins, bytes 8-11 scale/min 4-7's low 4 bits
    packed = np.zeros((b.shape[0], 12), dtype=np.uint8)
    packed[:, 0:4] = (sc[:, 0:4] & 63) | ((sc[:, 4:8] >> 4) << 6)
    packed[:, 4:8] = (mn[:, 0:4] & 63) | ((mn[:, 4:8] >> 4) << 6)
    packed[:, 8:12] = (sc[:, 4:8] & 15) | ((mn[:, 4:8] & 15) << 4)
    # 128 code bytes: sub-blocks 2i and 2i+1 share 32 bytes, low and high nibble
    qs = (q[:, 0::2, :] | (q[:, 1::2, :] << 4)).reshape(b.shape[0], 128)
    blocks = np.concatenate([d.view(np.uint8).reshape(-1, 2), dmin.view(np.uint8).reshape(-1, 2),
                             packed, qs], axis=1)
    return blocks.reshape(rows, (k // 256) * 144)


if __name__ == "__main__":
    sys.exit(main())
