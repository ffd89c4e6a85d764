"""gguf_cases.py - the mmproj GGUF fixtures of io_cases.py: good files (tools/gguf_from_checkpoint.py
on tiny and unified-tiny checkpoints, in every outtype) and one broken file per validation error of
src/io/gguf.c and src/io/mmproj_gguf.c, each with the status and message substring the loader must
give. Files are rebuilt here from a parsed good file (a small GGUF reader and writer of our own,
independent of the loader), so each case changes exactly one thing.
"""
import os
import shutil
import struct
import sys

SRC = os.environ.get("G4V_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tools"))
import gen_checkpoint as G  # noqa: E402
import gguf_from_checkpoint as GG  # noqa: E402

SIZES = {0: 4, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}  # value type -> bytes


class Gguf:
    """A parsed GGUF: kv as [key, type, raw value bytes], tensors as [name, ne, type, offset],
    the data section; to_bytes() writes it back (offsets as given, data as given)."""

    def __init__(self, path):
        b = open(path, "rb").read()
        self.magic, self.version = b[:4], struct.unpack_from("<I", b, 4)[0]
        nt, nkv = struct.unpack_from("<QQ", b, 8)
        pos = 24
        self.kv = []

        def rstr(pos):
            n = struct.unpack_from("<Q", b, pos)[0]
            return b[pos + 8: pos + 8 + n].decode(), pos + 8 + n

        def skip(t, pos):
            if t == 8:
                return rstr(pos)[1]
            if t == 9:
                et, n = struct.unpack_from("<IQ", b, pos)
                pos += 12
                for _ in range(n):
                    pos = skip(et, pos)
                return pos
            return pos + SIZES[t]

        for _ in range(nkv):
            key, pos = rstr(pos)
            t = struct.unpack_from("<I", b, pos)[0]
            end = skip(t, pos + 4)
            self.kv.append([key, t, b[pos + 4:end]])
            pos = end
        self.tensors = []
        for _ in range(nt):
            name, pos = rstr(pos)
            nd = struct.unpack_from("<I", b, pos)[0]
            ne = list(struct.unpack_from("<%dQ" % nd, b, pos + 4))
            t, off = struct.unpack_from("<IQ", b, pos + 4 + 8 * nd)
            self.tensors.append([name, ne, t, off])
            pos += 4 + 8 * nd + 12
        self.data_start = pos + (32 - pos % 32) % 32
        self.data = b[self.data_start:]

    def to_bytes(self, nt=None, nkv=None):
        out = bytearray(self.magic + struct.pack("<IQQ", self.version,
                                                 len(self.tensors) if nt is None else nt,
                                                 len(self.kv) if nkv is None else nkv))
        for key, t, raw in self.kv:
            out += GG.pack_str(key) + struct.pack("<I", t) + raw
        for name, ne, t, off in self.tensors:
            out += GG.pack_str(name) + struct.pack("<I", len(ne))
            out += b"".join(struct.pack("<Q", x) for x in ne) + struct.pack("<IQ", t, off)
        out += b"\0" * ((32 - len(out) % 32) % 32)
        return bytes(out) + self.data

    def tensor(self, name):
        return next(t for t in self.tensors if t[0] == name)

    def key(self, key):
        return next(k for k in self.kv if k[0] == key)


def u32(v):
    return struct.pack("<I", v)


