"""test_resize_torchvision.py - the torchvision resize mode against torch/transformers, byte for byte.

transformers (5.23) uses its torchvision backend by default when torchvision is installed
(AutoImageProcessor with backend=None), and the 12B's Gemma4UnifiedImageProcessor has no other.
Its resize is torch's uint8 antialiased bicubic, not Pillow's; `--resize torchvision` reproduces it
(docs/PREPROCESSING.md §6.6). Three parts, 0 differing bytes allowed in each:

  resize     image_tool's G4V_RESIZE_TORCH resize (dispatched kernels; the portable kernels and
             bottom-up row feeding must agree) against torchvision.transforms.v2.functional.resize
             (BICUBIC, antialias=True) on uint8 CHW tensors: random sizes up and down, one side
             unchanged, tiny and very elongated images, every budget's target sizes. The same
             cases are also resized by torch's generic (non-AVX) kernel, in a subprocess with
             ATEN_CPU_CAPABILITY=default, which must give the same bytes.
  preprocess `g4v preprocess --resize torchvision` on generated files (PNG RGB/gray/palette/alpha/
             16-bit, JPEG with EXIF orientations, WebP, GIF, BMP, every budget) against
             transformers.image_utils.load_image + Gemma4ImageProcessor: OUT.png, OUT.npy (the
             float32 bits) and OUT.positions.npy.
  unified    the same files against Gemma4UnifiedImageProcessor (12B): our patches, regrouped
             into its 48x48 merged patches, must equal its pixel_values bit for bit.

It also reports how often Pillow's resize (the default mode) differs from torch's on the resize
set. Needs torch, torchvision and transformers: run it with the venv that has them (tests/hf), or
set G4V_HF_PYTHON to that interpreter; without them it prints why and skips (exit 0, or the code
given with --skip-code).
usage: test_resize_torchvision.py [IMAGE_TOOL] [--skip-code N] [-k SUBSTRING] [--keep]
Environment: G4V_BIN (the g4v binary), G4V_BUILD_DIR, G4V_IMAGE_TOOL (or the first argument).
"""
import io
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args(argv):
    a = {"tool": os.environ.get("G4V_IMAGE_TOOL"), "skip": 0, "k": None, "keep": False}
    i = 1
    while i < len(argv):
        s = argv[i]
        if s == "--skip-code":
            a["skip"] = int(argv[i + 1])
            i += 1
        elif s == "-k":
            a["k"] = argv[i + 1]
            i += 1
        elif s == "--keep":
            a["keep"] = True
        else:
            a["tool"] = s
        i += 1
    return a


ARGS = parse_args(sys.argv)


def skip(why):
    print(f"SKIP test_resize_torchvision: {why}")
    sys.exit(ARGS["skip"])


try:
    import numpy as np
    import torch
    import torchvision  # noqa: F401
    import transformers  # noqa: F401
    from PIL import Image
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms.v2 import functional as tvF
    from transformers.image_utils import load_image
    from transformers.models.gemma4.image_processing_gemma4 import Gemma4ImageProcessor
except ImportError as e:
    alt = os.environ.get("G4V_HF_PYTHON")
    if alt and os.path.exists(alt) and os.path.abspath(alt) != os.path.abspath(sys.executable) \
            and not os.environ.get("G4V_HF_REEXEC"):
        os.environ["G4V_HF_REEXEC"] = "1"
        os.execv(alt, [alt] + sys.argv)
    skip(f"{e} (needs torch, torchvision, transformers: tests/hf/requirements.txt; "
         f"G4V_HF_PYTHON={alt or '(unset)'})")

try:
    from transformers.models.gemma4_unified.image_processing_gemma4_unified import \
        Gemma4UnifiedImageProcessor
except ImportError:
    Gemma4UnifiedImageProcessor = None

sys.path.insert(0, HERE)
import pillow_ref as ref  # noqa: E402  (content generators, target size, Pillow resize)

G4V = os.environ.get("G4V_BIN", "g4v")
BUILD = os.environ.get("G4V_BUILD_DIR", ".")
TOOL = ARGS["tool"] or os.path.join(BUILD, "tests", "image", "image_tool")
RNG = np.random.default_rng(20260523)
KINDS = ("noise", "gradient", "edges", "photo", "smooth")
BUDGETS = (70, 140, 280, 560, 1120)
failures = []


