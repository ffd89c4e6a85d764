#!/usr/bin/python3
"""make_seeds.py - writes the fuzz seed corpora and the fixed companion files the harnesses use.

    /usr/bin/python3 fuzz/make_seeds.py            (rewrites fuzz/corpus/* and fuzz/data/*)

Deterministic (fixed seeds, no timestamps), so rerunning it changes nothing unless this script
changed. Everything is small (each file a few KB at most) so the corpora can be committed:

  data/micro/       config.json + model.safetensors of a "micro" checkpoint: tools/gen_checkpoint.py
                    with D=8, 1 layer, patch size 2 (every tensor kind present, clipped +
                    standardize, GQA), ~5 KB. fuzz_safetensors pairs its inputs with this
                    config.json, fuzz_config its inputs with this model.safetensors.
  data/micro-shards/  the same tensors as two shards (fuzz_index's companion files).
  corpus/safetensors  micro model.safetensors in both namings and all dtypes, with decoys, plus a
                    few broken ones (truncated, bad offsets, overlapping).
  corpus/config     config.json variants (defaults, rope_theta placement, options off, e4b).
  corpus/index      model.safetensors.index.json variants for data/micro-shards.
  corpus/gguf       mmproj GGUF files (tools/gguf_from_checkpoint.py): data/micro in f32, f16, bf16
                    and q8_0, a micro32 tower with whole Q8_0 blocks, a micro unified embedder,
                    an audio decoy, and truncated / header-only / version-1 / empty files.
  corpus/image      small images for every decoder branch: PNG (all colour types and depths,
                    Adam7, eXIf before/after IDAT, raw-profile EXIF, XMP), JPEG (baseline,
                    progressive, gray, CMYK, 4:4:4, EXIF orientations), GIF (interlaced,
                    transparent, animated, offset frame), WebP (lossy, lossless, alpha, EXIF,
                    animated), BMP (1/4/8-bit, RLE4/RLE8, 16-bit 555/565, 24, 32, OS/2, top-down),
                    TIFF (every mode tiff.c decodes, LZW/Deflate/PackBits/JPEG/CCITT, strips and
                    tiles, both byte orders, FillOrder 2, orientation, multi-page, and refused
                    kinds: planar 2, float, YCbCr without JPEG).
  corpus/encode     a handful of those images (the encode target is slower per input).
  corpus/hub_listing  Hub API listings: a checkpoint's, a GGUF repo's, and each way one is
                    refused (names that escape the folder, a name twice or as a folder, sizes that
                    are negative, fractional, beyond 2^53 or strings, short digests, no commit).
  corpus/hub_header   safetensors files as a vision-only pull sees them: data/micro's in both
                    namings, with language-model tensors around the vision ones, and headers that
                    overlap, run past the file, lie about a shape, use fractional offsets, name a
                    tensor twice, or give a length beyond the file.
  corpus/serve      raw HTTP requests to `g4v serve`: every endpoint and method, the query
                    parameters and Accept types, Content-Length and chunked bodies (a small PNG),
                    pipelined requests, bad values and an oversized Content-Length.

The corpora that campaigns grow (fuzz/merge_corpus.sh) live in fuzz/grown/<target>, which this
script never touches.

Pillow writes what it can; PNG and BMP are also written by the small writers below so that
variants Pillow cannot produce (interlaced, 16-bit colour, RLE) are covered.
"""
import importlib.util
import io
import json
import os
import shutil
import struct
import sys
import zlib

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def load_gen():
    spec = importlib.util.spec_from_file_location("gen_checkpoint",
                                                  os.path.join(ROOT, "tools", "gen_checkpoint.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    # The micro model: every tensor kind, tiny sizes. patch_size 2 keeps input_proj at [8, 12].
    gen.CONFIGS["micro"] = dict(D=8, I=16, layers=1, H=2, Hkv=1, d=4, P=4, T=8, clipped=True,
                                standardize=True, rope_theta=100.0)
    gen.PATCH = 2
    return gen


def fresh(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    os.makedirs(path)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


# ---------------------------------------------------------------------------------------------
# checkpoints

def micro(gen, tmp, *args):
    out = os.path.join(tmp, "m%d" % len(os.listdir(tmp)))
    assert gen.main([out, "--config", "micro", "--seed", "1"] + list(args)) == 0
    return out


def st_parts(blob):
    n = struct.unpack("<Q", blob[:8])[0]
    return json.loads(blob[8:8 + n]), blob[8 + n:]


def st_join(header, data):
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    return struct.pack("<Q", len(hb)) + hb + data


def checkpoints(gen, tmp):
    data = os.path.join(HERE, "data")
    fresh(os.path.join(data, "micro"))
    fresh(os.path.join(data, "micro-shards"))
    base = micro(gen, tmp, "--no-decoys")
    for f in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(base, f), os.path.join(data, "micro", f))
    shards = micro(gen, tmp, "--no-decoys", "--shards", "2")
    for f in sorted(os.listdir(shards)):
        shutil.copy(os.path.join(shards, f), os.path.join(data, "micro-shards", f))

    # safetensors corpus (paired with data/micro/config.json by the harness)
    c = os.path.join(HERE, "corpus", "safetensors")
    fresh(c)
    good = read(os.path.join(base, "model.safetensors"))
    write(os.path.join(c, "hf-bf16.safetensors"), good)
    write(os.path.join(c, "mlx-f16.safetensors"), read(os.path.join(
        micro(gen, tmp, "--no-decoys", "--naming", "mlx", "--dtype", "f16"), "model.safetensors")))
    write(os.path.join(c, "hf-f32.safetensors"), read(os.path.join(
        micro(gen, tmp, "--no-decoys", "--dtype", "f32"), "model.safetensors")))
    header, body = st_parts(good)
    names = [k for k in header if k != "__metadata__"]
    # decoys a loader must skip (quantized-looking U32, exotic dtype, an empty tensor)
    h = dict(header)
    h["model.language_model.layers.0.mlp.down_proj.weight"] = {
        "dtype": "U32", "shape": [2, 2], "data_offsets": [0, 16]}
    h["model.audio_tower.x"] = {"dtype": "F8_E4M3", "shape": [0], "data_offsets": [0, 0]}
    write(os.path.join(c, "decoys.safetensors"), st_join(h, body))
    write(os.path.join(c, "truncated.safetensors"), good[:len(good) - 40])
    write(os.path.join(c, "header-only.safetensors"), good[:8 + struct.unpack("<Q", good[:8])[0]])
    h = json.loads(json.dumps(header))
    h[names[1]]["data_offsets"] = h[names[0]]["data_offsets"]  # overlap (and a size mismatch)
    write(os.path.join(c, "overlap.safetensors"), st_join(h, body))
    h = json.loads(json.dumps(header))
    h[names[2]]["shape"] = [3, 1 << 40]
    write(os.path.join(c, "bad-shape.safetensors"), st_join(h, body))
    h = json.loads(json.dumps(header))
    h[names[3]]["data_offsets"] = [len(body), len(body) + 2]
    write(os.path.join(c, "out-of-range.safetensors"), st_join(h, body))
    write(os.path.join(c, "empty-header.safetensors"), struct.pack("<Q", 8) + b"{}      ")

    # config corpus (paired with data/micro/model.safetensors)
    c = os.path.join(HERE, "corpus", "config")
    fresh(c)
    cfg = json.loads(read(os.path.join(base, "config.json")))
    write(os.path.join(c, "micro.json"), json.dumps(cfg, indent=1).encode())
    v = json.loads(json.dumps(cfg))
    rp = v["vision_config"].pop("rope_parameters")
    v["vision_config"]["rope_theta"] = rp["rope_theta"]
    write(os.path.join(c, "rope-top.json"), json.dumps(v).encode())
    v = json.loads(json.dumps(cfg))
    v["vision_config"]["use_clipped_linears"] = False
    v["vision_config"]["standardize"] = False
    for k in ("image_token_id", "boi_token_id", "eoi_token_id", "video_token_id"):
        v.pop(k, None)
    write(os.path.join(c, "options-off.json"), json.dumps(v).encode())
    write(os.path.join(c, "defaults.json"),
          json.dumps({"vision_config": {}, "text_config": {"hidden_size": 2560}}).encode())
    write(os.path.join(c, "wrong-type.json"),
          b'{"vision_config": {"hidden_size": "8", "model_type": "siglip"}, "text_config": 1}')

    # index corpus (paired with data/micro-shards)
    c = os.path.join(HERE, "corpus", "index")
    fresh(c)
    idx = json.loads(read(os.path.join(shards, "model.safetensors.index.json")))
    write(os.path.join(c, "index.json"), json.dumps(idx, separators=(",", ":")).encode())
    wm = idx["weight_map"]
    keys = sorted(wm)
    v = {"weight_map": {k: wm[k] for k in keys[::2]}}
    write(os.path.join(c, "partial.json"), json.dumps(v).encode())
    v = {"weight_map": dict(wm)}
    v["weight_map"][keys[0]] = "model-00002-of-00002.safetensors"  # points at the wrong shard
    write(os.path.join(c, "wrong-shard.json"), json.dumps(v).encode())
    v = {"weight_map": dict(wm)}
    v["weight_map"][keys[1]] = "../config.json"
    write(os.path.join(c, "traversal.json"), json.dumps(v).encode())
    write(os.path.join(c, "missing-shard.json"),
          json.dumps({"weight_map": {keys[0]: "model-00003-of-00003.safetensors"}}).encode())


# ---------------------------------------------------------------------------------------------
# images

def pattern(w, h, c, seed):
    r = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = ((x * 37 + y * 11) % 256).astype(np.uint8)
    img = np.stack([base, base[::-1], (base * 3) % 256, 255 - base][:c], -1)
    img = img ^ (r.integers(0, 2, img.shape, dtype=np.uint8) * 8)
    return img.astype(np.uint8)


def tiff_orientation(value, big=False, typ=3):
    """A TIFF blob ("Exif\\0\\0" + IFD0) with one Orientation entry of TIFF type typ."""
    e = ">" if big else "<"
    head = (b"MM\x00*" if big else b"II*\x00") + struct.pack(e + "I", 8)
    if typ == 3:
        val = struct.pack(e + "HH", value, 0)
        cnt = 1
        entry = struct.pack(e + "HHI", 0x0112, 3, cnt) + val
        extra = b""
    elif typ == 4:
        entry = struct.pack(e + "HHII", 0x0112, 4, 1, value)
        extra = b""
    else:  # RATIONAL stored after the IFD
        off = 8 + 2 + 12 + 4
        entry = struct.pack(e + "HHII", 0x0112, 5, 1, off)
        extra = struct.pack(e + "II", value * 3, 3)
    ifd = struct.pack(e + "H", 1) + entry + struct.pack(e + "I", 0)
    return b"Exif\x00\x00" + head + ifd + extra


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2)]


