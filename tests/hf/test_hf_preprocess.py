#!/usr/bin/env python3
"""test_hf_preprocess.py - our preprocessing against transformers' own Gemma 4 image processors.

What a transformers user runs: `load_image(path)` (Image.open, exif_transpose, convert RGB), then
the processor. transformers 5.23 has two:

  Gemma4ImageProcessorPil   Pillow resize (BICUBIC) + float64 rescale; what `g4v preprocess`
                            (and so `g4v encode`) reproduces: compared byte for byte (float32
                            pixel_values and positions, padding stripped) -- 0 differences allowed
  Gemma4ImageProcessor      torchvision resize of a uint8 tensor (bicubic, antialias), then
                            x * (1/255) in float32; AutoImageProcessor picks it whenever
                            torchvision is installed (checked here). Measured against ours: the
                            share of uint8 values and of float32 pixel values that differ, and
                            the largest difference. With `--resize torchvision` (when our build
                            has it) compared byte for byte too.

Inputs: real photos (scikit-image's sample images, unpacked by scripts/hf-env.sh) in variants a
user meets (JPEG with EXIF orientations, PNG RGB / grayscale / palette / alpha / LA / 16-bit,
WebP, GIF, BMP, CMYK JPEG), every budget; plus the whole synthetic fixture corpus of
tests/image/test_preprocess_pillow.py (modes, EXIF/XMP encodings, JPEG/PNG/WebP/GIF/BMP variants,
tall images), decoded here by the pinned Pillow instead of Debian's.

usage: test_hf_preprocess.py [--quick] [--json OUT.json]
"""
import argparse
import io
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

import hfutil
from hfutil import check

from transformers import AutoImageProcessor
from transformers.image_utils import load_image
from transformers.models.gemma4.image_processing_gemma4 import Gemma4ImageProcessor
from transformers.models.gemma4.image_processing_pil_gemma4 import Gemma4ImageProcessorPil

import PIL

BUDGETS = (70, 140, 280, 560, 1120)
_PV = tuple(int(x) for x in PIL.__version__.split(".")[:2])
PILLOW_ORDER = "13" if _PV >= (13, 0) else "12.2" if _PV >= (12, 2) else "9"
PHOTOS = ["astronaut.png", "chelsea.png", "coffee.png", "rocket.jpg", "hubble_deep_field.jpg",
          "retina.jpg", "motorcycle_left.png", "camera.png", "moon.png", "ihc.png", "logo.png",
          "horse.png", "page.png", "coins.png", "grass.png"]


# Synthetic fixtures that Pillow >= 10 decodes differently from Pillow 9.4, whose decoding rules
# we follow (docs/PREPROCESSING.md §9): expected to differ here, and checked to still differ (a
# case that becomes identical must leave this list). Name prefix -> what changed in Pillow.
PILLOW_DECODE_CHANGES = {
    "fixture:modes/P-index-past-PLTE": "palette indices past the palette: black, not 9.4's gray ramp",
    "fixture:png/palette8": "palette indices past the palette: black, not 9.4's gray ramp",
    "fixture:gif/indices-past-palette": "palette indices past the palette",
    "fixture:bmp/pal8-20-colors": "palette indices past the palette",
    "fixture:bmp/pal8-offset-after-header": "palette indices past the palette",
    "fixture:bmp/rle8": "palette indices past the palette",
    "fixture:bmp/rle4": "palette indices past the palette",
    "fixture:modes/P-tRNS-int": "transparency (tRNS) in the conversion to RGB",
    "fixture:png/palette1-trns": "transparency (tRNS) in the conversion to RGB",
    "fixture:png/gray8-trns": "transparency (tRNS) in the conversion to RGB",
    "fixture:gif/pillow-transparency": "GIF transparency in the conversion to RGB",
    "fixture:gif/offset-transparent-fill": "GIF transparency in the conversion to RGB",
    "fixture:gif/extensions-before-frame": "GIF transparency in the conversion to RGB",
    **{f"fixture:exif/jpeg-xmp-only-{v}": "JPEG XMP orientation is applied (Pillow 11.2.1)"
       for v in range(2, 9)},
    "fixture:exif-encodings/duplicate-tag": "EXIF parsing (repeated tag, several segments)",
    "fixture:exif-encodings/two-exif-last-wins": "EXIF parsing (repeated tag, several segments)",
    "fixture:exif-encodings/exif-no-tag-then-": "EXIF parsing (repeated tag, several segments)",
}


def decode_change(name):
    return next((why for k, why in PILLOW_DECODE_CHANGES.items() if name.startswith(k)), None)


def exif_orientation(v):
    ex = Image.Exif()
    ex[0x0112] = v
    return ex.tobytes()