def fail(what):
    failures.append(what)
    print("FAIL " + what, flush=True)


def torch_resize(a, tw, th):
    """What the torchvision backend does to a uint8 HxWx3 array (aspect_ratio_preserving_resize:
    no resize at the same size)."""
    t = torch.from_numpy(np.ascontiguousarray(a)).permute(2, 0, 1)
    if (th, tw) == tuple(t.shape[-2:]):
        return a
    r = tvF.resize(t, [th, tw], interpolation=InterpolationMode.BICUBIC, antialias=True)
    return r.permute(1, 2, 0).numpy()


# ---- part 1: the resize ------------------------------------------------------------------------
def resize_cases():
    cases = []  # (group, w, h, ow, oh)
    for _ in range(70):  # random, up and down independently
        w, h = (int(v) for v in RNG.integers(1, 400, 2))
        ow, oh = (int(v) for v in RNG.integers(1, 400, 2))
        cases.append(("random", w, h, ow, oh))
    for _ in range(20):  # one side unchanged: one pass only
        w, h, o = (int(v) for v in RNG.integers(1, 300, 3))
        cases.append(("width unchanged", w, h, w, o))
        cases.append(("height unchanged", w, h, o, h))
    for w, h, ow, oh in ((1, 1, 1, 1), (1, 1, 48, 48), (2, 1, 3, 1), (1, 2, 1, 3), (3, 3, 7, 7),
                         (7, 7, 3, 3), (4, 1, 2, 1), (5, 3, 3, 5), (2, 2, 1, 1), (16, 16, 48, 48),
                         (48, 48, 48, 48), (97, 13, 48, 48)):
        cases.append(("tiny", w, h, ow, oh))
    for w, h in ((3000, 2), (2, 3000), (4000, 7), (1, 2500), (2500, 1), (600, 5)):
        th, tw = ref.target_size(h, w, int(RNG.choice(BUDGETS)))
        cases.append(("elongated", w, h, tw, th))
    for b in BUDGETS:  # the sizes the processor produces
        for _ in range(8):
            w, h = (int(v) for v in RNG.integers(20, 1600, 2))
            th, tw = ref.target_size(h, w, b)
            cases.append((f"budget {b}", w, h, tw, th))
    return cases


def run_tool(cases, inputs, order=2):
    """image_tool resize: order 2 = G4V_RESIZE_TORCH, 0 = Pillow 9.4 (our default mode)."""
    blob = bytearray()
    for (g, w, h, ow, oh), a in zip(cases, inputs):
        blob += struct.pack("<5I", w, h, ow, oh, order) + a.tobytes()
    r = subprocess.run([TOOL, "resize"], input=bytes(blob), capture_output=True)
    if r.returncode:
        fail(f"image_tool resize failed: {r.stderr.decode()}")
        return None
    out, pos, res = memoryview(r.stdout), 0, []
    for g, w, h, ow, oh in cases:
        n = ow * oh * 3
        res.append((out[pos], np.frombuffer(out[pos + 1:pos + 1 + n], np.uint8).reshape(oh, ow, 3)))
        pos += 1 + n
    return res


GENERIC_CHILD = r"""
import sys, numpy as np, torch
from torchvision.transforms import InterpolationMode
from torchvision.transforms.v2 import functional as tvF
d = np.load(sys.argv[1], allow_pickle=True)
out = []
for a, (tw, th) in zip(d["inputs"], d["sizes"]):
    t = torch.from_numpy(np.ascontiguousarray(a)).permute(2, 0, 1)
    r = t if (th, tw) == tuple(t.shape[-2:]) else tvF.resize(
        t, [int(th), int(tw)], interpolation=InterpolationMode.BICUBIC, antialias=True)
    out.append(r.permute(1, 2, 0).numpy())
np.savez(sys.argv[2], capability=torch.backends.cpu.get_cpu_capability(),
         **{f"o{i}": o for i, o in enumerate(out)})
"""