def png_bytes(w, h, color, depth, rows, interlace=False, before=(), after=(), plte=None, trns=None):
    """rows: h x rowbytes array of already-packed samples (no filter byte)."""
    bpp_bits = depth * {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color]
    def raw_of(sub_rows):
        return b"".join(b"\x00" + bytes(r) for r in sub_rows)
    if not interlace:
        raw = raw_of(rows)
    else:
        # unpack to per-pixel bit strings, then repack each pass
        bits = [np.unpackbits(np.frombuffer(bytes(r), np.uint8))[:w * bpp_bits] for r in rows]
        raw = b""
        for x0, y0, dx, dy in ADAM7:
            xs = list(range(x0, w, dx))
            if not xs:
                continue
            sub = []
            for y in range(y0, h, dy):
                pix = np.concatenate([bits[y][x * bpp_bits:(x + 1) * bpp_bits] for x in xs])
                sub.append(np.packbits(pix).tobytes())
            raw += raw_of(sub)
    out = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color, 0,
                                                               0, 1 if interlace else 0))
    if plte is not None:
        out += png_chunk(b"PLTE", plte)
    if trns is not None:
        out += png_chunk(b"tRNS", trns)
    for k, d in before:
        out += png_chunk(k, d)
    out += png_chunk(b"IDAT", zlib.compress(raw, 9))
    for k, d in after:
        out += png_chunk(k, d)
    return out + png_chunk(b"IEND", b"")


