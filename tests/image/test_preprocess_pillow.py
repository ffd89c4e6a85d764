"""test_preprocess_pillow.py - `g4v preprocess` against Pillow 9.4, byte for byte, end to end.

Generates a fixture corpus into the build directory (nothing binary is committed), runs
`g4v preprocess` ($G4V_BIN) on every file and compares OUT.png, OUT.npy and OUT.positions.npy with
what transformers' load_image + Gemma 4 PIL processor produce (pillow_ref.py). Groups: Pillow's
mode conversions, EXIF/XMP orientation 0-9 (JPEG, PNG eXIf, PNG XMP, WebP) and EXIF encodings,
JPEG variants, PNG depths/colour types/interlace, WebP, GIF, BMP, every budget, tall images in
both resize orders, and the streaming path. Files Pillow refuses must be refused too (exit 2).
Tolerance: 0 differing bytes. A mismatch prints the first differing pixel.
usage: pytest test_preprocess_pillow.py [--arg=only=SUBSTRING] [--arg=--keep]
"""
import concurrent.futures
import io
import os
import struct
import subprocess
import sys
import time

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402  (also puts tests/image on sys.path)
import pillow_ref as ref  # noqa: E402

G4V = os.environ.get("G4V_BIN", "g4v")
OUT = os.path.join(os.environ.get("G4V_BUILD_DIR", "."), "tests", "image", "fixtures_e2e")
RNG = np.random.default_rng(20240601)

CASES = []


def case(group, name, data, tokens=70, exif=True, order="9", note="", refused=False,
         pixels=None):
    """tokens defaults to 70 (the smallest outputs: fast); the budgets group covers the rest.
    refused: a file Pillow opens but we refuse on purpose (exit 2, "not supported").
    pixels: the decoded image to expect instead of Pillow's load_image (TIFF orientation:
    Pillow 9.4 applies it twice, see build_tiff)."""
    CASES.append(dict(group=group, name=name, data=data, tokens=tokens, exif=exif, order=order,
                      note=note, refused=refused, pixels=pixels))