def part_resize(tmp):
    cases = resize_cases()
    inputs = [ref.content(KINDS[i % len(KINDS)], h, w, RNG) for i, (g, w, h, ow, oh) in
              enumerate(cases)]
    ours = run_tool(cases, inputs)
    pillow = run_tool(cases, inputs, order=0)
    if ours is None or pillow is None:
        return
    # torch's generic kernel (no AVX2): same bytes expected; computed in a child process
    np.savez(os.path.join(tmp, "in.npz"), inputs=np.array(inputs + [None], dtype=object)[:-1],
             sizes=np.array([(ow, oh) for g, w, h, ow, oh in cases]))
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default")
    r = subprocess.run([sys.executable, "-c", GENERIC_CHILD, os.path.join(tmp, "in.npz"),
                        os.path.join(tmp, "generic.npz")], env=env, capture_output=True, text=True)
    generic = np.load(os.path.join(tmp, "generic.npz")) if r.returncode == 0 else None
    if generic is None:
        fail(f"torch generic-kernel child failed: {r.stderr[-500:]}")
    groups, diff_bytes, total_bytes, maxdiff, cases_pillow_differs = {}, 0, 0, 0, 0
    hist = [0, 0, 0]  # bytes 1, 2, more levels apart
    for i, ((g, w, h, ow, oh), a, (status, mine)) in enumerate(zip(cases, inputs, ours)):
        exp = torch_resize(a, ow, oh)
        msg = ""
        if status:
            msg = ("portable kernels differ " if status & 1 else "") + \
                  ("bottom-up streaming differs " if status & 2 else "") + \
                  ("resize failed" if status & 4 else "")
        elif not np.array_equal(mine, exp):
            d = np.argwhere(mine != exp)
            y, x = d[0][:2]
            msg = (f"first differing pixel (x={x}, y={y}): ours {tuple(mine[y, x])} vs torch "
                   f"{tuple(exp[y, x])}; {len(d)} differing bytes")
        if generic is not None and not np.array_equal(generic[f"o{i}"], exp):
            msg += f" torch's generic kernel differs from its {torch.backends.cpu.get_cpu_capability()} one"
        s = groups.setdefault(g, [0, 0])
        s[1] += 1
        s[0] += not msg
        if msg:
            fail(f"resize case {i} {g} {w}x{h} -> {ow}x{oh}: {msg}")
        if (ow, oh) != (w, h):  # how far Pillow's resize (9.4, our default mode) is from torch's
            d = pillow[i][1].astype(np.int16) - exp
            diff_bytes += int(np.count_nonzero(d))
            total_bytes += d.size
            maxdiff = max(maxdiff, int(np.abs(d).max()))
            ad = np.abs(d)
            hist[0] += int(np.count_nonzero(ad == 1))
            hist[1] += int(np.count_nonzero(ad == 2))
            hist[2] += int(np.count_nonzero(ad > 2))
            cases_pillow_differs += bool(d.any())
    for g, (ok, n) in groups.items():
        print(f"resize {g:18s} {ok}/{n} identical to torch")
    cap = generic["capability"] if generic is not None else "?"
    print(f"resize: {len(cases)} cases, torch kernels {torch.backends.cpu.get_cpu_capability()} and "
          f"{cap} (generic) agree with ours")
    print(f"Pillow 9.4 BICUBIC (our default mode) vs torch on the resized cases: {diff_bytes}/{total_bytes} bytes differ "
          f"({100.0 * diff_bytes / max(total_bytes, 1):.2f}%), max {maxdiff} levels, in "
          f"{cases_pillow_differs} cases; by 1 level {hist[0]}, 2 levels {hist[1]}, more {hist[2]}")
    if diff_bytes == 0:
        fail("Pillow and torch agree everywhere: the resize set distinguishes nothing")