def pack_rows(arr, depth):
    """arr: h x w x c of sample values -> packed big-endian rows."""
    h = arr.shape[0]
    flat = arr.reshape(h, -1)
    if depth == 16:
        return [r.astype(">u2").tobytes() for r in flat]
    if depth == 8:
        return [r.astype(np.uint8).tobytes() for r in flat]
    out = []
    for r in flat:
        bits = np.unpackbits(r.astype(np.uint8)[:, None], axis=1)[:, 8 - depth:].reshape(-1)
        out.append(np.packbits(bits).tobytes())
    return out


def raw_profile(blob):
    hx = blob.hex()
    lines = "\n".join(hx[i:i + 72] for i in range(0, len(hx), 72))
    return ("\nexif\n%8d\n" % len(blob) + lines + "\n").encode()


def pngs():
    out = {}
    w, h = 13, 9
    rgb = pattern(w, h, 3, 1)
    out["rgb8.png"] = png_bytes(w, h, 2, 8, pack_rows(rgb, 8))
    out["rgb8-adam7.png"] = png_bytes(w, h, 2, 8, pack_rows(rgb, 8), interlace=True)
    out["rgba8.png"] = png_bytes(w, h, 6, 8, pack_rows(pattern(w, h, 4, 2), 8))
    out["rgb16.png"] = png_bytes(w, h, 2, 16, pack_rows(pattern(w, h, 3, 3).astype(np.uint16) * 257, 16))
    out["rgba16-adam7.png"] = png_bytes(w, h, 6, 16, pack_rows(
        pattern(w, h, 4, 4).astype(np.uint16) * 3, 16), interlace=True)
    g = pattern(w, h, 1, 5)
    out["gray8.png"] = png_bytes(w, h, 0, 8, pack_rows(g, 8))
    out["gray16.png"] = png_bytes(w, h, 0, 16, pack_rows(g.astype(np.uint16) * 2, 16))
    for d in (1, 2, 4):
        out["gray%d.png" % d] = png_bytes(w, h, 0, d, pack_rows(g >> (8 - d), d),
                                           interlace=(d == 2))
    out["ga8.png"] = png_bytes(w, h, 4, 8, pack_rows(pattern(w, h, 2, 6), 8))
    out["ga16.png"] = png_bytes(w, h, 4, 16, pack_rows(pattern(w, h, 2, 7).astype(np.uint16) * 9, 16))
    plte = bytes(pattern(16, 1, 3, 8).reshape(-1))
    idx = pattern(w, h, 1, 9) % 20  # indices past the 16-entry PLTE too
    out["pal8-trns.png"] = png_bytes(w, h, 3, 8, pack_rows(idx, 8), plte=plte, trns=b"\x00\x80")
    out["pal4.png"] = png_bytes(w, h, 3, 4, pack_rows(idx % 16, 4), plte=plte)
    out["pal1-adam7.png"] = png_bytes(w, h, 3, 1, pack_rows(idx % 2, 1), interlace=True,
                                      plte=plte[:6])
    ex6 = tiff_orientation(6)
    out["exif-before.png"] = png_bytes(w, h, 2, 8, pack_rows(rgb, 8), before=[(b"eXIf", ex6[6:])])
    out["exif-after.png"] = png_bytes(w, h, 2, 8, pack_rows(rgb, 8),
                                      after=[(b"eXIf", tiff_orientation(3, big=True)[6:])])
    out["raw-profile.png"] = png_bytes(w, h, 2, 8, pack_rows(rgb, 8), before=[
        (b"tEXt", b"Raw profile type exif\x00" + raw_profile(tiff_orientation(8, typ=4)))])
    xmp = b'<x:xmpmeta><rdf:Description tiff:Orientation="5"/></x:xmpmeta>'
    out["xmp.png"] = png_bytes(w, h, 2, 8, pack_rows(rgb, 8), after=[
        (b"iTXt", b"XML:com.adobe.xmp\x00\x00\x00\x00\x00" + xmp)])
    out["ztxt-gama.png"] = png_bytes(w, h, 0, 8, pack_rows(g, 8), before=[
        (b"gAMA", struct.pack(">I", 45455)),
        (b"zTXt", b"Comment\x00\x00" + zlib.compress(b"hello " * 20))])
    return out


