"""test_cli_preprocess_errors.py - `g4v preprocess` on bad input and bad usage: exit codes, messages,
no partial outputs, limits refused fast and without allocating.

Exit codes (tools/g4v/cli.h): 1 usage, 2 input (bad image, unsupported format or budget, over a
limit), 4 cannot write. Each check prints a line; any failure fails the test.
"""
import io
import os
import struct
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402  (also puts tests/image on sys.path)
import pillow_ref as ref  # noqa: E402

G4V = os.environ.get("G4V_BIN", "g4v")
TMP = tempfile.mkdtemp(prefix="g4v-img-err-")


def write(name, data):
    p = os.path.join(TMP, name)
    with open(p, "wb") as f:
        f.write(data)
    return p


def run(args, measure=False):
    cmd = [G4V, "preprocess"] + args
    if measure:  # peak RSS (KiB) of the g4v process alone, measured in a fresh parent
        probe = ("import resource, subprocess, sys, time; t = time.time(); "
                 "r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
                 "print(r.returncode, time.time() - t, "
                 "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
                 "sys.stderr.write(r.stderr)")
        r = subprocess.run([sys.executable, "-c", probe] + cmd, capture_output=True, text=True)
        rc, secs, rss = r.stdout.split()
        return int(rc), r.stderr, float(secs), int(rss)
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stderr + r.stdout


def check(name, ok, detail=""):
    pyutil.check(ok, name + (f": {detail}" if detail and not ok else ""))


def expect(name, args, code, *needles):
    rc, out = run(args)
    missing = [n for n in needles if n.lower() not in out.lower()]
    check(name, rc == code and not missing,
          f"exit {rc} (want {code}), missing {missing} in: {out.strip()[:300]}")
    return out


def outputs(prefix):
    return [s for s in (".png", ".npy", ".positions.npy") if os.path.exists(prefix + s)]


def png_header_only(w, h):
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    chunk = struct.pack(">I", 13) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    idat = zlib.compress(b"\0" * 64)
    return (b"\x89PNG\r\n\x1a\n" + chunk + struct.pack(">I", len(idat)) + b"IDAT" + idat +
            struct.pack(">I", zlib.crc32(b"IDAT" + idat)))


def jpeg_with_size(jpeg, w, h):
    """Rewrites the SOF0 frame size."""
    i = jpeg.index(b"\xff\xc0")
    return jpeg[:i + 5] + struct.pack(">HH", h, w) + jpeg[i + 9:]