# ---- part 2 and 3: files through g4v preprocess ------------------------------------------------
def pil_bytes(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def jpeg_oriented(a, o):
    ex = Image.Exif()
    ex[0x0112] = o
    return pil_bytes(Image.fromarray(a), "JPEG", quality=92, exif=ex.tobytes())


def file_cases():
    c = []  # (name, bytes, budget)
    photo = ref.content("photo", 181, 263, RNG)
    im = Image.fromarray(photo)
    c.append(("png-rgb", pil_bytes(im, "PNG"), 280))
    c.append(("png-gray", pil_bytes(im.convert("L"), "PNG"), 280))
    c.append(("png-palette", pil_bytes(im.convert("P", palette=Image.ADAPTIVE, colors=100), "PNG"),
              140))
    rgba = np.dstack([photo, RNG.integers(0, 256, photo.shape[:2], dtype=np.uint8)])
    c.append(("png-rgba", pil_bytes(Image.fromarray(rgba, "RGBA"), "PNG"), 280))
    la = Image.merge("LA", (im.convert("L"), Image.fromarray(rgba[:, :, 3])))
    c.append(("png-gray-alpha", pil_bytes(la, "PNG"), 70))
    s16 = (ref.content("smooth", 97, 151, RNG).astype(np.uint16) * 257)
    c.append(("png-rgb16", ref.make_png(s16, 16, 2), 280))
    c.append(("png-gray16", ref.make_png(s16[:, :, 0].copy(), 16, 0), 140))
    for b in BUDGETS:
        for kind, (h, w) in (("noise", (311, 517)), ("smooth", (1203, 777))):
            a = ref.content(kind, h, w, RNG)
            c.append((f"png-{kind}-{w}x{h}-b{b}", pil_bytes(Image.fromarray(a), "PNG"), b))
    for h, w in ((30, 2000), (2000, 30), (1, 300), (300, 1), (48, 48), (96, 144), (16, 16),
                 (7, 5), (4000, 9)):
        a = ref.content(KINDS[(h + w) % len(KINDS)], h, w, RNG)
        c.append((f"png-{w}x{h}", pil_bytes(Image.fromarray(a), "PNG"), 280))
    for o in range(1, 9):
        c.append((f"jpeg-orient{o}", jpeg_oriented(ref.content("photo", 121, 203, RNG), o), 280))
    for sub in (0, 1, 2):
        c.append((f"jpeg-subsampling{sub}",
                  pil_bytes(im, "JPEG", quality=85, subsampling=sub), 560))
    c.append(("jpeg-gray", pil_bytes(im.convert("L"), "JPEG", quality=90), 280))
    c.append(("jpeg-progressive", pil_bytes(im, "JPEG", quality=80, progressive=True), 1120))
    c.append(("webp-lossless", pil_bytes(im, "WEBP", lossless=True), 280))
    c.append(("gif", pil_bytes(im.convert("P", palette=Image.ADAPTIVE, colors=64), "GIF"), 280))
    c.append(("bmp", pil_bytes(im, "BMP"), 140))
    return c


def run_g4v(path, budget, out, mode="torchvision"):
    r = subprocess.run([G4V, "preprocess", path, "--tokens", str(budget), "--resize", mode,
                        "-o", out], capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr.strip()
    return (np.asarray(Image.open(out + ".png").convert("RGB")), np.load(out + ".npy"),
            np.load(out + ".positions.npy")), ""


def merged(patches, pos, k=3, p=16):
    """Our [L, 768] 16x16 patches regrouped into the unified processor's (k*p)^2*3 patches (its
    patches_merge: a 48x48 block in raster order), with their positions."""
    gw, gh = pos[:, 0].max() + 1, pos[:, 1].max() + 1
    x = patches.reshape(gh, gw, p, p, 3).transpose(0, 2, 1, 3, 4).reshape(gh * p, gw * p, 3)
    mh, mw = gh // k, gw // k
    m = x.reshape(mh, k * p, mw, k * p, 3).transpose(0, 2, 1, 3, 4).reshape(mh * mw, -1)
    gx, gy = np.meshgrid(np.arange(mw), np.arange(mh), indexing="xy")
    return m, np.stack([gx, gy], -1).reshape(-1, 2)


def part_files(tmp):
    procs = {b: Gemma4ImageProcessor(max_soft_tokens=b) for b in BUDGETS}
    uprocs = ({b: Gemma4UnifiedImageProcessor(max_soft_tokens=b) for b in BUDGETS}
              if Gemma4UnifiedImageProcessor else None)
    ok = uok = n = 0
    pd = [0, 0, 0, 0, 0]  # Pillow mode vs torchvision mode: bytes differing, bytes, max, files, pv
    for name, data, budget in file_cases():
        if ARGS["k"] and ARGS["k"] not in name:
            continue
        n += 1
        path = os.path.join(tmp, name + ".img")
        with open(path, "wb") as f:
            f.write(data)
        ours, err = run_g4v(path, budget, os.path.join(tmp, name))
        if ours is None:
            fail(f"{name}: g4v preprocess failed: {err}")
            continue
        img, patches, pos = ours
        pil = load_image(path)  # transformers: open, exif_transpose, convert("RGB")
        r = procs[budget](images=pil, return_tensors="pt")
        L = int(r["num_soft_tokens_per_image"][0]) * 9
        pv = r["pixel_values"][0, :L].numpy()
        ppos = r["image_position_ids"][0, :L].numpy()
        exp = torch_resize(np.asarray(pil), img.shape[1], img.shape[0])
        msg = []
        if img.shape != exp.shape or not np.array_equal(img, exp):
            nd = int(np.count_nonzero(img != exp)) if img.shape == exp.shape else -1
            msg.append(f"resized image differs ({nd} bytes; shapes {img.shape} {exp.shape})")
        if patches.shape != pv.shape or not np.array_equal(patches.view(np.uint32),
                                                           pv.view(np.uint32)):
            msg.append("pixel_values differ")
        if not np.array_equal(pos, ppos):
            msg.append("positions differ")
        if msg:
            fail(f"{name} (budget {budget}): " + "; ".join(msg))
        else:
            ok += 1
        pil_mode, _ = run_g4v(path, budget, os.path.join(tmp, name + "-pillow"), "pillow")
        if pil_mode is not None and pil_mode[0].shape == img.shape:
            d = np.abs(pil_mode[0].astype(np.int16) - img)
            pd[0] += int(np.count_nonzero(d))
            pd[1] += d.size
            pd[2] = max(pd[2], int(d.max()))
            pd[3] += bool(d.any())
            pd[4] += int(np.count_nonzero(pil_mode[1].view(np.uint32) != patches.view(np.uint32)))
        if uprocs is not None:
            u = uprocs[budget](images=pil, return_tensors="pt")
            N = int(u["num_soft_tokens_per_image"][0])
            m, mpos = merged(patches, pos)
            upv = u["pixel_values"][0, :N].numpy()
            if m.shape != upv.shape or not np.array_equal(m.view(np.uint32), upv.view(np.uint32)) \
                    or not np.array_equal(mpos, u["image_position_ids"][0, :N].numpy()):
                fail(f"{name} (budget {budget}): Gemma4UnifiedImageProcessor's pixel values differ")
            else:
                uok += 1
    print(f"preprocess: {ok}/{n} files identical to Gemma4ImageProcessor (torchvision backend)")
    print(f"--resize pillow vs torchvision on these files: {pd[0]}/{pd[1]} resized bytes differ "
          f"({100.0 * pd[0] / max(pd[1], 1):.2f}%), max {pd[2]} levels, in {pd[3]} files; "
          f"{pd[4]} pixel values differ ({100.0 * pd[4] / max(pd[1], 1):.1f}%, with the rescale)")
    if uprocs is not None:
        print(f"unified: {uok}/{n} files identical to Gemma4UnifiedImageProcessor")
    else:
        print("unified: Gemma4UnifiedImageProcessor not in this transformers; not compared")


def main():
    t0 = time.time()
    print(f"torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()}), torchvision "
          f"{torchvision.__version__}, transformers {transformers.__version__}")
    try:  # which backend AutoImageProcessor picks with backend=None (the documented default)
        from transformers.models.auto.image_processing_auto import _resolve_backend
        print(f"AutoImageProcessor default backend here: {_resolve_backend(None, None, None)}")
    except Exception as e:  # a private helper: informative only
        print(f"(default backend not determined: {e})")
    if not os.path.exists(TOOL):
        fail(f"image_tool not found at {TOOL}")
    tmp = tempfile.mkdtemp(prefix="g4v_tv_")
    try:
        if os.path.exists(TOOL) and not ARGS["k"]:
            part_resize(tmp)
        part_files(tmp)
    finally:
        if ARGS["keep"]:
            print("kept", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAILED:", f)
    print(f"test_resize_torchvision: {'FAIL (%d)' % len(failures) if failures else 'all passed'} "
          f"({time.time() - t0:.1f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