def add(C, out):
    gdir = os.path.join(out, "gguf")
    os.makedirs(gdir)
    tiny = os.path.join(gdir, "tiny")
    G.main([tiny, "--config", "tiny", "--seed", "7"])
    uni = os.path.join(gdir, "unified")
    G.main([uni, "--config", "unified-tiny", "--seed", "7"])
    oddk = os.path.join(gdir, "oddk")
    G.main([oddk, "--config", "tiny-oddk", "--seed", "7", "--no-decoys"])

    def convert(ck, dst, outtype, audio=False):
        tensors, vc, T, unified, _ = GG.convert(ck, outtype)
        kv = GG.metadata(vc, T, unified, GG.FTYPE[outtype], os.path.basename(ck))
        if audio:
            GG.audio_decoy(kv, tensors)
        GG.write_standalone(dst, kv, tensors)
        return dst

    good = []
    for t in ("f32", "f16", "bf16", "q8_0"):
        good.append(dict(name=f"gguf_tiny_{t}", path=convert(tiny, os.path.join(gdir, f"tiny_{t}.gguf"), t),
                         kind="tower", layers=2, clipped=1, standardize=1,
                         proj_dtype={"f32": "F32", "f16": "F16", "bf16": "BF16", "q8_0": "F32"}[t],
                         patch_dtype={"f32": "F32", "f16": "F16", "bf16": "BF16", "q8_0": "F32"}[t]))
        good.append(dict(name=f"gguf_unified_{t}",
                         path=convert(uni, os.path.join(gdir, f"unified_{t}.gguf"), t),
                         kind="unified", layers=0, clipped=0, standardize=0,
                         proj_dtype=good[-1]["proj_dtype"], patch_dtype=good[-1]["patch_dtype"]))
    # bf16 and f32 files of a bf16 checkpoint hold exactly its values (f32 widened exactly)
    for g in good:
        if g["name"].endswith(("_bf16", "_f32")):
            g["same_values_as"] = tiny if g["kind"] == "tower" else uni
    # tiny-oddk: rows of 60/120 are not Q8_0 blocks: the converter falls back to F16
    good.append(dict(name="gguf_oddk_q8_0", path=convert(oddk, os.path.join(gdir, "oddk_q8_0.gguf"), "q8_0"),
                     kind="tower", layers=2, clipped=1, standardize=1, proj_dtype="F16",
                     patch_dtype="F32"))
    good.append(dict(name="gguf_audio_decoy",
                     path=convert(tiny, os.path.join(gdir, "tiny_audio.gguf"), "bf16", audio=True),
                     kind="tower", layers=2, clipped=1, standardize=1, proj_dtype="BF16",
                     patch_dtype="BF16", same_values_as=tiny))
    one = os.path.join(gdir, "one_mmproj")
    os.makedirs(one)
    shutil.copy(os.path.join(gdir, "tiny_q8_0.gguf"), os.path.join(one, "mmproj-tiny-Q8_0.gguf"))
    with open(os.path.join(one, "tiny-text-Q4_K_M.gguf"), "wb") as f:
        f.write(b"GGUF not an mmproj, never opened")
    good.append(dict(name="gguf_dir_one_mmproj", path=one, kind="tower", layers=2, clipped=1,
                     standardize=1, proj_dtype="F32", patch_dtype="F32"))

    two = os.path.join(gdir, "two_mmproj")
    os.makedirs(two)
    for n in ("mmproj-a.gguf", "MMPROJ-b.gguf"):
        shutil.copy(os.path.join(gdir, "tiny_q8_0.gguf"), os.path.join(two, n))
    C.add_bad("gguf_dir_two_mmproj", "G4V_ERR_IO", "several mmproj GGUF files", two)
    C.add_bad("gguf_not_gguf_file", "G4V_ERR_IO", "not a directory (a checkpoint) or an mmproj GGUF",
              os.path.join(tiny, "model.safetensors"))

    base = os.path.join(gdir, "tiny_bf16.gguf")
    raw = open(base, "rb").read()

    def bad(name, status, substring, fn=None, data=None):
        p = os.path.join(gdir, name + ".gguf")
        if data is None:
            g = Gguf(base)
            data = fn(g)
            if data is None:
                data = g.to_bytes()
        with open(p, "wb") as f:
            f.write(data)
        C.add_bad(name, status, substring, p)

    Q = "v.blk.0.attn_q.weight"
    bad("gguf_truncated_counts", "G4V_ERR_MODEL", "cannot fit in the 276 bytes left", data=raw[:300])
    bad("gguf_truncated_header", "G4V_ERR_MODEL", "runs past the end of the file", data=raw[:3000])
    bad("gguf_truncated_data", "G4V_ERR_MODEL", "lies outside the data section", data=raw[:-100])
    bad("gguf_empty_after_magic", "G4V_ERR_MODEL", "the GGUF version runs past the end", data=raw[:6])
    bad("gguf_version1", "G4V_ERR_UNSUPPORTED", "GGUF version 1", data=raw[:4] + u32(1) + raw[8:])
    bad("gguf_big_endian", "G4V_ERR_MODEL", "a big-endian file?",
        data=raw[:4] + struct.pack(">I", 3) + raw[8:])
    bad("gguf_huge_kv_count", "G4V_ERR_LIMIT", "max_tensor_count", lambda g: g.to_bytes(nkv=1 << 62))
    bad("gguf_kv_count_cannot_fit", "G4V_ERR_MODEL", "cannot fit", lambda g: g.to_bytes(nkv=900000))
    bad("gguf_tensor_count_cannot_fit", "G4V_ERR_MODEL", "cannot fit", lambda g: g.to_bytes(nt=900000))

    def huge_string(g):
        k = g.key("general.name")
        k[2] = struct.pack("<Q", 1 << 63) + b"x"
    bad("gguf_huge_string", "G4V_ERR_MODEL", "value of key 'general.name' runs past the end", huge_string)

    def huge_array(g):
        k = g.key("clip.vision.image_mean")
        k[2] = struct.pack("<IQ", 6, 1 << 61) + k[2][12:]
    bad("gguf_huge_array", "G4V_ERR_MODEL", "array 'clip.vision.image_mean'", huge_array)

    def nested(g):
        k = g.key("clip.vision.image_mean")
        k[2] = struct.pack("<IQ", 9, 1) + struct.pack("<IQ", 6, 1) + struct.pack("<f", 0.0)
    bad("gguf_nested_array", "G4V_ERR_MODEL", "nested arrays", nested)

    def bad_vtype(g):
        g.key("general.name")[1] = 13
    bad("gguf_bad_value_type", "G4V_ERR_MODEL", "unknown value type 13", bad_vtype)

    def bad_bool(g):
        g.key("clip.has_vision_encoder")[2] = b"\x02"
    bad("gguf_bad_bool", "G4V_ERR_MODEL", "not 0 or 1", bad_bool)

    def dup_key(g):
        g.kv.append(list(g.key("general.name")))
    bad("gguf_dup_key", "G4V_ERR_MODEL", "duplicate metadata key 'general.name'", dup_key)

    def dup_tensor(g):
        t = list(g.tensor(Q))
        t[3] = len(g.data)
        g.tensors.append(t)
    bad("gguf_dup_tensor", "G4V_ERR_MODEL", "duplicate tensor name " + Q, dup_tensor)

    def key_nul(g):
        g.kv[1][0] = "general.ty\0pe"
    bad("gguf_key_nul", "G4V_ERR_MODEL", "contains a NUL byte", key_nul)

    def long_name(g):
        g.tensors[0][0] = "v." + "x" * 70
    bad("gguf_long_tensor_name", "G4V_ERR_MODEL", "is 72 bytes long", long_name)

    def align48(g):
        g.kv.append(["general.alignment", 4, u32(48)])
    bad("gguf_alignment_not_pow2", "G4V_ERR_MODEL", "general.alignment 48 is not a power of two", align48)

    def align_u64(g):
        g.kv.append(["general.alignment", 10, struct.pack("<Q", 32)])
    bad("gguf_alignment_type", "G4V_ERR_MODEL", "general.alignment must be a u32", align_u64)

    def misalign(g):
        g.tensor(Q)[3] += 4
    bad("gguf_misaligned", "G4V_ERR_MODEL", "is not a multiple of the alignment 32", misalign)

    def far(g):
        g.tensor(Q)[3] = (1 << 62)
    bad("gguf_offset_outside", "G4V_ERR_MODEL", "lies outside the data section", far)

    def overlap(g):
        g.tensor("v.blk.0.attn_k.weight")[3] = g.tensor(Q)[3]
    bad("gguf_overlap", "G4V_ERR_MODEL", "overlap", overlap)

    def five_dims(g):
        g.tensor(Q)[1] = [64, 64, 1, 1, 1]
    bad("gguf_five_dims", "G4V_ERR_MODEL", "has 5 dimensions", five_dims)

    def neg_dim(g):
        g.tensor(Q)[1] = [64, 1 << 63]
    bad("gguf_negative_dim", "G4V_ERR_MODEL", "is negative", neg_dim)

    def overflow(g):
        g.tensor(Q)[1] = [1 << 40, 1 << 40]
    bad("gguf_elements_overflow", "G4V_ERR_MODEL", "element count overflows", overflow)

    def q4k(g):
        g.tensor(Q)[2] = 12
    bad("gguf_unsupported_type", "G4V_ERR_UNSUPPORTED", "tensor " + Q + " has ggml type Q4_K", q4k)

    def bogus_type(g):
        g.tensor(Q)[2] = 77
    bad("gguf_unknown_type", "G4V_ERR_UNSUPPORTED", "has ggml type type 77", bogus_type)

    def q8_rows(g):  # a Q8_0 tensor whose rows are not whole blocks
        t = g.tensor("v.blk.0.ln1.weight")
        t[1], t[2] = [48], 8
    bad("gguf_q8_partial_block", "G4V_ERR_MODEL", "not a multiple of the 32-value blocks", q8_rows)

    def missing(g):
        g.tensors = [t for t in g.tensors if t[0] != "v.blk.1.ffn_down.weight"]
    bad("gguf_missing_tensor", "G4V_ERR_MODEL", "missing tensor v.blk.1.ffn_down.weight", missing)

    def missing_clip(g):
        g.tensors = [t for t in g.tensors if t[0] != "v.blk.1.ffn_up.output_max"]
    bad("gguf_missing_clip", "G4V_ERR_MODEL", "missing tensor v.blk.1.ffn_up.output_max", missing_clip)

    def shape(g):
        g.tensor(Q)[1] = [64, 32]
    bad("gguf_shape_mismatch", "G4V_ERR_MODEL", "tensor " + Q + ": expected shape [64, 64]", shape)

    def patch_shape(g):
        g.tensor("v.patch_embd.weight")[1] = [768, 64]
    bad("gguf_patch_shape", "G4V_ERR_MODEL", "v.patch_embd.weight: expected shape [64, 3, 16, 16]",
        patch_shape)

    def pos_shape(g):
        g.tensor("v.position_embd.weight")[1] = [64, 256, 3]
    bad("gguf_position_shape", "G4V_ERR_MODEL", "v.position_embd.weight: expected shape [2, P, 64]",
        pos_shape)

    def projector(g):
        k = g.key("clip.vision.projector_type")
        k[2] = GG.pack_str("gemma3")
    bad("gguf_projector_gemma3", "G4V_ERR_UNSUPPORTED", "'gemma3' is not a Gemma 4 vision projector",
        projector)

    def no_projector(g):
        g.kv = [k for k in g.kv if k[0] != "clip.vision.projector_type"]
    bad("gguf_no_projector", "G4V_ERR_MODEL", "no clip.projector_type", no_projector)

    def text_model(g):
        g.key("general.type")[2] = GG.pack_str("model")
    bad("gguf_text_model", "G4V_ERR_UNSUPPORTED", "not an mmproj (projector) GGUF", text_model)

    def no_vision(g):
        g.key("clip.has_vision_encoder")[2] = b"\x00"
    bad("gguf_no_vision", "G4V_ERR_UNSUPPORTED", "clip.has_vision_encoder is false", no_vision)

    def missing_key(g):
        g.kv = [k for k in g.kv if k[0] != "clip.vision.embedding_length"]
    bad("gguf_missing_key", "G4V_ERR_MODEL", "clip.vision.embedding_length is missing", missing_key)

    def key_type(g):
        k = g.key("clip.vision.embedding_length")
        k[1], k[2] = 8, GG.pack_str("64")
    bad("gguf_key_type", "G4V_ERR_MODEL", "clip.vision.embedding_length must be an integer", key_type)

    def key_range(g):
        g.key("clip.vision.block_count")[2] = u32(5000)
    bad("gguf_key_range", "G4V_ERR_MODEL", "clip.vision.block_count = 5000 is outside", key_range)

    def proj_dim(g):
        g.key("clip.vision.projection_dim")[2] = u32(95)
    bad("gguf_projection_dim", "G4V_ERR_MODEL", "projection_dim 95 disagrees", proj_dim)

    def eps_missing(g):
        g.kv = [k for k in g.kv if k[0] != "clip.vision.attention.layer_norm_epsilon"]
    bad("gguf_eps_missing", "G4V_ERR_MODEL", "layer_norm_epsilon is missing", eps_missing)

    def out_scale(g):
        t = list(g.tensor("v.blk.0.ln1.weight"))
        t[0], t[3] = "v.blk.0.out_scale.weight", len(g.data)
        g.tensors.append(t)
        g.data += b"\0" * 256
    bad("gguf_out_scale", "G4V_ERR_UNSUPPORTED", "per-layer output scales", out_scale)

    def clip_order(g):  # input_min above input_max: swap the two tensors' data
        a, b = g.tensor(Q[:-7] + ".input_min"), g.tensor(Q[:-7] + ".input_max")
        a[3], b[3] = b[3], a[3]
    bad("gguf_clip_unordered", "G4V_ERR_MODEL", "are not ordered", clip_order)

    return good