def pil_bytes(img, fmt, **kw):
    b = io.BytesIO()
    img.save(b, fmt, **kw)
    return b.getvalue()


def exif_obj(o):
    e = Image.Exif()
    e[0x0112] = o
    return e


def jpegs():
    out = {}
    rgb = Image.fromarray(pattern(21, 14, 3, 10))
    out["baseline-420.jpg"] = pil_bytes(rgb, "JPEG", quality=60)
    out["progressive-444.jpg"] = pil_bytes(rgb, "JPEG", quality=50, progressive=True,
                                           subsampling=0)
    out["422-orient6.jpg"] = pil_bytes(rgb, "JPEG", quality=40, subsampling=1, exif=exif_obj(6))
    out["orient3.jpg"] = pil_bytes(rgb, "JPEG", quality=40, exif=exif_obj(3))
    out["orient2-big-endian.jpg"] = pil_bytes(rgb, "JPEG", quality=40,
                                              exif=tiff_orientation(2, big=True))
    out["gray.jpg"] = pil_bytes(rgb.convert("L"), "JPEG", quality=50)
    out["cmyk.jpg"] = pil_bytes(rgb.convert("CMYK"), "JPEG", quality=50)
    out["tall-1x40.jpg"] = pil_bytes(Image.fromarray(pattern(1, 40, 3, 11)), "JPEG", quality=50)
    return out


def gifs():
    out = {}
    p = Image.fromarray(pattern(17, 11, 1, 12)[..., 0] % 32).convert("P")
    out["plain.gif"] = pil_bytes(p, "GIF")
    out["interlaced-transparent.gif"] = pil_bytes(p, "GIF", interlace=True, transparency=3)
    f2 = Image.fromarray(pattern(17, 11, 1, 13)[..., 0] % 8).convert("P")
    out["animated.gif"] = pil_bytes(p, "GIF", save_all=True, append_images=[f2], duration=50,
                                    loop=0)
    # a frame that sticks out of a smaller logical screen, with a local colour table
    b = bytearray(pil_bytes(f2, "GIF"))
    struct.pack_into("<HH", b, 6, 9, 5)  # logical screen 9x5; the 17x11 frame overhangs it
    out["overhang.gif"] = bytes(b)
    return out


def webps():
    out = {}
    rgb = Image.fromarray(pattern(15, 10, 3, 14))
    rgba = Image.fromarray(pattern(15, 10, 4, 15))
    out["lossy.webp"] = pil_bytes(rgb, "WEBP", quality=30)
    out["lossless.webp"] = pil_bytes(rgb, "WEBP", lossless=True)
    out["alpha-exif.webp"] = pil_bytes(rgba, "WEBP", quality=30, exif=tiff_orientation(6))
    out["animated.webp"] = pil_bytes(rgb, "WEBP", save_all=True, quality=20,
                                     append_images=[rgba], duration=40)
    return out


def bmp_bytes(w, h, bits, rows, pal=None, compression=0, masks=None, hsize=40, top_down=False,
              offset=None):
    """rows: already-encoded pixel data (for RLE: the RLE stream); pal: list of BGR triples."""
    palbytes = b""
    if pal is not None:
        palbytes = b"".join(bytes(c) + (b"" if hsize == 12 else b"\x00") for c in pal)
    if hsize == 12:
        info = struct.pack("<IHHHH", 12, w, h, 1, bits)
    else:
        info = struct.pack("<IiiHHIIiiII", hsize, w, -h if top_down else h, 1, bits, compression,
                           len(rows), 2835, 2835, len(pal) if pal else 0, 0)
        if hsize >= 52 and masks:
            info += struct.pack("<4I", *(list(masks) + [0] * (4 - len(masks))))
        info += b"\x00" * (hsize - len(info))
    extra = struct.pack("<3I", *masks) if masks and hsize == 40 else b""
    off = 14 + len(info) + len(extra) + len(palbytes) if offset is None else offset
    data = info + extra + palbytes + rows
    return b"BM" + struct.pack("<IHHI", 14 + len(data), 0, 0, off) + data