def pil_bytes(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def jpeg_with_segment(jpeg, segment):
    """Inserts a raw APPn segment right after SOI."""
    return jpeg[:2] + segment + jpeg[2:]


def app1(payload):
    return b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload


def xmp_packet(v, attr):
    if attr:
        body = f'<rdf:Description tiff:Orientation="{v}"/>'
    else:
        body = f"<rdf:Description><tiff:Orientation>{v}</tiff:Orientation></rdf:Description>"
    return ('<?xpacket begin=""?><x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF>' + body +
            "</rdf:RDF></x:xmpmeta>")


# --------------------------------------------------------------------------------------------
def build_modes():
    a = ref.content("photo", 37, 61, RNG)
    im = Image.fromarray(a)
    case("modes", "RGB", pil_bytes(im, "PNG"))
    case("modes", "L", pil_bytes(im.convert("L"), "PNG"))
    la = Image.merge("LA", (im.convert("L"), Image.fromarray(ref.content("noise", 37, 61, RNG)[:, :, 0])))
    case("modes", "LA", pil_bytes(la, "PNG"))
    rgba = np.dstack([a, RNG.integers(0, 256, (37, 61), dtype=np.uint8)])
    rgba[5:20, 10:30, 3] = 0  # colour under alpha 0 must survive (no compositing)
    case("modes", "RGBA-alpha0", pil_bytes(Image.fromarray(rgba, "RGBA"), "PNG"))
    case("modes", "1", pil_bytes(im.convert("1"), "PNG"))
    p = im.convert("P", palette=Image.ADAPTIVE, colors=200)
    case("modes", "P", pil_bytes(p, "PNG"))
    case("modes", "P-tRNS-bytes", pil_bytes(p, "PNG", transparency=bytes(range(0, 200, 2))))
    case("modes", "P-tRNS-int", pil_bytes(p, "PNG", transparency=3))
    i16 = RNG.integers(0, 65536, (37, 61), dtype=np.uint16)
    i16[:, :10] = RNG.integers(0, 256, (37, 10))  # some values below 255 survive saturation
    case("modes", "I;16", pil_bytes(Image.fromarray(i16.astype("<u2")), "PNG"))
    case("modes", "I", pil_bytes(Image.fromarray(i16.astype(np.int32), "I"), "PNG"))
    cm = im.convert("CMYK")
    case("modes", "CMYK-jpeg", pil_bytes(cm, "JPEG", quality=90))
    idx = RNG.integers(0, 256, (37, 61), dtype=np.uint8)
    case("modes", "P-index-past-PLTE", ref.make_png(idx, 8, 3, plte=[(255, 0, 0), (0, 255, 0),
                                                                       (0, 0, 255), (9, 9, 9)]))
    case("modes", "RGBA-webp-alpha", pil_bytes(Image.fromarray(rgba, "RGBA"), "WEBP",
                                               lossless=True, exact=True))


def build_exif():
    base = ref.asymmetric(23, 37)
    im = Image.fromarray(base)
    for v in range(10):
        ex = Image.Exif()
        ex[0x0112] = v
        case("exif", f"jpeg-exif-{v}", pil_bytes(im, "JPEG", quality=95, exif=ex.tobytes()),
             tokens=70)
        case("exif", f"png-exif-{v}", pil_bytes(im, "PNG", exif=ex.tobytes()), tokens=70)
        case("exif", f"png-xmp-{v}", ref.make_png(base, 8, 2,
                                                  before=[ref.itxt("XML:com.adobe.xmp",
                                                                   xmp_packet(v, v % 2))]),
             tokens=70)
        case("exif", f"webp-exif-{v}", pil_bytes(im, "WEBP", lossless=True, exif=ex.tobytes()),
             tokens=70)
        jpg = pil_bytes(im, "JPEG", quality=95)
        case("exif", f"jpeg-xmp-only-{v}", jpeg_with_segment(
            jpg, app1(b"http://ns.adobe.com/xap/1.0/\0" + xmp_packet(v, 1).encode())), tokens=70)
    ex6 = Image.Exif()
    ex6[0x0112] = 6
    case("exif", "jpeg-6-no-exif", pil_bytes(im, "JPEG", quality=95, exif=ex6.tobytes()),
         tokens=70, exif=False)
    case("exif", "png-6-no-exif", pil_bytes(im, "PNG", exif=ex6.tobytes()), tokens=70, exif=False)
    # Two Exif APP1 segments: Pillow 9.4 keeps the first.
    jpg = pil_bytes(im, "JPEG", quality=95)
    two = jpeg_with_segment(jpeg_with_segment(jpg, app1(ref.orientation_exif(6))),
                            app1(ref.orientation_exif(3)))
    case("exif", "jpeg-two-exif-segments", two, tokens=70)
    # EXIF encodings in a PNG eXIf chunk (Pillow's comparison with the integers 2..8).
    S = struct.pack
    variants = {
        "short-be": ref.orientation_exif(8, big_endian=True),
        "long": ref.exif_blob([(0x112, 4, 1, S("<I", 6))]),
        "byte": ref.exif_blob([(0x112, 1, 1, b"\x06")]),
        "sbyte": ref.exif_blob([(0x112, 6, 1, b"\x06")]),
        "sshort": ref.exif_blob([(0x112, 8, 1, S("<h", 3))]),
        "slong": ref.exif_blob([(0x112, 9, 1, S("<i", 5))]),
        "ifd-type": ref.exif_blob([(0x112, 13, 1, S("<I", 7))]),
        "rational-12-2": ref.exif_blob([(0x112, 5, 1, 26)], extra=S("<II", 12, 2)),
        "rational-7-2": ref.exif_blob([(0x112, 5, 1, 26)], extra=S("<II", 7, 2)),
        "rational-6-0": ref.exif_blob([(0x112, 5, 1, 26)], extra=S("<II", 6, 0)),
        "srational-neg": ref.exif_blob([(0x112, 10, 1, 26)], extra=S("<ii", -8, -1)),
        "float-6": ref.exif_blob([(0x112, 11, 1, S("<f", 6.0))]),
        "float-6.5": ref.exif_blob([(0x112, 11, 1, S("<f", 6.5))]),
        "double-3": ref.exif_blob([(0x112, 12, 1, 26)], extra=S("<d", 3.0)),
        "long8": ref.exif_blob([(0x112, 16, 1, 26)], extra=S("<Q", 5)),
        "ascii": ref.exif_blob([(0x112, 2, 2, b"6\0")]),
        "undefined": ref.exif_blob([(0x112, 7, 1, b"\x06")]),
        "short-count2": ref.exif_blob([(0x112, 3, 2, S("<HH", 6, 3))]),
        "short-count3-offset": ref.exif_blob([(0x112, 3, 3, 26)], extra=S("<HHH", 5, 1, 1)),
        "duplicate-tag": ref.exif_blob([(0x112, 3, 1, S("<H", 3)), (0x112, 3, 1, S("<H", 6))]),
        "count-0": ref.exif_blob([(0x112, 3, 0, S("<H", 6))]),
        "unknown-type": ref.exif_blob([(0x112, 99, 1, S("<H", 6))]),
        "bad-offset-stops": ref.exif_blob([(0x112, 3, 1, S("<H", 6)), (0x10f, 2, 40, 5000),
                                           (0x112, 3, 1, S("<H", 3))]),
        "offset-in-range": ref.exif_blob([(0x10f, 2, 6, 26), (0x112, 3, 1, S("<H", 7))],
                                         extra=b"Canon\0"),
        "mm-star-zero": b"Exif\0\0MM*\0" + ref.orientation_exif(6, True)[10:],
        "ii-zero-star": b"Exif\0\0II\0*" + ref.orientation_exif(6)[10:],
        "no-prefix": ref.orientation_exif(5)[6:],
        "ifd-at-20": ref.exif_blob([(0x112, 3, 1, S("<H", 2))], ifd_offset=20),
        "value-0": ref.orientation_exif(0),
        "value-9": ref.orientation_exif(9),
        "value-65535": ref.orientation_exif(65535),
        "truncated-table": ref.orientation_exif(6)[:-8],
        "ifd-out-of-range": ref.exif_blob([(0x112, 3, 1, S("<H", 6))], ifd_offset=8)[:10] +
        S("<I", 9999) + ref.exif_blob([(0x112, 3, 1, S("<H", 6))])[14:],
        "empty": b"",
    }
    for name, blob in variants.items():
        payload = blob[6:] if blob.startswith(b"Exif\0\0") else blob
        case("exif-encodings", name, ref.make_png(base, 8, 2, before=[(b"eXIf", payload)]),
             tokens=70)
    xmp6 = ref.itxt("XML:com.adobe.xmp", xmp_packet(6, 1))
    no_tag = ref.exif_blob([(0x10f, 2, 4, b"abc\0")])[6:]
    case("exif-encodings", "exif-without-tag+xmp", ref.make_png(
        base, 8, 2, before=[(b"eXIf", no_tag), xmp6]), tokens=70)
    case("exif-encodings", "exif-1+xmp-6", ref.make_png(
        base, 8, 2, before=[(b"eXIf", ref.orientation_exif(1)[6:]), xmp6]), tokens=70)
    case("exif-encodings", "exif-ascii+xmp-6", ref.make_png(
        base, 8, 2, before=[(b"eXIf", variants["ascii"][6:]), xmp6]), tokens=70)
    case("exif-encodings", "exif-after-idat", ref.make_png(
        base, 8, 2, after=[(b"eXIf", ref.orientation_exif(8)[6:])]), tokens=70)
    case("exif-encodings", "two-exif-last-wins", ref.make_png(
        base, 8, 2, before=[(b"eXIf", ref.orientation_exif(3)[6:])],
        after=[(b"eXIf", ref.orientation_exif(6)[6:])]), tokens=70)
    case("exif-encodings", "xmp-after-idat", ref.make_png(base, 8, 2, after=[xmp6]), tokens=70)
    # An eXIf before IDAT means Pillow never reads the chunks after IDAT.
    case("exif-encodings", "exif-no-tag-then-xmp-after-idat", ref.make_png(
        base, 8, 2, before=[(b"eXIf", no_tag)], after=[xmp6]), tokens=70)
    case("exif-encodings", "exif-no-tag-then-exif-after-idat", ref.make_png(
        base, 8, 2, before=[(b"eXIf", no_tag)], after=[(b"eXIf", ref.orientation_exif(6)[6:])]),
         tokens=70)
    case("exif-encodings", "xmp-before-and-after-idat", ref.make_png(
        base, 8, 2, before=[ref.itxt("XML:com.adobe.xmp", xmp_packet(3, 0))], after=[xmp6]),
         tokens=70)
    case("exif-encodings", "xmp-compressed-itxt", ref.make_png(
        base, 8, 2, before=[ref.itxt("XML:com.adobe.xmp", xmp_packet(7, 0), True)]), tokens=70)
    case("exif-encodings", "xmp-in-tEXt", ref.make_png(
        base, 8, 2, before=[ref.text_chunk("XML:com.adobe.xmp", xmp_packet(5, 1))]), tokens=70)
    case("exif-encodings", "xmp-no-digit", ref.make_png(
        base, 8, 2, before=[ref.itxt("XML:com.adobe.xmp", 'tiff:Orientation="x"')]), tokens=70)
    hexed = ref.orientation_exif(6).hex()
    raw = "\nexif\n" + f"{len(hexed) // 2:8d}\n" + "\n".join(
        hexed[i:i + 72] for i in range(0, len(hexed), 72)) + "\n"
    case("exif-encodings", "raw-profile-type-exif", ref.make_png(
        base, 8, 2, before=[ref.text_chunk("Raw profile type exif", raw)]), tokens=70)


def build_jpeg():
    for (h, w) in [(480, 640), (251, 97), (1, 1), (2, 3), (9, 17), (127, 333)]:
        a = ref.content("photo", h, w, RNG)
        im = Image.fromarray(a)
        for q in (15, 75, 100) if w == 640 else (75,):
            for ss in (0, 1, 2):
                case("jpeg", f"{w}x{h}-q{q}-ss{ss}", pil_bytes(im, "JPEG", quality=q,
                                                               subsampling=ss))
        for ss in (0, 1, 2):
            case("jpeg", f"{w}x{h}-progressive-ss{ss}", pil_bytes(
                im, "JPEG", quality=85, subsampling=ss, progressive=True, optimize=True))
        case("jpeg", f"{w}x{h}-gray", pil_bytes(im.convert("L"), "JPEG", quality=90))
        case("jpeg", f"{w}x{h}-gray-progressive", pil_bytes(im.convert("L"), "JPEG",
                                                            quality=90, progressive=True))
        case("jpeg", f"{w}x{h}-cmyk", pil_bytes(im.convert("CMYK"), "JPEG", quality=90))
    tool = os.environ.get("G4V_IMAGE_TOOL")
    if tool:  # variants only libjpeg itself can write (docs/PREPROCESSING.md §8)
        for (h, w) in [(97, 131), (1, 2), (4, 1), (16, 16)]:
            a = ref.content("photo", h, w, RNG)
            for v in ("restart", "arith", "s440", "s411", "rgb", "ycck", "cmyk-plain",
                      "gray-prog"):
                data = subprocess.run([tool, "jpeg", v, str(w), str(h)], input=a.tobytes(),
                                      capture_output=True, check=True).stdout
                case("jpeg-libjpeg", f"{w}x{h}-{v}", data)
    a = ref.content("edges", 200, 300, RNG)
    case("jpeg", "edges-q95-444", pil_bytes(Image.fromarray(a), "JPEG", quality=95,
                                            subsampling=0))
    mpo_frames = [Image.fromarray(ref.content(k, 90, 120, RNG)) for k in ("photo", "edges")]
    for v in (1, 6):
        ex = Image.Exif()
        ex[0x0112] = v
        case("jpeg", f"mpo-exif-{v}", pil_bytes(mpo_frames[0], "MPO", save_all=True,
                                                append_images=mpo_frames[1:], exif=ex.tobytes()))
    case("jpeg", "trailing-garbage", pil_bytes(Image.fromarray(a), "JPEG") + b"garbage" * 10)


def build_png():
    h, w = 23, 45
    for depth in (1, 2, 4, 8, 16):
        g = RNG.integers(0, 1 << depth, (h, w))
        for il in (False, True):
            tag = "-adam7" if il else ""
            case("png", f"gray{depth}{tag}", ref.make_png(g, depth, 0, interlace=il))
            if depth <= 8:
                npal = min(1 << depth, 200)
                pal = RNG.integers(0, 256, (npal, 3))
                idx = RNG.integers(0, 1 << depth, (h, w))  # may exceed the PLTE: gray ramp
                case("png", f"palette{depth}{tag}", ref.make_png(idx, depth, 3, interlace=il,
                                                                  plte=pal))
                case("png", f"palette{depth}-trns{tag}", ref.make_png(
                    idx, depth, 3, interlace=il, plte=pal, trns=bytes(range(0, npal, 3))))
            if depth >= 8:
                m = 1 << depth
                for ct, ch, nm in ((2, 3, "rgb"), (4, 2, "ga"), (6, 4, "rgba")):
                    s = RNG.integers(0, m, (h, w, ch))
                    case("png", f"{nm}{depth}{tag}", ref.make_png(s, depth, ct, interlace=il))
    g8 = RNG.integers(0, 256, (h, w))
    case("png", "gray8-trns", ref.make_png(g8, 8, 0, trns=struct.pack(">H", 7)))
    case("png", "gray16-trns", ref.make_png(RNG.integers(0, 65536, (h, w)), 16, 0,
                                            trns=struct.pack(">H", 300)))
    case("png", "rgb8-trns", ref.make_png(RNG.integers(0, 256, (h, w, 3)), 8, 2,
                                          trns=struct.pack(">HHH", 1, 2, 3)))
    case("png", "rgb8-gama-srgb", ref.make_png(RNG.integers(0, 256, (h, w, 3)), 8, 2,
                                               before=[(b"gAMA", struct.pack(">I", 45455)),
                                                       (b"sRGB", b"\0")]))
    for hh, ww in ((1, 1), (5, 3), (1, 9), (9, 1)):
        case("png", f"adam7-{ww}x{hh}", ref.make_png(RNG.integers(0, 256, (hh, ww, 3)), 8, 2,
                                                      interlace=True))
    big = ref.content("photo", 300, 420, RNG)
    case("png", "rgb8-420x300-pillow", pil_bytes(Image.fromarray(big), "PNG"))


def build_webp():
    a = ref.content("photo", 150, 201, RNG)
    im = Image.fromarray(a)
    rgba = np.dstack([a, ref.content("gradient", 150, 201, RNG)[:, :, 0]])
    rgba[:20, :40, 3] = 0
    ima = Image.fromarray(rgba, "RGBA")
    case("webp", "lossy-q80", pil_bytes(im, "WEBP", quality=80))
    case("webp", "lossy-q30-odd", pil_bytes(Image.fromarray(a[:77, :33]), "WEBP", quality=30))
    case("webp", "lossy-alpha", pil_bytes(ima, "WEBP", quality=80))
    case("webp", "lossless", pil_bytes(im, "WEBP", lossless=True))
    case("webp", "lossless-alpha-exact", pil_bytes(ima, "WEBP", lossless=True, exact=True))
    case("webp", "lossless-alpha", pil_bytes(ima, "WEBP", lossless=True))
    frames = [Image.fromarray(ref.content(k, 150, 201, RNG)) for k in ("photo", "edges")]
    case("webp", "animated-2", pil_bytes(frames[0], "WEBP", save_all=True,
                                         append_images=frames[1:], quality=70))
    case("webp", "1x1", pil_bytes(Image.fromarray(a[:1, :1]), "WEBP", lossless=True))


def build_gif():
    a = ref.content("photo", 60, 90, RNG)
    p = Image.fromarray(a).convert("P", palette=Image.ADAPTIVE, colors=64)
    case("gif", "pillow-global", pil_bytes(p, "GIF"))
    case("gif", "pillow-transparency", pil_bytes(p, "GIF", transparency=5))
    case("gif", "pillow-gray", pil_bytes(Image.fromarray(a).convert("L"), "GIF"))
    frames = [Image.fromarray(ref.content(k, 60, 90, RNG)).convert("P", palette=Image.ADAPTIVE)
              for k in ("photo", "edges")]
    case("gif", "pillow-animated", pil_bytes(frames[0], "GIF", save_all=True,
                                             append_images=frames[1:]))
    pal = RNG.integers(0, 256, (16, 3))
    idx = RNG.integers(0, 16, (30, 40))
    case("gif", "local-palette-only", ref.make_gif(40, 30, [dict(idx=idx, local_pal=pal)]))
    case("gif", "no-palette", ref.make_gif(40, 30, [dict(idx=RNG.integers(0, 256, (30, 40)))]))
    case("gif", "indices-past-palette", ref.make_gif(40, 30, [dict(
        idx=RNG.integers(0, 256, (30, 40)))], global_pal=pal))
    case("gif", "offset-transparent-fill", ref.make_gif(50, 40, [dict(
        idx=idx, left=5, top=7, transparency=9)], global_pal=pal))
    case("gif", "offset-zero-fill", ref.make_gif(50, 40, [dict(idx=idx, left=9, top=3)],
                                                 global_pal=pal, background=4))
    case("gif", "frame-larger-than-screen", ref.make_gif(20, 10, [dict(idx=idx, left=3, top=2)],
                                                         global_pal=pal))
    case("gif", "interlaced", ref.make_gif(40, 30, [dict(idx=idx, interlace=True)],
                                           global_pal=pal))
    case("gif", "interlaced-odd-height", ref.make_gif(40, 13, [dict(idx=idx[:13],
                                                                    interlace=True)],
                                                      global_pal=pal))
    case("gif", "local-overrides-global", ref.make_gif(40, 30, [dict(
        idx=idx, local_pal=RNG.integers(0, 256, (16, 3)))], global_pal=pal))
    case("gif", "gray-ramp-palette", ref.make_gif(40, 30, [dict(idx=idx)],
                                                  global_pal=[(i, i, i) for i in range(16)]))
    case("gif", "lzw-ends-early", ref.make_gif(40, 30, [dict(idx=idx, pixels=500)],
                                               global_pal=pal))
    comment = b"\x21\xfe\x05hello\x00"
    app = b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"
    case("gif", "extensions-before-frame", ref.make_gif(40, 30, [dict(idx=idx, transparency=2),
                                                                 dict(idx=idx[::-1])],
                                                        global_pal=pal, pre_ext=(comment, app)))


def build_bmp():
    a = ref.content("photo", 29, 43, RNG)
    im = Image.fromarray(a)
    case("bmp", "pillow-rgb24", pil_bytes(im, "BMP"))
    case("bmp", "pillow-rgba32", pil_bytes(Image.fromarray(np.dstack(
        [a, RNG.integers(0, 256, (29, 43), dtype=np.uint8)]), "RGBA"), "BMP"))
    case("bmp", "pillow-L", pil_bytes(im.convert("L"), "BMP"))
    case("bmp", "pillow-1", pil_bytes(im.convert("1"), "BMP"))
    case("bmp", "pillow-P", pil_bytes(im.convert("P", palette=Image.ADAPTIVE, colors=100), "BMP"))
    h, w = 29, 43
    pal16 = [tuple(int(v) for v in c) for c in RNG.integers(0, 256, (16, 3))]
    i4 = RNG.integers(0, 16, (h, w))
    rows4 = [bytes((int(r[x]) << 4 | (int(r[x + 1]) if x + 1 < w else 0)) for x in range(0, w, 2))
             for r in i4]
    case("bmp", "pal4", ref.make_bmp(w, h, 4, rows4, palette=pal16))
    i8 = RNG.integers(0, 256, (h, w), dtype=np.uint8)
    pal20 = [tuple(int(v) for v in c) for c in RNG.integers(0, 256, (20, 3))]
    case("bmp", "pal8-20-colors", ref.make_bmp(w, h, 8, [r.tobytes() for r in i8],
                                               palette=pal20))
    case("bmp", "pal8-os2-v1", ref.make_bmp(w, h, 8, [r.tobytes() for r in i8], palette=pal20,
                                            header=12, pal_entry=3, colors=20))
    case("bmp", "pal8-gray-ramp", ref.make_bmp(w, h, 8, [r.tobytes() for r in i8],
                                               palette=[(i, i, i) for i in range(256)]))
    case("bmp", "pal8-black-white", ref.make_bmp(w, h, 8, [r.tobytes() for r in i8],
                                                 palette=[(0, 0, 0), (255, 255, 255)]))
    i1 = RNG.integers(0, 2, (h, w))
    rows1 = [np.packbits(r.astype(np.uint8)).tobytes() for r in i1]
    case("bmp", "pal1-colors", ref.make_bmp(w, h, 1, rows1, palette=[(200, 10, 30),
                                                                     (5, 250, 90)]))
    case("bmp", "pal8-offset-after-header", ref.make_bmp(
        w, h, 8, [r.tobytes() for r in i8], palette=pal20, pixel_offset=54, colors=20)[:54] +
        ref.make_bmp(w, h, 8, [r.tobytes() for r in i8], palette=pal20, colors=20)[54:])
    rgb = RNG.integers(0, 256, (h, w, 3), dtype=np.uint8)
    bgr_rows = [r[:, ::-1].tobytes() for r in rgb]
    case("bmp", "rgb24-top-down", ref.make_bmp(w, h, 24, bgr_rows, top_down=True))
    case("bmp", "rgb24-v4-header", ref.make_bmp(w, h, 24, bgr_rows, header=108))
    case("bmp", "rgb24-os2-v1", ref.make_bmp(w, h, 24, bgr_rows, header=12))
    case("bmp", "rgb24-bitfields", ref.make_bmp(w, h, 24, bgr_rows, compression=3,
                                                masks=(0xFF0000, 0xFF00, 0xFF)))
    px16 = RNG.integers(0, 65536, (h, w), dtype=np.uint16)
    rows16 = [r.astype("<u2").tobytes() for r in px16]
    case("bmp", "rgb555", ref.make_bmp(w, h, 16, rows16))
    case("bmp", "rgb565-bitfields", ref.make_bmp(w, h, 16, rows16, compression=3,
                                                 masks=(0xF800, 0x7E0, 0x1F)))
    case("bmp", "rgb555-bitfields-v5", ref.make_bmp(w, h, 16, rows16, compression=3, header=124,
                                                    masks=(0x7C00, 0x3E0, 0x1F, 0)))
    px32 = RNG.integers(0, 256, (h, w, 4), dtype=np.uint8)
    rows32 = [r.tobytes() for r in px32]
    case("bmp", "rgb32-bi-rgb", ref.make_bmp(w, h, 32, rows32))
    for nm, m in (("bgrx", (0xFF0000, 0xFF00, 0xFF, 0)), ("xbgr", (0xFF000000, 0xFF0000, 0xFF00, 0)),
                  ("abgr", (0xFF000000, 0xFF0000, 0xFF00, 0xFF)),
                  ("rgba", (0xFF, 0xFF00, 0xFF0000, 0xFF000000)),
                  ("bgra", (0xFF0000, 0xFF00, 0xFF, 0xFF000000)), ("zero", (0, 0, 0, 0))):
        case("bmp", f"rgb32-bitfields-{nm}", ref.make_bmp(w, h, 32, rows32, compression=3,
                                                          header=124, masks=m))
    # RLE8: runs, an absolute run of odd length (padding), a delta, end of line, end of bitmap.
    rle8 = bytearray()
    for y in range(h):
        if y == 10:
            rle8 += b"\x00\x02\x05\x01"  # delta: 5 right, 1 down
            continue
        rle8 += bytes([7, y % 20]) + bytes([0, 5]) + bytes(range(5)) + b"\0"
        rle8 += bytes([w, 19]) + b"\x00\x00"  # encoded run clipped to the row, then EOL
    rle8 += b"\x00\x01"
    case("bmp", "rle8", ref.make_bmp(w, h, 8, palette=pal20, compression=1, rle=bytes(rle8)))
    rle4 = bytearray()
    for y in range(h):
        rle4 += bytes([5, 0x3C]) + bytes([0, 7]) + b"\x12\x34\x56\x70" + bytes([w, 0xA5])
        rle4 += b"\x00\x00"
    rle4 += b"\x00\x01"
    case("bmp", "rle4", ref.make_bmp(w, h, 4, palette=pal16, compression=2, rle=bytes(rle4)))
    case("bmp", "rle8-ends-early", ref.make_bmp(w, h, 8, palette=pal20, compression=1,
                                                rle=bytes([w, 3]) * 5 + b"\x00\x01"))


def build_tiff():
    """TIFF: Pillow-written files in every mode and compression Pillow writes, plus files our
    encoder writes (pillow_ref.make_tiff) for what Pillow cannot: tiles, 2/4-bit, MinIsWhite,
    big-endian, FillOrder 2, associated alpha, extra samples, 16-bit colour, multi-page."""
    h, w = 37, 53
    a = ref.content("photo", h, w, RNG)
    im = Image.fromarray(a)
    alpha = RNG.integers(0, 256, (h, w), dtype=np.uint8)
    alpha[3:9, 4:20] = 0
    i16 = RNG.integers(0, 65536, (h, w)).astype(np.uint16)
    i16[:, :9] = RNG.integers(0, 256, (h, 9))  # some values below 255 survive saturation
    pil = {"RGB": im, "L": im.convert("L"), "1": im.convert("1"), "CMYK": im.convert("CMYK"),
           "RGBA": Image.fromarray(np.dstack([a, alpha]), "RGBA"),
           "LA": Image.merge("LA", (im.convert("L"), Image.fromarray(alpha))),
           "P": im.convert("P", palette=Image.ADAPTIVE, colors=77),
           "I;16": Image.fromarray(i16.astype("<u2"))}
    pil["PA"] = Image.merge("PA", (pil["P"].getchannel(0), Image.fromarray(alpha)))
    pil["PA"].putpalette(pil["P"].getpalette())
    for mode, img in pil.items():
        comps = ["raw", "tiff_lzw", "tiff_adobe_deflate", "packbits"]
        if mode in ("RGB", "L", "CMYK"):
            comps.append("jpeg")
        if mode == "1":
            comps += ["group3", "group4"]
        for comp in comps:
            case("tiff", f"pillow-{mode}-{comp}", pil_bytes(img, "TIFF", compression=comp))
    case("tiff", "pillow-I;16B", pil_bytes(Image.frombytes("I;16B", (w, h), i16.astype(">u2")
                                                           .tobytes()), "TIFF"))
    for q in (30, 90):
        case("tiff", f"pillow-YCbCr-jpeg-q{q}", pil_bytes(im.convert("YCbCr"), "TIFF",
                                                        compression="jpeg", quality=q))
    case("tiff", "pillow-multipage", pil_bytes(im, "TIFF", save_all=True,
                                               append_images=[pil["L"], im.rotate(90)]))
    case("tiff", "pillow-1x1", pil_bytes(Image.fromarray(a[:1, :1]), "TIFF"))
    case("tiff", "pillow-large-lzw", pil_bytes(Image.fromarray(ref.content("photo", 420, 610,
                                                                           RNG)), "TIFF",
                                               compression="tiff_lzw"), tokens=280)
    # our encoder: every layout x byte order
    rgb = RNG.integers(0, 256, (h, w, 3))
    layouts = {"strip": {}, "strips3-packbits": dict(rows_per_strip=3, compression=32773),
               "tiles16": dict(tile=(16, 16)), "tiles32x16-deflate": dict(tile=(32, 16),
                                                                           compression=8),
               "tile-larger-than-image": dict(tile=(64, 48), compression=8)}
    for be in (False, True):
        bo = "mm" if be else "ii"
        for lname, kw in layouts.items():
            case("tiff", f"rgb8-{lname}-{bo}", ref.make_tiff(rgb, 8, 2, big_endian=be, **kw))
        for bps in (1, 2, 4, 8):
            g = RNG.integers(0, 1 << bps, (h, w))
            for photo in (0, 1):
                case("tiff", f"gray{bps}-photo{photo}-{bo}", ref.make_tiff(g, bps, photo,
                                                                           big_endian=be))
                case("tiff", f"gray{bps}-photo{photo}-tiles-{bo}", ref.make_tiff(
                    g, bps, photo, big_endian=be, tile=(16, 32), compression=8))
            cmap = RNG.integers(0, 65536, 3 << bps)
            case("tiff", f"palette{bps}-{bo}", ref.make_tiff(g, bps, 3, big_endian=be,
                                                             colormap=cmap))
            case("tiff", f"palette{bps}-fill2-{bo}", ref.make_tiff(g, bps, 3, big_endian=be,
                                                                   colormap=cmap, fill_order=2))
            case("tiff", f"gray{bps}-fill2-{bo}", ref.make_tiff(g, bps, 1, big_endian=be,
                                                                fill_order=2))
        case("tiff", f"gray16-{bo}", ref.make_tiff(i16, 16, 1, big_endian=be))
        case("tiff", f"gray16-tiles-{bo}", ref.make_tiff(i16, 16, 1, big_endian=be,
                                                         tile=(16, 16), compression=8))
        rgb16 = RNG.integers(0, 65536, (h, w, 3))
        case("tiff", f"rgb16-{bo}", ref.make_tiff(rgb16, 16, 2, big_endian=be))
        rgba16 = RNG.integers(0, 65536, (h, w, 4))
        for ex in ((2,), (0,)):
            case("tiff", f"rgba16-extra{ex[0]}-{bo}", ref.make_tiff(rgba16, 16, 2, big_endian=be,
                                                                    extra_samples=ex))
        for ex in ((), (0,), (1,), (2,), (999,), (1, 0), (2, 0), (0, 0), (2, 0, 0), (1, 0, 0)):
            s = RNG.integers(0, 256, (h, w, 3 + max(1, len(ex))))
            s[:5, :5, 3] = 0
            s[5:9, :5, 3] = 255
            if ex == (1,):  # premultiplied: colour <= alpha (and some not)
                s[10:, :, :3] = s[10:, :, :3] * s[10:, :, 3:4] // 255
            case("tiff", f"rgb8-extra{'-'.join(map(str, ex)) or 'none'}-{bo}",
                 ref.make_tiff(s, 8, 2, big_endian=be, extra_samples=ex, tile=(16, 16)
                               if len(ex) == 2 else None))
        for ex in ((), (0,), (0, 0)):
            s = RNG.integers(0, 256, (h, w, 4 + len(ex)))
            case("tiff", f"cmyk8-extra{len(ex)}-{bo}", ref.make_tiff(s, 8, 5, big_endian=be,
                                                                     extra_samples=ex))
        ga = RNG.integers(0, 256, (h, w, 2))
        case("tiff", f"gray-alpha8-{bo}", ref.make_tiff(ga, 8, 1, big_endian=be,
                                                        extra_samples=(2,)))
        cmap8 = RNG.integers(0, 65536, 3 << 8)
        case("tiff", f"palette-alpha8-{bo}", ref.make_tiff(ga, 8, 3, big_endian=be,
                                                           extra_samples=(2,), colormap=cmap8))
        case("tiff", f"multipage3-{bo}", ref.make_tiff(rgb, 8, 2, big_endian=be, pages=3))
    # Orientation (tag 274 of the first directory): applied once, as Pillow >= 10.1 does and
    # as Pillow 9.4's own load() does; 9.4's exif_transpose then applies it a second time
    # (Pillow issue #7381), so the expected pixels are load()'s.
    base = ref.asymmetric(23, 37)
    for v in range(10):
        for comp, kw in (("raw", {}), ("deflate-tiles", dict(tile=(16, 16), compression=8))):
            data = ref.make_tiff(base, 8, 2, orientation=v, **kw)
            once = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
            case("tiff-orientation", f"o{v}-{comp}", data, pixels=once)
            if v in (3, 6):
                case("tiff-orientation", f"o{v}-{comp}-no-exif", data, exif=False, pixels=base)
    ex = Image.Exif()
    data = pil_bytes(Image.fromarray(base), "TIFF", tiffinfo={274: 8}, compression="tiff_lzw")
    case("tiff-orientation", "pillow-o8-lzw", data,
         pixels=np.asarray(Image.open(io.BytesIO(data)).convert("RGB")))
    # Pillow opens these; we refuse them on purpose (docs/PREPROCESSING.md §2.6)
    rgbp = RNG.integers(0, 256, (h, w, 3))
    case("tiff-refused", "planar2", ref.make_tiff(rgbp, 8, 2, planar=2), refused=True)
    case("tiff-refused", "float32", pil_bytes(Image.fromarray(a[:, :, 0].astype(np.float32)),
                                              "TIFF"), refused=True)
    case("tiff-refused", "int32", pil_bytes(Image.fromarray(a[:, :, 0].astype(np.int32)),
                                            "TIFF"), refused=True)
    case("tiff-refused", "int16", ref.make_tiff(i16, 16, 1, sample_format=2), refused=True)
    case("tiff-refused", "YCbCr-raw", pil_bytes(im.convert("YCbCr"), "TIFF"), refused=True)
    case("tiff-refused", "YCbCr-lzw", pil_bytes(im.convert("YCbCr"), "TIFF",
                                                compression="tiff_lzw"), refused=True)
    case("tiff-refused", "cmyk16", ref.make_tiff(RNG.integers(0, 65536, (h, w, 4)), 16, 5),
         refused=True)
    case("tiff-refused", "lab8", ref.make_tiff(rgbp, 8, 8), refused=True)
    # Pillow refuses these as well (exit 2 expected)
    case("tiff-bad", "truncated", pil_bytes(im, "TIFF", compression="tiff_lzw")[:300])
    case("tiff-bad", "header-only", b"II*\0\x08\0\0\0")
    case("tiff-bad", "cut-after-header", ref.make_tiff(rgbp, 8, 2)[:9])


def build_budgets():
    sizes = [(1, 1), (127, 333), (40, 3000), (3000, 40), (768, 768), (60, 4000), (3100, 57),
             (479, 641)]
    for k, (h, w) in enumerate(sizes):
        a = ref.content("edges" if (h * w) % 2 else "photo", h, w, RNG)
        data = pil_bytes(Image.fromarray(a), "PNG", compress_level=1)
        # every budget for some sizes, two for the rest (large outputs are slow to check)
        for t in (70, 140, 280, 560, 1120) if k in (0, 2, 4) else ((70, 140, 560)[k % 3], 280):
            case("budgets", f"{w}x{h}@{t}", data, tokens=t)


def build_tall():
    # The 12.2 order only matters when the height shrinks: h > 48 * budget on the narrow path.
    for h, w, t in ((9000, 30, 70), (5000, 20, 70), (4000, 9, 70), (7000, 25, 70),
                    (16000, 60, 140), (4000, 20, 1120), (1500, 7, 70), (800, 1, 280)):
        a = ref.content("photo" if w % 2 else "noise", h, w, RNG)
        data = pil_bytes(Image.fromarray(a), "PNG", compress_level=1)
        for order in ("9", "12.2"):
            case("tall", f"{w}x{h}@{t}-pillow{order}", data, tokens=t, order=order)


def build_order13():
    # Pillow >= 13 (the default): vertical pass first when the height loses more than twice as
    # many pixels as the width -- common for images a little off their target size.
    for (h, w, t) in ((300, 451, 70), (480, 640, 280), (451, 300, 70), (640, 1000, 280),
                      (500, 495, 70), (2000, 1500, 560)):
        data = pil_bytes(Image.fromarray(ref.content("photo", h, w, RNG)), "PNG", compress_level=1)
        for order in ("9", "13"):
            case("order13", f"{w}x{h}@{t}-pillow{order}", data, tokens=t, order=order)
    ex = Image.Exif()
    ex[0x0112] = 6  # transposed: the rule applies to the rotated image
    data = pil_bytes(Image.fromarray(ref.content("photo", 451, 300, RNG)), "JPEG", quality=90,
                     exif=ex.tobytes())
    for order in ("9", "13"):
        case("order13", f"jpeg-300x451-o6-pillow{order}", data, tokens=70, order=order)


def build_stream():
    a = ref.content("photo", 480, 640, RNG)
    im = Image.fromarray(a)
    for v in range(1, 9):
        ex = Image.Exif()
        ex[0x0112] = v
        for t in (70, 280) if v in (1, 6) else (70,):
            case("stream", f"jpeg-640x480-o{v}@{t}", pil_bytes(im, "JPEG", quality=90,
                                                               exif=ex.tobytes()), tokens=t)
        case("stream", f"png-640x480-o{v}", pil_bytes(im, "PNG", exif=ex.tobytes(),
                                                      compress_level=1), tokens=140)
    tall = Image.fromarray(ref.content("photo", 3000, 28, RNG))
    wide = Image.fromarray(ref.content("photo", 20, 5000, RNG))  # tall (and shrinking) once
    for v in (5, 6, 7, 8):                                          # transposed
        ex = Image.Exif()
        ex[0x0112] = v
        for order in ("9", "12.2"):
            case("stream", f"jpeg-wide-o{v}-pillow{order}", pil_bytes(
                wide, "JPEG", quality=90, exif=ex.tobytes()), tokens=70, order=order)
    for v in (1, 3, 4):
        ex = Image.Exif()
        ex[0x0112] = v
        for order in ("9", "12.2"):
            case("stream", f"jpeg-tall-o{v}-pillow{order}", pil_bytes(
                tall, "JPEG", quality=90, exif=ex.tobytes()), tokens=280, order=order)
    ex = Image.Exif()
    ex[0x0112] = 2
    case("stream", "jpeg-at-target-size-o2", pil_bytes(Image.fromarray(
        ref.content("photo", 768, 768, RNG)), "JPEG", quality=90, exif=ex.tobytes()))


# --------------------------------------------------------------------------------------------
def first_diff(ours, exp):
    d = np.argwhere(ours != exp)
    if not len(d):
        return ""
    y, x = d[0][:2]
    return (f"first differing pixel (x={x}, y={y}): ours {tuple(ours[y, x])} vs Pillow "
            f"{tuple(exp[y, x])}; {len(d)} differing bytes")


def run_case_child(args):
    """run_case in a pool process: its message and what it learnt of the case (order_matters)."""
    i, keep = args
    c = CASES[i]
    msg = run_case(c, i, keep)
    return msg, c.get("order_matters")


def run_case(c, idx, keep):
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, f"{idx:03d}-{c['group']}-{c['name']}.img")
    with open(path, "wb") as f:
        f.write(c["data"])
    prefix = path[:-4] + ".out"
    try:
        if c["pixels"] is not None:
            exp = ref.preprocess_array(c["pixels"], c["tokens"], c["order"])
        else:
            exp = ref.preprocess(path, c["tokens"], c["exif"], c["order"])
        exp_err = None
    except Exception as e:  # Pillow (or transformers' logic) refuses the file
        exp, exp_err = None, f"{type(e).__name__}: {e}"
    cmd = [G4V, "preprocess", path, "--tokens", str(c["tokens"]), "-o", prefix]
    if not c["exif"]:
        cmd.append("--no-exif")
    if c["order"] != "13":  # the default
        cmd += ["--pillow", c["order"]]
    r = subprocess.run(cmd, capture_output=True, text=True)
    msg = ""
    if c["order"] != "9" and exp is not None and c["pixels"] is None:  # does this case tell its order from 9's?
        c["order_matters"] = bool((ref.preprocess(path, c["tokens"], c["exif"], "9") != exp).any()
                                  if exp.shape == ref.preprocess(path, c["tokens"], c["exif"],
                                                                 "9").shape else True)
    if c["refused"]:
        if r.returncode != 2 or "not supported" not in r.stderr:
            msg = f"expected a refusal (exit 2, 'not supported'), got {r.returncode}: {r.stderr}"
    elif exp is None:
        if r.returncode != 2:
            msg = f"Pillow refuses ({exp_err}) but g4v exited {r.returncode}"
    elif r.returncode != 0:
        msg = f"g4v exited {r.returncode}: {r.stderr.strip()}"
    else:
        ours = np.asarray(Image.open(prefix + ".png").convert("RGB"))
        if ours.shape != exp.shape:
            msg = f"size {ours.shape[1]}x{ours.shape[0]}, Pillow {exp.shape[1]}x{exp.shape[0]}"
        elif (ours != exp).any():
            msg = "image: " + first_diff(ours, exp)
        else:
            p, pos = ref.patchify(exp, fast=True)
            op = np.load(prefix + ".npy")
            opos = np.load(prefix + ".positions.npy")
            if op.dtype != np.float32 or op.shape != p.shape:
                msg = f"patches {op.dtype}{op.shape}, expected float32{p.shape}"
            elif (op.view(np.uint32) != p.view(np.uint32)).any():
                k = np.argwhere(op.view(np.uint32) != p.view(np.uint32))[0]
                msg = f"patch value [{k[0]}, {k[1]}]: ours {op[k[0], k[1]]!r} vs {p[k[0], k[1]]!r}"
            elif opos.dtype != np.int32 or opos.shape != pos.shape or (opos != pos).any():
                msg = f"positions differ ({opos.dtype}{opos.shape})"
    if not keep:
        for suffix in ("", ".out.png", ".out.npy", ".out.positions.npy"):
            f = path if not suffix else prefix + suffix[4:]
            if os.path.exists(f):
                os.remove(f)
    return msg