def test_cli_preprocess_errors():
    rng = np.random.default_rng(3)
    a = ref.content("photo", 120, 160, rng)
    im = Image.fromarray(a)
    b = io.BytesIO()
    im.save(b, "JPEG", quality=90)
    jpg = b.getvalue()
    b = io.BytesIO()
    im.save(b, "PNG")
    png = b.getvalue()
    good = write("good.jpg", jpg)
    out = os.path.join(TMP, "out")

    # usage errors -> 1
    expect("no arguments", [], 1, "IMAGE is required")
    expect("missing -o", [good], 1, "-o")
    expect("unknown option", [good, "--frobnicate", "-o", out], 1, "unknown option")
    expect("--tokens not a number", [good, "--tokens", "abc", "-o", out], 1, "needs an integer")
    expect("-o without value", [good, "-o"], 1, "needs a value")
    expect("two images", [good, good, "-o", out], 1, "one IMAGE")
    h = expect("--help", ["--help"], 0, "--pillow-12.2", "int32", "Pillow 9.0 - 12.1",
               "--no-exif", "exit codes", "OUT.positions.npy", "float32")
    check("--help on stdout", "usage: g4v preprocess" in subprocess.run(
        [G4V, "preprocess", "--help"], capture_output=True, text=True).stdout)

    # input errors -> 2, and nothing written
    expect("unsupported budget", [good, "--tokens", "300", "-o", out], 2,
           "unsupported token budget 300")
    check("no outputs after a budget error", not outputs(out), str(outputs(out)))
    expect("missing file", [os.path.join(TMP, "nope.jpg"), "-o", out], 2, "cannot open")
    expect("empty file", [write("empty.jpg", b""), "-o", out], 2, "empty")
    expect("wrong magic", [write("hello.png", b"hello world, not an image"), "-o", out], 2,
           "unknown image format", "68 65 6c 6c 6f")
    b = io.BytesIO()  # TIFF is decoded (by content), but not every kind of TIFF
    Image.fromarray(np.zeros((4, 5), np.float32)).save(b, "TIFF")
    expect("TIFF float refused", [write("x.jpg", b.getvalue()), "-o", out], 2, "TIFF",
           "SampleFormat 3", "not supported")
    b = io.BytesIO()
    im.save(b, "TIFF", compression="tiff_lzw")
    expect("truncated TIFF", [write("t.tif", b.getvalue()[:len(b.getvalue()) // 2]), "-o", out],
           2, "TIFF")
    expect("AVIF named", [write("x.avif", b"\0\0\0\x1cftypavif\0\0\0\0avifmif1miaf"), "-o", out],
           2, "AVIF")
    expect("HEIC named", [write("x.heic", b"\0\0\0\x18ftypheic\0\0\0\0mif1heic"), "-o", out],
           2, "HEIF")
    for cut in (2, 200, len(jpg) // 2, len(jpg) - 2):
        expect(f"truncated JPEG at {cut}", [write("t.jpg", jpg[:cut]), "-o", out], 2, "JPEG")
    check("no outputs after a truncated JPEG", not outputs(out), str(outputs(out)))
    for cut in (8, 30, len(png) // 2, len(png) - 20):
        expect(f"truncated PNG at {cut}", [write("t.png", png[:cut]), "-o", out], 2, "PNG")
    b = io.BytesIO()
    im.save(b, "WEBP", quality=80)
    expect("truncated WebP", [write("t.webp", b.getvalue()[:-50]), "-o", out], 2, "WebP")
    gif = ref.make_gif(40, 30, [dict(idx=rng.integers(0, 16, (30, 40)), truncate_lzw=60)],
                       global_pal=rng.integers(0, 256, (16, 3)))
    expect("truncated GIF", [write("t.gif", gif), "-o", out], 2, "GIF")
    b = io.BytesIO()
    im.save(b, "BMP")
    expect("truncated BMP", [write("t.bmp", b.getvalue()[:-100]), "-o", out], 2, "BMP",
           "truncated")
    expect("BMP unsupported depth", [write("d.bmp", ref.make_bmp(4, 4, 2, [b"\0"] * 4)),
                                     "-o", out], 2, "bit depth")

    # limits: refused before allocating (fast, small peak RSS)
    for name, data in (("PNG 100000x100000", png_header_only(100000, 100000)),
                       ("JPEG 65000x65000", jpeg_with_size(jpg, 65000, 65000)),
                       ("BMP 60000x60000", ref.make_bmp(60000, 60000, 24, [b""], rle=b"")),
                       ("GIF 65535x65535", ref.make_gif(65535, 65535, [dict(
                           idx=np.zeros((2, 2), np.uint8))], global_pal=[(0, 0, 0)]))):
        p = write("big.img", data)
        rc, err, secs, rss = run([p, "-o", out], measure=True)
        check(f"{name} refused fast without allocating",
              rc == 2 and ("limit" in err or "maximum" in err) and secs < 2.0 and rss < 64 * 1024,
              f"exit {rc}, {secs:.2f} s, peak RSS {rss} KiB: {err.strip()}")
    expect("--max-pixels", [good, "--max-pixels", "1000", "-o", out], 2, "limit of 1000 pixels")
    expect("--max-dimension", [good, "--max-dimension", "100", "-o", out], 2,
           "maximum dimension 100")
    # a side above libjpeg's own 65500: over the caller's limit by default, libjpeg's fixed
    # maximum (G4V_ERR_UNSUPPORTED, not a limit) once --max-dimension admits it
    wide = write("wide.jpg", jpeg_with_size(jpg, 65535, 16))
    expect("JPEG 65535 wide", [wide, "-o", out], 2, "maximum dimension 65500 (max_dimension)")
    expect("JPEG 65535 wide, --max-dimension 70000", [wide, "--max-dimension", "70000", "-o", out],
           2, "above libjpeg's maximum")

    # output errors -> 4
    expect("cannot write", [good, "-o", os.path.join(TMP, "no", "such", "dir", "x")], 4,
           "cannot write")
    # success writes all three outputs
    rc, msg = run([good, "-o", out])
    check("success writes all outputs", rc == 0 and len(outputs(out)) == 3, msg)
    left = [f for f in os.listdir(TMP) if ".tmp-" in f]
    check("no temporary files left", not left, str(left))