def bmp_rows(arr, bits):
    """bottom-up, padded to 4 bytes; arr h x w (indices) or h x w x c (BGR(A) bytes already)."""
    out = b""
    for r in arr[::-1]:
        if bits < 8:
            bitsarr = np.unpackbits(r.astype(np.uint8)[:, None], axis=1)[:, 8 - bits:].reshape(-1)
            b = np.packbits(bitsarr).tobytes()
        else:
            b = r.astype(np.uint8).tobytes()
        out += b + b"\x00" * (-len(b) % 4)
    return out


def rle8(idx):
    out = b""
    for r in idx[::-1]:
        x = 0
        while x < len(r):
            n = 1
            while x + n < len(r) and r[x + n] == r[x] and n < 255:
                n += 1
            out += bytes([n, int(r[x])])
            x += n
        out += b"\x00\x00"
    return out + b"\x00\x01"


def bmps():
    out = {}
    w, h = 11, 7
    pal16 = [tuple(int(v) for v in c) for c in pattern(16, 1, 3, 16)[0]]
    idx = pattern(w, h, 1, 17) % 16
    out["pal8.bmp"] = bmp_bytes(w, h, 8, bmp_rows(idx, 8), pal=pal16)
    out["pal4.bmp"] = bmp_bytes(w, h, 4, bmp_rows(idx, 4), pal=pal16)
    out["pal1.bmp"] = bmp_bytes(w, h, 1, bmp_rows(idx % 2, 1), pal=[(0, 0, 200), (30, 255, 0)])
    out["bw1.bmp"] = bmp_bytes(w, h, 1, bmp_rows(idx % 2, 1), pal=[(0, 0, 0), (255, 255, 255)])
    out["gray-ramp8.bmp"] = bmp_bytes(w, h, 8, bmp_rows(idx, 8),
                                      pal=[(i, i, i) for i in range(256)])
    out["rle8.bmp"] = bmp_bytes(w, h, 8, rle8(idx), pal=pal16, compression=1)
    # RLE4: an encoded run, an absolute run, a delta, end of line, end of bitmap
    rle4 = (b"\x05\x12" + b"\x00\x04\x34\x56" + b"\x00\x00" + b"\x03\x78" + b"\x00\x02\x01\x01"
            b"\x02\x00" + b"\x00\x00" + b"\x0b\x9a\x00\x00" * 5 + b"\x00\x01")
    out["rle4.bmp"] = bmp_bytes(w, h, 4, rle4, pal=pal16, compression=2)
    bgr = pattern(w, h, 3, 18)
    out["bgr24.bmp"] = bmp_bytes(w, h, 24, bmp_rows(bgr, 24))
    out["bgr24-topdown.bmp"] = bmp_bytes(w, h, 24, bmp_rows(bgr[::-1], 24), top_down=True)
    out["os2.bmp"] = bmp_bytes(w, h, 24, bmp_rows(bgr, 24), hsize=12)
    v = pattern(w, h, 2, 19).astype(np.uint16)
    px = (v[..., 0].astype(np.uint16) << 8 | v[..., 1]).astype("<u2")
    out["rgb555.bmp"] = bmp_bytes(w, h, 16, bmp_rows(px.view(np.uint8).reshape(h, w, 2), 16))
    out["rgb565-bitfields.bmp"] = bmp_bytes(w, h, 16, bmp_rows(px.view(np.uint8).reshape(h, w, 2), 16),
                                            compression=3, masks=(0xF800, 0x7E0, 0x1F))
    bgra = pattern(w, h, 4, 20)
    out["bgrx32.bmp"] = bmp_bytes(w, h, 32, bmp_rows(bgra, 32))
    out["rgba32-v5.bmp"] = bmp_bytes(w, h, 32, bmp_rows(bgra, 32), compression=3, hsize=124,
                                     masks=(0xFF, 0xFF00, 0xFF0000, 0xFF000000))
    return out


