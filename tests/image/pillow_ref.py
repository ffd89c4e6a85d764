"""pillow_ref.py - the reference side of the image tests, plus tiny encoders for fixtures.

Reference = what transformers does with the Pillow backend, run with Debian's Pillow 9.4:
  load_image: Image.open -> ImageOps.exif_transpose -> convert("RGB")
  Gemma4ImageProcessorPil: get_aspect_ratio_preserving_size -> resize((tw, th), BICUBIC)
  -> rescale (uint8 -> float64 * (1/255) -> float32) -> convert_image_to_patches.
transformers itself is not installed here, so target_size() restates its Python code line by
line (same float operations in the same order).

The encoders (make_png, make_gif, make_bmp) write the variants Pillow cannot write itself:
16-bit colour PNG, Adam7 interlacing, all five PNG row filters, chunks after IDAT, GIF frame
offsets and canvases larger than the screen, BMP bit fields, 16-bit, RLE, OS/2 headers.
Only the standard library, numpy and Pillow are used.
"""
import math
import struct
import warnings
import zlib

import numpy as np
from PIL import Image, ImageOps

warnings.simplefilter("ignore")  # Pillow warns about palette transparency etc.


# --------------------------------------------------------------------------------------------
# transformers' Gemma 4 preprocessing

def target_size(height, width, max_soft_tokens=280, patch_size=16, pooling_kernel_size=3):
    """transformers get_aspect_ratio_preserving_size (image_processing_pil_gemma4.py)."""
    max_patches = max_soft_tokens * pooling_kernel_size**2
    target_px = max_patches * (patch_size**2)
    total_px = height * width
    factor = math.sqrt(target_px / total_px)
    ideal_height = factor * height
    ideal_width = factor * width
    side_length = pooling_kernel_size * patch_size
    target_height = int(math.floor(ideal_height / side_length)) * side_length
    target_width = int(math.floor(ideal_width / side_length)) * side_length
    if target_height == 0 and target_width == 0:
        raise ValueError("empty target")
    max_side_length = (max_patches // pooling_kernel_size**2) * side_length
    if target_height == 0:
        target_height = side_length
        target_width = min(int(math.floor(width / height)) * side_length, max_side_length)
    elif target_width == 0:
        target_width = side_length
        target_height = min(int(math.floor(height / width)) * side_length, max_side_length)
    if target_height * target_width > target_px:
        raise ValueError("target too large")
    return target_height, target_width


def vertical_first(w, h, tw, th, order):
    """Whether Pillow `order` ("9": 9.0-12.1, "12.2", "13": >= 13.0) runs the vertical pass first
    (docs/PREPROCESSING.md §6.4)."""
    if order == "12.2":
        return h > 100 * w and th < h
    if order == "13":
        return h - th > 0 and h - th > 2 * (w - tw)
    return False


def pil_resize(a, tw, th, order="9"):
    """Pillow BICUBIC resize of a uint8 HxWx3 array in the pass order of Pillow `order`; the
    vertical-first order is emulated with two box resizes (a pure vertical, then a pure
    horizontal pass: docs/PREPROCESSING.md §6.4)."""
    h, w = a.shape[:2]
    im = Image.fromarray(a, "RGB")
    if vertical_first(w, h, tw, th, order):
        im = im.resize((w, th), Image.BICUBIC, box=(0, 0, w, h))
        im = im.resize((tw, th), Image.BICUBIC, box=(0, 0, w, th))
    else:
        im = im.resize((tw, th), Image.BICUBIC)
    return np.asarray(im)


def load_image(path, apply_exif=True):
    """transformers.image_utils.load_image for a path (exif_transpose switchable)."""
    im = Image.open(path)
    if apply_exif:
        im = ImageOps.exif_transpose(im)
    return np.asarray(im.convert("RGB"))


def preprocess(path, tokens=280, apply_exif=True, order="9"):
    """The resized uint8 image the PIL backend feeds to rescale/patchify."""
    a = load_image(path, apply_exif)
    h, w = a.shape[:2]
    th, tw = target_size(h, w, tokens)
    if (th, tw) != (h, w):
        a = pil_resize(a, tw, th, order)
    return a


def preprocess_array(a, tokens=280, order="9"):
    """preprocess() for an image already decoded (uint8 HxWx3)."""
    a = np.asarray(a, np.uint8)
    h, w = a.shape[:2]
    th, tw = target_size(h, w, tokens)
    if (th, tw) != (h, w):
        a = pil_resize(a, tw, th, order)
    return a


RESCALE_LUT = (np.arange(256).astype(np.float64) * (1 / 255)).astype(np.float32)


def patchify(a, patch=16, fast=False):
    """rescale + convert_image_to_patches + positions, as transformers computes them. fast: the
    same elementwise rescale through a 256-entry table (identical values, less time)."""
    if fast:
        x = RESCALE_LUT[a]
    else:
        x = (a.astype(np.float64) * (1 / 255)).astype(np.float32)
    x = x.transpose(2, 0, 1)  # HWC -> CHW, as the processor works channels-first
    c, h, w = x.shape
    ph, pw = h // patch, w // patch
    p = x.reshape(c, ph, patch, pw, patch).transpose(1, 3, 2, 4, 0).reshape(ph * pw, -1)
    gx, gy = np.meshgrid(np.arange(pw), np.arange(ph), indexing="xy")
    pos = np.stack([gx, gy], axis=-1).reshape(-1, 2)
    return p, pos


# --------------------------------------------------------------------------------------------
# content generators

def content(kind, h, w, rng):
    if kind == "noise":
        return rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    y, x = np.mgrid[0:h, 0:w]
    if kind == "gradient":
        a = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1),
                      (x + y) * 255 // max(w + h - 2, 1)], -1)
        return a.astype(np.uint8)
    if kind == "edges":
        bx = max(1, w // int(rng.integers(1, 9)))
        by = max(1, h // int(rng.integers(1, 9)))
        chk = ((x // bx + y // by) % 2).astype(np.uint8) * 255
        a = np.stack([chk, 255 - chk, chk], -1)
        a[:, ::7, 1] = 255
        return a
    if kind == "photo":
        g = content("gradient", h, w, rng).astype(np.int16)
        g = g + rng.integers(-40, 41, (h, w, 3))
        return np.clip(g, 0, 255).astype(np.uint8)
    if kind == "smooth":
        n = rng.integers(0, 256, (h, w, 3)).astype(np.float64)
        for _ in range(2):  # box blur, separable, edge-clamped
            for ax in (0, 1):
                k = 5
                pad = [(0, 0)] * 3
                pad[ax] = (k // 2, k // 2)
                p = np.pad(n, pad, mode="edge")
                c = np.cumsum(p, axis=ax)
                c = np.concatenate([np.zeros_like(np.take(c, [0], axis=ax)), c], axis=ax)
                n = (np.take(c, range(k, c.shape[ax]), axis=ax)
                     - np.take(c, range(0, c.shape[ax] - k), axis=ax)) / k
        return np.clip(np.rint(n), 0, 255).astype(np.uint8)
    raise ValueError(kind)


def asymmetric(h, w):
    """A small image whose every orientation differs: unique colour per pixel."""
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1),
                     ((x * 7 + y * 13) % 256)], -1).astype(np.uint8)


# --------------------------------------------------------------------------------------------
# PNG encoder (any colour type / depth, Adam7, all filters, arbitrary extra chunks)

def _chunk(typ, data):
    return struct.pack(">I", len(data)) + typ + data + struct.pack(">I", zlib.crc32(typ + data))


def _pack_rows(samples, depth):
    """samples: (h, w, ch) ints < 2**depth -> list of packed row bytes."""
    h, w, ch = samples.shape
    rows = []
    for r in samples:
        flat = r.reshape(-1).astype(np.uint32)
        if depth == 16:
            rows.append(flat.astype(">u2").tobytes())
        elif depth == 8:
            rows.append(flat.astype(np.uint8).tobytes())
        else:
            per = 8 // depth
            n = len(flat)
            padded = np.zeros(((n + per - 1) // per) * per, np.uint32)
            padded[:n] = flat
            padded = padded.reshape(-1, per)
            byte = np.zeros(len(padded), np.uint32)
            for i in range(per):
                byte |= padded[:, i] << (8 - depth * (i + 1))
            rows.append(byte.astype(np.uint8).tobytes())
    return rows


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def _filter(rows, bpp, first_filter):
    out = bytearray()
    prev = bytes(len(rows[0])) if rows else b""
    for i, row in enumerate(rows):
        f = (first_filter + i) % 5
        res = bytearray(len(row))
        for x in range(len(row)):
            a = row[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            pred = (0, a, b, (a + b) // 2, _paeth(a, b, c))[f]
            res[x] = (row[x] - pred) & 255
        out.append(f)
        out += res
        prev = row
    return bytes(out)


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2)]


def make_png(samples, depth, color_type, interlace=False, plte=None, trns=None, before=(),
             after=(), filters=True):
    """samples: (h, w, ch) array. before/after: (type, data) chunks placed around IDAT."""
    samples = np.asarray(samples)
    if samples.ndim == 2:
        samples = samples[:, :, None]
    h, w, ch = samples.shape
    bpp = max(1, ch * depth // 8)
    if interlace:
        raw = b""
        for k, (x0, y0, dx, dy) in enumerate(ADAM7):
            sub = samples[y0::dy, x0::dx]
            if sub.shape[0] and sub.shape[1]:
                rows = _pack_rows(sub, depth)
                raw += _filter(rows, bpp, k if filters else 0) if filters else \
                    b"".join(b"\0" + r for r in rows)
    else:
        rows = _pack_rows(samples, depth)
        raw = _filter(rows, bpp, 0) if filters else b"".join(b"\0" + r for r in rows)
    out = b"\x89PNG\r\n\x1a\n"
    out += _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0,
                                       1 if interlace else 0))
    for t, d in before:
        out += _chunk(t, d)
    if plte is not None:
        out += _chunk(b"PLTE", bytes(np.asarray(plte, np.uint8).reshape(-1)))
    if trns is not None:
        out += _chunk(b"tRNS", trns)
    z = zlib.compress(raw, 6)
    half = len(z) // 2  # two IDAT chunks, to exercise chunk boundaries
    out += _chunk(b"IDAT", z[:half]) + _chunk(b"IDAT", z[half:])
    for t, d in after:
        out += _chunk(t, d)
    return out + _chunk(b"IEND", b"")


def itxt(key, text, compressed=False):
    t = text.encode("utf-8")
    if compressed:
        t = zlib.compress(t)
    return (b"iTXt", key.encode("latin-1") + b"\0" + bytes([1 if compressed else 0, 0]) +
            b"\0\0" + t)


def text_chunk(key, text):
    return (b"tEXt", key.encode("latin-1") + b"\0" + text.encode("latin-1"))


# --------------------------------------------------------------------------------------------
# TIFF/EXIF blobs

def exif_blob(entries, big_endian=False, ifd_offset=8, extra=b"", prefix=True):
    """entries: list of (tag, type, count, value_bytes_or_offset). value: 4 raw bytes (inline)
    or an int offset. Returns b"Exif\\0\\0" + TIFF (or TIFF only)."""
    e = ">" if big_endian else "<"
    head = (b"MM\0*" if big_endian else b"II*\0") + struct.pack(e + "I", ifd_offset)
    body = bytearray(head)
    body += bytes(max(0, ifd_offset - len(body)))
    body += struct.pack(e + "H", len(entries))
    for tag, typ, count, val in entries:
        if isinstance(val, int):
            val = struct.pack(e + "I", val)
        body += struct.pack(e + "HHI", tag, typ, count) + val.ljust(4, b"\0")[:4]
    body += struct.pack(e + "I", 0) + extra
    return (b"Exif\0\0" if prefix else b"") + bytes(body)


def orientation_exif(value, big_endian=False):
    e = ">" if big_endian else "<"
    return exif_blob([(0x0112, 3, 1, struct.pack(e + "H", value))], big_endian)


# --------------------------------------------------------------------------------------------
# GIF encoder ("uncompressed" LZW: a clear code before the dictionary could grow)

def _lzw_uncompressed(indices, min_code_size=8):
    clear, eoi = 1 << min_code_size, (1 << min_code_size) + 1
    width = min_code_size + 1
    codes = []
    run = (1 << min_code_size) - 2
    for i, v in enumerate(indices):
        if i % run == 0:
            codes.append(clear)
        codes.append(int(v))
    codes.append(eoi)
    bits, nbits, out = 0, 0, bytearray()
    for c in codes:
        bits |= c << nbits
        nbits += width
        while nbits >= 8:
            out.append(bits & 255)
            bits >>= 8
            nbits -= 8
    if nbits:
        out.append(bits & 255)
    blocks = bytearray([min_code_size])
    for i in range(0, len(out), 255):
        blk = out[i:i + 255]
        blocks += bytes([len(blk)]) + blk
    return bytes(blocks + b"\0")


def _color_table(pal):
    pal = np.asarray(pal, np.uint8).reshape(-1, 3)
    bits = max(1, math.ceil(math.log2(max(len(pal), 2))))
    table = np.zeros((1 << bits, 3), np.uint8)
    table[:len(pal)] = pal
    return bits, table.tobytes()


def make_gif(screen_w, screen_h, frames, global_pal=None, background=0, pre_ext=()):
    """frames: list of dicts: idx (h, w) uint8, left, top, local_pal, interlace, transparency,
    truncate_lzw (bytes to drop), pixels (encode only that many). pre_ext: raw extension bytes before the first frame."""
    out = bytearray(b"GIF89a")
    flags = 0
    gtable = b""
    if global_pal is not None:
        bits, gtable = _color_table(global_pal)
        flags = 0x80 | ((bits - 1) << 4) | (bits - 1)
    out += struct.pack("<HHBBB", screen_w, screen_h, flags, background, 0) + gtable
    for e in pre_ext:
        out += e
    for f in frames:
        if f.get("transparency") is not None:
            out += b"\x21\xf9\x04" + bytes([1]) + b"\0\0" + bytes([f["transparency"]]) + b"\0"
        idx = np.asarray(f["idx"], np.uint8)
        h, w = idx.shape
        lflags, ltable = 0, b""
        if f.get("local_pal") is not None:
            bits, ltable = _color_table(f["local_pal"])
            lflags = 0x80 | (bits - 1)
        rows = list(range(h))
        if f.get("interlace"):
            lflags |= 0x40
            rows = (list(range(0, h, 8)) + list(range(4, h, 8)) + list(range(2, h, 4)) +
                    list(range(1, h, 2)))
        out += b"," + struct.pack("<HHHHB", f.get("left", 0), f.get("top", 0), w, h, lflags)
        out += ltable
        data = _lzw_uncompressed(idx[rows].reshape(-1)[:f.get("pixels")])
        if f.get("truncate_lzw"):
            data = data[:-f["truncate_lzw"]]
            out += data
            return bytes(out)
        out += data
    return bytes(out + b";")


# --------------------------------------------------------------------------------------------
# BMP encoder

def make_bmp(w, h, bits, rows_bytes=None, palette=None, compression=0, header=40, masks=None,
             top_down=False, pixel_offset=None, colors=None, rle=None, pal_entry=4):
    """rows_bytes: list of h packed rows top to bottom (unpadded; padded here). rle: raw RLE
    byte stream (then rows_bytes is ignored). palette: list of (r, g, b)."""
    pal = b""
    if palette is not None:
        for r, g, b in palette:
            pal += bytes([b, g, r]) + (b"\0" if pal_entry == 4 else b"")
    if rle is not None:
        pix = rle
    else:
        stride = ((w * bits + 31) >> 3) & ~3
        order = rows_bytes if top_down else rows_bytes[::-1]
        pix = b"".join(r.ljust(stride, b"\0")[:stride] for r in order)
    if header == 12:
        info = struct.pack("<IHHHH", 12, w, h, 1, bits)
    else:
        hh = (2**32 - h) if top_down else h
        info = struct.pack("<IiIHHIIiiII", header, w, hh, 1, bits, compression, len(pix), 2835,
                           2835, colors if colors is not None else
                           (len(palette) if palette is not None else 0), 0)
        if header > 40:
            m = list(masks or (0, 0, 0, 0)) + [0] * 4
            info += struct.pack("<IIII", *m[:4])
            info += bytes(header - len(info))
        elif compression == 3 and masks:
            info += struct.pack("<III", *masks[:3])
    off = 14 + len(info) + len(pal) if pixel_offset is None else pixel_offset
    fh = b"BM" + struct.pack("<IHHI", 14 + len(info) + len(pal) + len(pix), 0, 0, off)
    return fh + info + pal + pix


# --------------------------------------------------------------------------------------------
# TIFF encoder (what Pillow cannot write: tiles, 2/4-bit, MinIsWhite, big-endian, FillOrder 2,
# associated alpha, extra samples, 16-bit colour, planar configuration 2, other sample formats)

def _packbits(data):
    out = bytearray()
    for i in range(0, len(data), 128):  # literal runs only: valid, if not small
        chunk = data[i:i + 128]
        out.append(len(chunk) - 1)
        out += chunk
    return bytes(out)


def _tiff_rows(samples, bps, big_endian):
    """(h, w, spp) ints -> list of packed rows (bytes); 16-bit in the file's byte order."""
    samples = np.asarray(samples)
    if bps == 16:
        return [r.reshape(-1).astype(">u2" if big_endian else "<u2").tobytes() for r in samples]
    if bps == 32:
        return [r.reshape(-1).astype(">u4" if big_endian else "<u4").tobytes() for r in samples]
    return _pack_rows(samples, bps)


def make_tiff(samples, bps, photometric, big_endian=False, tile=None, rows_per_strip=None,
              compression=1, extra_samples=(), colormap=None, orientation=None, fill_order=None,
              sample_format=None, planar=None, extra_tags=(), pages=1):
    """samples: (h, w, spp) array of sample values. tile: (tw, th) multiples of 16.
    compression: 1 none, 8 deflate (zlib), 32773 PackBits. colormap: 3 x 2**bps uint16 values
    (R..., G..., B...). FillOrder 2 reverses the bits of every stored byte. extra_tags: (tag,
    type, values) entries. pages: that many copies of the directory (a multi-page file; pages
    after the first are the image inverted)."""
    samples = np.asarray(samples)
    if samples.ndim == 2:
        samples = samples[:, :, None]
    h, w, spp = samples.shape
    e = ">" if big_endian else "<"

    def blocks(s):
        if planar == 2:
            planes = [s[:, :, k:k + 1] for k in range(spp)]
        else:
            planes = [s]
        out = []
        for pl in planes:
            if tile:
                tw, th = tile
                for y0 in range(0, h, th):
                    for x0 in range(0, w, tw):
                        t = np.zeros((th, tw, pl.shape[2]), pl.dtype)
                        part = pl[y0:y0 + th, x0:x0 + tw]
                        t[:part.shape[0], :part.shape[1]] = part
                        out.append(b"".join(_tiff_rows(t, bps, big_endian)))
            else:
                rps = rows_per_strip or h
                for y0 in range(0, h, rps):
                    out.append(b"".join(_tiff_rows(pl[y0:y0 + rps], bps, big_endian)))
        res = []
        for b in out:
            if fill_order == 2:
                b = bytes(int("{:08b}".format(x)[::-1], 2) for x in b)
            if compression == 8:
                b = zlib.compress(b)
            elif compression == 32773:
                b = _packbits(b)
            res.append(b)
        return res

    page_data = [blocks(samples if p == 0 else (1 << bps) - 1 - samples) for p in range(pages)]
    out = bytearray((b"MM\0*" if big_endian else b"II*\0") + struct.pack(e + "I", 0))
    ifd_offsets = []
    for p in range(pages):
        offs = []
        for b in page_data[p]:
            offs.append(len(out))
            out += b
            if len(out) % 2:
                out += b"\0"
        counts = [len(b) for b in page_data[p]]
        tags = [(256, 4, [w]), (257, 4, [h]), (258, 3, [bps] * spp), (259, 3, [compression]),
                (262, 3, [photometric]), (277, 3, [spp])]
        if tile:
            tags += [(322, 3, [tile[0]]), (323, 3, [tile[1]]), (324, 4, offs), (325, 4, counts)]
        else:
            tags += [(273, 4, offs), (278, 4, [rows_per_strip or h]), (279, 4, counts)]
        if extra_samples:
            tags.append((338, 3, list(extra_samples)))
        if colormap is not None:
            tags.append((320, 3, [int(v) for v in colormap]))
        if orientation is not None:
            tags.append((274, 3, [orientation]))
        if fill_order is not None:
            tags.append((266, 3, [fill_order]))
        if sample_format is not None:
            tags.append((339, 3, [sample_format] * spp))
        if planar is not None:
            tags.append((284, 3, [planar]))
        tags += list(extra_tags)
        tags.sort(key=lambda t: t[0])
        size = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8}
        fmt = {1: "B", 2: "B", 3: "H", 4: "I"}
        ifd = len(out)
        ifd_offsets.append(ifd)
        data_at = ifd + 2 + 12 * len(tags) + 4
        table, blob = bytearray(struct.pack(e + "H", len(tags))), bytearray()
        for tag, typ, vals in tags:
            raw = b"".join(struct.pack(e + fmt[typ], v) for v in vals)
            if len(raw) <= 4:
                field = raw.ljust(4, b"\0")
            else:
                field = struct.pack(e + "I", data_at + len(blob))
                blob += raw
                if len(blob) % 2:
                    blob += b"\0"
            table += struct.pack(e + "HHI", tag, typ, len(vals)) + field
        table += struct.pack(e + "I", 0)
        out += table + blob
    for p, ifd in enumerate(ifd_offsets):  # link the directories
        if p == 0:
            out[4:8] = struct.pack(e + "I", ifd)
        else:
            prev = ifd_offsets[p - 1]
            n = struct.unpack(e + "H", out[prev:prev + 2])[0]
            out[prev + 2 + 12 * n:prev + 6 + 12 * n] = struct.pack(e + "I", ifd)
    return bytes(out)