def photo_variants(quick):
    """(name, bytes, budget) for the real photos in the forms users hand over."""
    out = []
    for i, name in enumerate(PHOTOS[:5] if quick else PHOTOS):
        raw = open(hfutil.photo(name), "rb").read()
        im = Image.open(io.BytesIO(raw))
        b = BUDGETS[i % len(BUDGETS)]
        out.append((name, raw, b))
        rgb = im.convert("RGB")

        def enc(img, fmt, **kw):
            buf = io.BytesIO()
            img.save(buf, fmt, **kw)
            return buf.getvalue()
        variants = [
            ("jpeg-exif6", enc(rgb, "JPEG", quality=92, exif=exif_orientation(6))),
            ("jpeg-exif3", enc(rgb, "JPEG", quality=85, exif=exif_orientation(3))),
            ("jpeg-exif8", enc(rgb, "JPEG", quality=75, exif=exif_orientation(8), subsampling=0)),
            ("gray", enc(rgb.convert("L"), "PNG")),
            ("palette", enc(rgb.quantize(256), "PNG")),
            ("alpha", enc(Image.merge("RGBA", (*rgb.split(), rgb.convert("L").point(lambda v: 255 - v // 2))), "PNG")),
            ("la", enc(rgb.convert("LA"), "PNG")),
            ("gray16", enc(Image.fromarray(np.asarray(rgb.convert("L"), "<u2") * 257), "PNG")),
            ("webp", enc(rgb, "WEBP", quality=90)),
            ("gif", enc(rgb, "GIF")),
            ("bmp", enc(rgb, "BMP")),
            ("cmyk", enc(rgb.convert("CMYK"), "JPEG", quality=90)),
            ("png-exif6", enc(rgb, "PNG", exif=exif_orientation(6))),
        ]
        if quick:
            variants = variants[:4]
        for k, (vname, data) in enumerate(variants):
            out.append((f"{name}:{vname}", data, BUDGETS[(i + k + 1) % len(BUDGETS)]))
    return out


DUMP_FIXTURES = """
import json, os, sys
sys.path.insert(0, {image_dir!r})
import test_preprocess_pillow as t
for build in (t.build_modes, t.build_exif, t.build_jpeg, t.build_png, t.build_webp, t.build_gif,
              t.build_bmp, t.build_budgets, t.build_tall, t.build_order13):
    build()
out, index = {out!r}, []
os.makedirs(out, exist_ok=True)
for i, c in enumerate(t.CASES):
    if c["order"] not in ("9", "13"):
        continue
    path = os.path.join(out, "%03d.img" % i)
    open(path, "wb").write(c["data"])
    index.append(dict(name="fixture:%s/%s" % (c["group"], c["name"]), path=path,
                      tokens=c["tokens"], exif=c["exif"]))
json.dump(index, open(os.path.join(out, "index.json"), "w"))
"""


def fixture_corpus(tmp):
    """tests/image/test_preprocess_pillow.py's generated files, written by Debian's python3 and
    Pillow 9.4 as that test makes them (the pinned Pillow cannot write some of them, e.g. mode I
    PNG): (name, bytes, budget, exif)."""
    out = os.path.join(tmp, "fixtures")
    code = DUMP_FIXTURES.format(image_dir=os.path.join(hfutil.ROOT, "tests", "image"), out=out)
    hfutil.run([hfutil.DEBIAN_PYTHON, "-c", code])
    index = json.load(open(os.path.join(out, "index.json")))
    return [(c["name"], open(c["path"], "rb").read(), c["tokens"], c["exif"]) for c in index]


def hf_pixels(proc, path, budget, exif):
    """pixel_values and positions as the processor gives them, padding stripped."""
    im = load_image(path) if exif else Image.open(path).convert("RGB")
    f = proc(max_soft_tokens=budget)(images=im, return_tensors="np")
    n = int(f["num_soft_tokens_per_image"][0]) * 9
    return f["pixel_values"][0][:n], f["image_position_ids"][0][:n]


def ours(path, budget, exif, tmp, resize=None):
    prefix = os.path.join(tmp, "out")
    cmd = [hfutil.G4V, "preprocess", path, "--tokens", str(budget), "-o", prefix]
    if not exif:
        cmd.append("--no-exif")
    if resize:
        cmd += ["--resize", resize]
    else:
        cmd += ["--pillow", PILLOW_ORDER]  # the resize pass order of the Pillow we compare with
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        return None, r
    return (np.load(prefix + ".npy"), np.load(prefix + ".positions.npy")), r


def ours_has_torchvision_resize():
    r = subprocess.run([hfutil.G4V, "preprocess", "--help"], capture_output=True, text=True)
    return "--resize" in (r.stdout + r.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()

    # Which processor does a transformers user get? (a processor config as the Hub ships it)
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "preprocessor_config.json"), "w") as f:
            json.dump({"image_processor_type": "Gemma4ImageProcessor", "max_soft_tokens": 280,
                       "patch_size": 16, "pooling_kernel_size": 3}, f)
        auto = type(AutoImageProcessor.from_pretrained(d)).__name__
    check(auto == "Gemma4ImageProcessor",
          f"AutoImageProcessor with torchvision installed gives {auto} (the torchvision one)",
          auto=auto)

    tv_exact = ours_has_torchvision_resize()
    cases = [(n, d, b, True) for n, d, b in photo_variants(a.quick)]
    if not a.quick:
        os.makedirs(hfutil.WORK, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=hfutil.WORK) as d:
            cases += fixture_corpus(d)
    stats = {"cases": 0, "pil_identical": 0, "tv_u8_diff": 0, "tv_u8_total": 0, "tv_f32_diff": 0,
             "tv_max_levels": 0, "tv_images_differing": 0, "tv_exact": 0, "refused_both": 0,
             "known_decode_diffs": 0}
    with tempfile.TemporaryDirectory() as tmp:
        for name, data, budget, exif in cases:
            path = os.path.join(tmp, "in.img")
            with open(path, "wb") as f:
                f.write(data)
            try:
                hp, hpos = hf_pixels(Gemma4ImageProcessorPil, path, budget, exif)
                herr = None
            except Exception as e:  # Pillow or transformers refuses the file
                herr = f"{type(e).__name__}: {e}"
            got, r = ours(path, budget, exif, tmp)
            stats["cases"] += 1
            if herr is not None:
                ok = got is None and r.returncode == 2
                stats["refused_both"] += ok
                check(ok, f"{name} ({budget}): transformers refuses ({herr[:60]}); g4v exit "
                      f"{r.returncode} (2 expected)")
                continue
            if got is None:
                check(False, f"{name} ({budget}): g4v preprocess failed: {r.stderr.strip()[:200]}")
                continue
            op, opos = got
            same = (op.shape == hp.shape and op.view(np.uint32).tobytes() ==
                    hp.astype(np.float32).view(np.uint32).tobytes() and
                    np.array_equal(opos, hpos))
            stats["pil_identical"] += same
            why = decode_change(name)
            if why:
                stats["known_decode_diffs"] += not same
                check(not same, f"{name}: differs as listed ({why})" if not same else
                      f"{name}: listed as a Pillow decode change but identical: update the list")
                continue
            if not same:
                detail = f"shapes {op.shape} {hp.shape}"
                if op.shape == hp.shape:
                    dd = np.abs(op - hp)
                    detail = f"{(dd > 0).mean():.2%} values differ, max {dd.max() * 255:.2f} levels"
                check(False, f"{name} ({budget}): identical to Gemma4ImageProcessorPil ({detail})")
            # the torchvision processor, measured
            tp, tpos = hf_pixels(Gemma4ImageProcessor, path, budget, exif)
            if tp.shape == op.shape:
                du8 = np.abs(np.rint(tp * 255) - np.rint(op * 255))
                stats["tv_u8_diff"] += int((du8 > 0).sum())
                stats["tv_u8_total"] += du8.size
                stats["tv_f32_diff"] += int((tp.astype(np.float32) != op).sum())
                stats["tv_max_levels"] = max(stats["tv_max_levels"], int(du8.max()))
                stats["tv_images_differing"] += bool((du8 > 0).any())
            if tv_exact:
                got_tv, r = ours(path, budget, exif, tmp, resize="torchvision")
                exact = got_tv is not None and got_tv[0].shape == tp.shape and \
                    got_tv[0].view(np.uint32).tobytes() == tp.astype(np.float32).view(np.uint32).tobytes()
                stats["tv_exact"] += exact
                if not exact:
                    check(False, f"{name} ({budget}): --resize torchvision identical to "
                          f"Gemma4ImageProcessor")
    n = stats["cases"] - stats["refused_both"] - stats["known_decode_diffs"]
    check(stats["pil_identical"] == n,
          f"Gemma4ImageProcessorPil (Pillow {PIL.__version__}): {stats['pil_identical']}/{n} "
          f"inputs byte-identical ({stats['refused_both']} more refused by both, "
          f"{stats['known_decode_diffs']} listed Pillow >= 10 decode changes)", **stats)
    if stats["tv_u8_total"]:
        print(f"  torchvision processor vs ours (Pillow rule): {stats['tv_images_differing']}/{n} "
              f"images differ; {stats['tv_u8_diff'] / stats['tv_u8_total']:.3%} of uint8 values, "
              f"max {stats['tv_max_levels']} levels; {stats['tv_f32_diff'] / stats['tv_u8_total']:.3%} "
              f"of float32 pixel values differ")
    if tv_exact:
        check(stats["tv_exact"] == n, f"--resize torchvision: {stats['tv_exact']}/{n} inputs "
              f"byte-identical to Gemma4ImageProcessor")
    return hfutil.finish("test_hf_preprocess", a.json)


if __name__ == "__main__":
    sys.exit(main())