def tiffs():
    """TIFF seeds: Pillow's writer for the modes and compressions it has, the tests' TIFF writer
    (tests/image/pillow_ref.make_tiff) for tiles, 2/4-bit, big-endian, extra samples, ..."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "image"))
    import pillow_ref as ref
    w, h = 21, 13
    rgb = pattern(w, h, 3, 30)
    im = Image.fromarray(rgb.astype(np.uint8))
    out = {}
    pil = {"RGB": im, "L": im.convert("L"), "1": im.convert("1"), "CMYK": im.convert("CMYK"),
           "P": im.convert("P", palette=Image.ADAPTIVE, colors=16),
           "RGBA": Image.fromarray(pattern(w, h, 4, 31).astype(np.uint8), "RGBA")}
    for mode, comp in (("RGB", "raw"), ("RGB", "tiff_lzw"), ("RGB", "jpeg"), ("L", "packbits"),
                       ("1", "group4"), ("1", "group3"), ("CMYK", "tiff_adobe_deflate"),
                       ("P", "tiff_lzw"), ("RGBA", "tiff_deflate")):
        out[f"{mode.lower()}-{comp}.tif"] = pil_bytes(pil[mode], "TIFF", compression=comp)
    out["ycbcr-jpeg.tif"] = pil_bytes(im.convert("YCbCr"), "TIFF", compression="jpeg")
    out["ycbcr-raw.tif"] = pil_bytes(im.convert("YCbCr"), "TIFF")
    out["multipage.tif"] = pil_bytes(im, "TIFF", save_all=True, append_images=[pil["L"]])
    g4 = pattern(w, h, 1, 32)[:, :, 0]
    out["rgb-tiles-deflate-mm.tif"] = ref.make_tiff(rgb, 8, 2, big_endian=True, tile=(16, 16),
                                                    compression=8)
    out["rgb-strips-packbits.tif"] = ref.make_tiff(rgb, 8, 2, rows_per_strip=2, compression=32773)
    out["gray4-white-fill2.tif"] = ref.make_tiff(g4 % 16, 4, 0, fill_order=2)
    out["gray2-tiles.tif"] = ref.make_tiff(g4 % 4, 2, 1, tile=(16, 16))
    out["palette4.tif"] = ref.make_tiff(g4 % 16, 4, 3, colormap=np.arange(48) * 1365)
    out["gray16-mm.tif"] = ref.make_tiff(g4.astype(np.uint32) * 300, 16, 1, big_endian=True)
    out["rgba-assoc.tif"] = ref.make_tiff(pattern(w, h, 4, 33), 8, 2, extra_samples=(1,))
    out["rgb16.tif"] = ref.make_tiff(rgb.astype(np.uint32) * 257, 16, 2)
    out["cmyk-extra.tif"] = ref.make_tiff(pattern(w, h, 5, 34), 8, 5, extra_samples=(0,))
    out["orient6-tiles.tif"] = ref.make_tiff(rgb, 8, 2, orientation=6, tile=(16, 16))
    out["orient3.tif"] = ref.make_tiff(rgb, 8, 2, orientation=3)
    out["planar2.tif"] = ref.make_tiff(rgb, 8, 2, planar=2)
    out["float.tif"] = pil_bytes(Image.fromarray(g4.astype(np.float32)), "TIFF")
    return out


def images():
    c = os.path.join(HERE, "corpus", "image")
    fresh(c)
    allimgs = {}
    for group in (pngs(), jpegs(), gifs(), webps(), bmps(), tiffs()):
        allimgs.update(group)
    for name, data in allimgs.items():
        write(os.path.join(c, name), data)
    e = os.path.join(HERE, "corpus", "encode")
    fresh(e)
    for name in ("rgb8-adam7.png", "exif-before.png", "422-orient6.jpg", "orient3.jpg",
                 "tall-1x40.jpg", "interlaced-transparent.gif", "lossy.webp", "rle8.bmp",
                 "rgb-tiles-deflate-mm.tif", "orient6-tiles.tif"):
        write(os.path.join(e, name), allimgs[name])


def serve_requests(png):
    """Raw HTTP/1.1 requests for fuzz_serve (tools/service's handling)."""
    c = os.path.join(HERE, "corpus", "serve")
    fresh(c)
    host = b"Host: 127.0.0.1\r\n"

    def post(query=b"", headers=b"", body=png, chunked=False):
        if chunked:
            half = len(body) // 2
            payload = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (body[:half], body[half:]))
            payload += b"0\r\n\r\n"
            headers += b"Transfer-Encoding: chunked\r\n"
        else:
            payload = body
            headers += b"Content-Length: %d\r\n" % len(body)
        # an image type: a POST without one is refused 415 before its body (core/doors.c)
        if b"Content-Type" not in headers:
            headers += b"Content-Type: image/png\r\n"
        return b"POST /v1/encode" + query + b" HTTP/1.1\r\n" + host + headers + b"\r\n" + payload

    reqs = {
        "health.http": b"GET /health HTTP/1.1\r\n" + host + b"\r\n",
        "info.http": b"GET /v1/info HTTP/1.1\r\n" + host + b"\r\n",
        "metrics.http": b"GET /metrics HTTP/1.0\r\n\r\n",
        "not-found.http": b"GET /v2/nothing HTTP/1.1\r\n" + host + b"\r\n",
        "wrong-method.http": b"DELETE /health HTTP/1.1\r\n" + host + b"\r\n",
        "get-encode.http": b"GET /v1/encode HTTP/1.1\r\n" + host + b"\r\n",
        "encode-json.http": post(),
        "encode-npy-bf16.http": post(b"?tokens=70&dtype=bf16&exif=0&format=npy"),
        "encode-accept-st.http": post(headers=b"Accept: application/x-safetensors\r\n"),
        "encode-accept-bad.http": post(headers=b"Accept: image/png\r\n"),
        "encode-chunked.http": post(b"?exif=1", chunked=True),
        "encode-bad-tokens.http": post(b"?tokens=71"),
        "encode-bad-dtype.http": post(b"?dtype=f64&format=xml"),
        "encode-empty.http": post(body=b""),
        "encode-not-image.http": post(body=b"GIF89a this is not an image at all"),
        "encode-huge-length.http": b"POST /v1/encode HTTP/1.1\r\n" + host +
                                   b"Content-Type: image/jpeg\r\nContent-Length: 99999999999\r\n\r\nxx",
        "pipelined.http": b"GET /health HTTP/1.1\r\n" + host + b"\r\n" + post() +
                          b"GET /metrics HTTP/1.1\r\n" + host + b"Connection: close\r\n\r\n",
    }
    for name, data in reqs.items():
        write(os.path.join(c, name), data)