def test_preprocess_pillow():
    argv = pyutil.ARGS
    keep = "--keep" in argv
    filt = next((a[len("only="):] for a in argv if a.startswith("only=")), "")
    for build in (build_modes, build_exif, build_jpeg, build_png, build_webp, build_gif,
                  build_bmp, build_tiff, build_budgets, build_tall, build_order13, build_stream):
        build()
    a = RNG.integers(0, 256, (32, 48, 3), dtype=np.uint8)
    assert all((x.view(np.uint32) == y.view(np.uint32)).all() if x.dtype == np.float32 else
               (x == y).all() for x, y in zip(ref.patchify(a), ref.patchify(a, fast=True)))
    t0 = time.time()
    groups, failures = {}, 0
    todo = [(i, c) for i, c in enumerate(CASES) if not filt or filt in f"{c['group']}/{c['name']}"]
    # Two at a time, in two processes, not threads: Pillow's libtiff path closes its dup of the
    # file descriptor twice (libtiff closes it, then Pillow), and in a threaded process the second
    # close can hit a descriptor the other thread has just opened (seen in CI: np.load failed with
    # "obtaining file position failed"). The children are forked, so CASES is theirs already.
    with concurrent.futures.ProcessPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(run_case_child, [(i, keep) for i, _ in todo]))
    msgs = []
    for (i, c), (msg, order_matters) in zip(todo, done):
        if order_matters is not None:
            c["order_matters"] = order_matters
        msgs.append(msg)
    for (i, c), msg in zip(todo, msgs):
        full = f"{c['group']}/{c['name']}"
        g = groups.setdefault(c["group"], [0, 0])
        g[1] += 1
        if msg:
            failures += 1
            print(f"MISMATCH {full} (tokens {c['tokens']}, exif {c['exif']}, order "
                  f"{c['order']}): {msg}")
        else:
            g[0] += 1
    for g, (ok, n) in groups.items():
        print(f"{g:16s} {ok}/{n} identical to Pillow")
    for order in ("12.2", "13"):
        om = [c.get("order_matters") for _, c in todo if c["order"] == order]
        if om:
            print(f"Pillow {order} order changes the bytes in {sum(map(bool, om))}/{len(om)} cases")
            if not any(om):
                print(f"FAIL: no case distinguishes the Pillow {order} order from Pillow 9's")
                failures += 1
    total = sum(n for _, n in groups.values())
    print(f"all: {total - failures}/{total} identical ({time.time() - t0:.1f} s)")
    assert not failures, f"{failures} of {total} cases differ from Pillow (printed above)"