def gguf_seeds(gen, tmp):
    """corpus/gguf: the micro checkpoint (data/micro) as mmproj GGUF files in every outtype (its
    rows of 8 fall back to F16 in q8_0), a micro32 tower whose rows are whole Q8_0 blocks, a
    micro unified (12B-style) embedder, an audio decoy, and a few broken files."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import gguf_from_checkpoint as GG
    c = os.path.join(HERE, "corpus", "gguf")
    fresh(c)

    def conv(ck, outtype, audio=False):
        tensors, vc, T, unified, _ = GG.convert(ck, outtype)
        kv = GG.metadata(vc, T, unified, GG.FTYPE[outtype], "micro")
        if audio:
            GG.audio_decoy(kv, tensors)
        p = os.path.join(tmp, "x.gguf")
        GG.write_standalone(p, kv, tensors)
        return read(p)

    base = os.path.join(HERE, "data", "micro")
    for t in ("f32", "f16", "bf16", "q8_0"):
        write(os.path.join(c, f"micro-{t}.gguf"), conv(base, t))
    gen.CONFIGS["micro32"] = dict(D=32, I=32, layers=1, H=2, Hkv=2, d=16, P=4, T=32, clipped=False,
                                  standardize=False, rope_theta=100.0)
    m32 = os.path.join(tmp, "micro32")
    assert gen.main([m32, "--config", "micro32", "--seed", "1", "--no-decoys"]) == 0
    write(os.path.join(c, "micro32-q8_0.gguf"), conv(m32, "q8_0"))
    gen.UNIFIED_CONFIGS["micro-unified"] = dict(E=8, P=4, T=8)
    mu = os.path.join(tmp, "micro-unified")
    assert gen.main([mu, "--config", "micro-unified", "--seed", "1", "--no-decoys"]) == 0
    write(os.path.join(c, "micro-unified-bf16.gguf"), conv(mu, "bf16"))
    write(os.path.join(c, "micro-unified-q8_0.gguf"), conv(mu, "q8_0"))
    good = conv(base, "bf16", audio=True)
    write(os.path.join(c, "micro-audio.gguf"), good)
    write(os.path.join(c, "truncated.gguf"), good[:len(good) - 40])
    write(os.path.join(c, "header-only.gguf"), good[:600])
    write(os.path.join(c, "version1.gguf"), good[:4] + struct.pack("<I", 1) + good[8:])
    write(os.path.join(c, "empty.gguf"), b"GGUF" + struct.pack("<IQQ", 3, 0, 0))


# ---------------------------------------------------------------------------------------------
# the Hub client (fuzz_hub_listing, fuzz_hub_header)

def hub_seeds():
    """API listings (good ones, and each way one lies or escapes the folder) and safetensors files
    as a vision-only pull sees them (data/micro's in both namings, with language-model tensors
    around the vision ones, and each way a header can be wrong)."""
    import hashlib
    c = os.path.join(HERE, "corpus", "hub_listing")
    fresh(c)
    sha = hashlib.sha1(b"commit").hexdigest()

    def sib(name, size=100, lfs=False, **kw):
        e = {"rfilename": name, "size": size, "blobId": hashlib.sha1(name.encode()).hexdigest()}
        if lfs:
            e["lfs"] = {"sha256": hashlib.sha256(name.encode()).hexdigest(), "size": size,
                        "pointerSize": 134}
        e.update(kw)
        return e

    def listing(name, sibs, commit=sha, **kw):
        o = {"id": "org/name", "sha": commit, "siblings": sibs}
        o.update(kw)
        write(os.path.join(c, name), json.dumps(o, separators=(",", ":")).encode())

    ck = [sib(".gitattributes", 1570), sib("README.md", 5000), sib("config.json", 4700),
          sib("chat_template.jinja", 12000), sib("tokenizer.json", 33000000, lfs=True),
          sib("model-00001-of-00002.safetensors", 4990000000, lfs=True),
          sib("model-00002-of-00002.safetensors", 3100000000, lfs=True),
          sib("model.safetensors.index.json", 90000)]
    listing("checkpoint.json", ck)
    listing("gguf.json", [sib("README.md"), sib("gemma-4-E4B-it-Q4_K_M.gguf", 5 << 30, lfs=True),
                          sib("gemma-4-E4B-it-Q8_0.gguf", 8 << 30, lfs=True),
                          sib("mmproj-gemma-4-E4B-it-f16.gguf", 900 << 20, lfs=True),
                          sib("sub/dir/file.txt", 3)])
    listing("empty.json", [])
    for i, bad in enumerate(["../evil", "/abs/evil", "a/../../evil", "a//b", "a\\b", "C:evil",
                             "a/./b", "", "tab\tname", "a/"]):
        listing("name-%d.json" % i, ck[:2] + [sib(bad)])
    listing("twice.json", ck[:3] + [sib("config.json")])
    listing("file-and-folder.json", [sib("a"), sib("a/b"), sib("a-b")])
    listing("size-negative.json", [sib("a", -1)])
    listing("size-fraction.json", [sib("a", 1.5)])
    listing("size-huge.json", [sib("a", 1e300)])
    listing("size-2p53.json", [sib("a", 9007199254740993)])
    listing("size-string.json", [sib("a", "100")])
    listing("lfs-short-sha.json", [dict(sib("a", lfs=True), lfs={"sha256": "ab", "size": 1})])
    listing("no-blobid.json", [{"rfilename": "a", "size": 1}])
    listing("commit-short.json", ck, commit="abc")
    listing("commit-upper.json", ck, commit=sha.upper())
    write(os.path.join(c, "not-object.json"), b'[{"sha":"%s"}]' % sha.encode())

    c = os.path.join(HERE, "corpus", "hub_header")
    fresh(c)
    good = read(os.path.join(HERE, "data", "micro", "model.safetensors"))
    header, body = st_parts(good)
    write(os.path.join(c, "micro.safetensors"), good)
    h = {(k[6:] if k.startswith("model.") else k): v for k, v in header.items()}
    write(os.path.join(c, "micro-no-model-prefix.safetensors"), st_join(h, body))
    # language-model tensors before, between and after the vision ones (as in a real shard)
    h = json.loads(json.dumps(header))
    n = len(body)
    h["model.language_model.embed_tokens.weight"] = {"dtype": "BF16", "shape": [8, 4],
                                                     "data_offsets": [n, n + 64]}
    h["model.language_model.norm.weight"] = {"dtype": "F32", "shape": [4],
                                             "data_offsets": [n + 64, n + 80]}
    for v in h.values():
        if isinstance(v, dict) and "data_offsets" in v and v["data_offsets"][0] < n:
            v["data_offsets"] = [v["data_offsets"][0] + 16, v["data_offsets"][1] + 16]
    h["model.audio_tower.x"] = {"dtype": "U8", "shape": [16], "data_offsets": [0, 16]}
    write(os.path.join(c, "mixed.safetensors"), st_join(h, bytes(range(16)) + body + bytes(80)))
    names = [k for k in header if k != "__metadata__"]
    h = json.loads(json.dumps(header))
    a0, b0 = h[names[0]]["data_offsets"]
    a1, b1 = h[names[1]]["data_offsets"]
    h[names[1]]["data_offsets"] = [b0 - 2, b0 - 2 + b1 - a1]  # the right size, 2 bytes shared
    write(os.path.join(c, "overlap.safetensors"), st_join(h, body))
    h = json.loads(json.dumps(header))
    h[names[3]]["data_offsets"] = [n, n + 2]
    write(os.path.join(c, "out-of-range.safetensors"), st_join(h, body))
    h = json.loads(json.dumps(header))
    h[names[2]]["shape"] = [3, 1 << 40]
    write(os.path.join(c, "bad-shape.safetensors"), st_join(h, body))
    h = json.loads(json.dumps(header))
    h[names[0]]["data_offsets"] = [0.5, h[names[0]]["data_offsets"][1] + 0.5]
    write(os.path.join(c, "fraction.safetensors"), st_join(h, body))
    h = json.loads(json.dumps(header))
    h["__metadata__"] = 7
    write(os.path.join(c, "metadata-number.safetensors"), st_join(h, body))
    hb = json.dumps(header, separators=(",", ":")).encode()
    k = json.dumps(names[0]).encode()
    dup = hb[:-1] + b"," + k + b":" + json.dumps(header[names[0]]).encode() + b"}"
    dup += b" " * (-len(dup) % 8)
    write(os.path.join(c, "name-twice.safetensors"), struct.pack("<Q", len(dup)) + dup + body)
    write(os.path.join(c, "length-beyond.safetensors"), struct.pack("<Q", len(good)) + good[8:])
    write(os.path.join(c, "length-huge.safetensors"), b"\xff" * 8 + good[8:64])
    write(os.path.join(c, "short.safetensors"), good[:5])
    write(os.path.join(c, "truncated.safetensors"), good[:len(good) - 40])
    write(os.path.join(c, "empty-header.safetensors"), struct.pack("<Q", 8) + b"{}      ")



def main():
    import tempfile
    gen = load_gen()
    with tempfile.TemporaryDirectory() as tmp:
        checkpoints(gen, tmp)
        gguf_seeds(gen, tmp)
    images()
    serve_requests(open(os.path.join(HERE, "corpus", "encode", "rgb8-adam7.png"), "rb").read())
    hub_seeds()
    total = 0
    for d, _, files in os.walk(HERE):
        if "/corpus" in d or "/data" in d:
            total += sum(os.path.getsize(os.path.join(d, f)) for f in files)
    print("make_seeds: wrote fuzz/corpus and fuzz/data (%d bytes)" % total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
