#!/usr/bin/python3
"""test_cli_encode.py - `g4v encode` as a user meets it: several images, directories and @lists,
.npy / directory / .safetensors outputs (parsed here with a small independent reader, checked
against the float64 reference for one image), --json lines, --bf16, --no-exif, --quiet, and
the exit codes and messages for bad input (missing and truncated images, a corrupted
safetensors header, wrong tensor shapes, unsupported budgets, tiny images, a wrong model
directory, an unwritable output, keep-going over a bad image in a batch). `torch` is not
installed, so safetensors is checked with the reader below (format: u64 LE header length,
JSON header, raw little-endian data).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from pyutil import check, target_size  # noqa: E402
import reference  # noqa: E402


read_safetensors = pyutil.st_tensors  # ({name: float32 array}, metadata, header length)


def g4v(*args):
    return pyutil.g4v("encode", *args)


def on_terminal(cmd):
    """stdout of cmd run with its stdout on a pseudo-terminal (stderr discarded)."""
    import pty
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdout=slave, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    p.wait()
    os.close(master)
    return out.decode(errors="replace")


def test_cli_encode():
    with tempfile.TemporaryDirectory() as tmp:
        ck = os.path.join(tmp, "tiny")
        pyutil.gen_checkpoint(ck, "--config", "tiny", "--seed", "4", quiet=True)
        rng = np.random.default_rng(7)
        imgs = os.path.join(tmp, "imgs")
        os.mkdir(imgs)
        sizes = {"a.png": (100, 150), "b.png": (64, 90), "c.jpg": (120, 80)}
        arrays = {}
        for name, (h, w) in sizes.items():
            arrays[name] = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
            Image.fromarray(arrays[name]).save(os.path.join(imgs, name))
        open(os.path.join(imgs, "notes.txt"), "w").write("not an image, skipped by extension")
        paths = [os.path.join(imgs, n) for n in sorted(sizes)]

        # --- a directory of images into a .safetensors, precise, checked against float64 ---
        st = os.path.join(tmp, "out.safetensors")
        r = g4v("--model", ck, imgs, "--tokens", "70", "--precise", "--threads", "2", "-o", st)
        check(r.returncode == 0, f"dir -> safetensors exit 0 (got {r.returncode}: {r.stderr[-300:]})")
        if r.returncode == 0:
            tens, meta, hlen = read_safetensors(st)
            check(hlen % 8 == 0, "safetensors header length is a multiple of 8")
            check(sorted(tens) == ["a", "b", "c"], f"one tensor per image, named after it ({sorted(tens)})")
            h, w = sizes["a.png"]
            th, tw = target_size(h, w, 70)
            resized = pyutil.pillow_resize(arrays["a.png"], tw, th)
            ref = reference.encode(reference.Checkpoint(ck), resized)
            a = tens.get("a")
            ok = a is not None and a.shape == ref.shape
            rel = np.linalg.norm(a - ref) / np.linalg.norm(ref) if ok else 1.0
            check(ok and rel <= 1e-5, f"a.png tensor vs float64 reference: rel RMSE {rel:.2e} <= 1e-5")
            n = (th // 48) * (tw // 48)
            check(meta.get("a.tokens") == str(n) and meta.get("a.grid") == f"{tw // 48}x{th // 48}"
                  and meta.get("a.budget") == "70" and meta.get("a.source") == paths[0]
                  and meta.get("a.original_size") == f"{w}x{h}"
                  and meta.get("a.target_size") == f"{tw}x{th}",
                  f"per-tensor metadata as strings ({ {k: v for k, v in meta.items() if k.startswith('a.')} })")
            spans = r.stdout.splitlines()
            check(len(spans) == 9 and spans[0] == "# " + paths[0] and
                  spans[2] == f"ids: 255999 258880x{n} 258882", "three '# file' + span + ids blocks")

        # --- same images as a list, into a directory of .npy, fast mode; --json lines ---
        lst = os.path.join(tmp, "list.txt")
        open(lst, "w").write("# comment\n" + "\n".join(paths) + "\n\n")
        outdir = os.path.join(tmp, "npys")
        r = g4v("--model", ck, "@" + lst, "--tokens", "70", "--json", "-o", outdir)
        check(r.returncode == 0, f"@list -> directory exit 0 (got {r.returncode}: {r.stderr[-300:]})")
        lines = [json.loads(x) for x in r.stdout.splitlines()]
        check(len(lines) == 3 and all(d["ok"] for d in lines), "--json: one object per image")
        if lines:
            d = lines[0]
            h, w = sizes["a.png"]
            th, tw = target_size(h, w, 70)
            check(d["file"] == paths[0] and d["original_size"] == [w, h] and
                  d["target_size"] == [tw, th] and d["tokens"] == (th // 48) * (tw // 48) and
                  d["seconds"] > 0 and d["output"] == os.path.join(outdir, "a.npy") and
                  d["prompt_ids"] == {"boi": 255999, "image": 258880, "eoi": 258882},
                  f"--json fields ({d})")
        if r.returncode == 0 and os.path.exists(st):
            tens, _, _ = read_safetensors(st)
            for name in ("a", "b", "c"):
                x = np.load(os.path.join(outdir, name + ".npy"))
                rel = np.linalg.norm(x - tens[name]) / np.linalg.norm(tens[name])
                check(x.dtype == np.float32 and x.shape == tens[name].shape and rel < 5e-3,
                      f"{name}.npy (fast) ~ safetensors (precise): rel {rel:.2e}")

        # --- --bf16 into .npy (uint16 bits) and safetensors (BF16); --quiet ---
        one = os.path.join(tmp, "one.npy")
        r = g4v("--model", ck, paths[0], "--tokens", "70", "--bf16", "--quiet", "-o", one)
        check(r.returncode == 0 and r.stdout == "", f"--bf16 --quiet: exit 0, no stdout ({r.stderr[-200:]})")
        r2 = g4v("--model", ck, paths[0], "--tokens", "70", "-q", "-o", os.path.join(tmp, "f.npy"))
        if r.returncode == 0 and r2.returncode == 0:
            b = np.load(one)
            f = np.load(os.path.join(tmp, "f.npy"))
            u = f.view(np.uint32).astype(np.uint64)
            rne = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)  # finite values
            check(b.dtype == np.uint16 and np.array_equal(b, rne), "--bf16 .npy = RNE of the f32 output")
        stb = os.path.join(tmp, "b.safetensors")
        r = g4v("--model", ck, paths[0], paths[1], "--tokens", "70", "--bf16", "-q", "-o", stb)
        if r.returncode == 0:
            tens, _, _ = read_safetensors(stb)
            check(tens["a"].shape == f.shape and np.allclose(tens["a"], f, rtol=1e-2, atol=1e-2),
                  "BF16 safetensors tensor reads back")
        else:
            check(False, f"--bf16 safetensors exit 0 (got {r.returncode}: {r.stderr[-200:]})")

        # --- EXIF: orientation 6 swaps the size unless --no-exif ---
        rot = os.path.join(tmp, "rot.jpg")
        ex = Image.Exif()
        ex[0x0112] = 6
        Image.fromarray(arrays["a.png"]).save(rot, exif=ex)
        r = g4v("--model", ck, rot, "--tokens", "70", "--json", "-o", os.path.join(tmp, "r.npy"))
        r2 = g4v("--model", ck, rot, "--tokens", "70", "--json", "--no-exif", "-o", os.path.join(tmp, "r.npy"))
        try:
            check(json.loads(r.stdout)["original_size"] == [100, 150] and
                  json.loads(r2.stdout)["original_size"] == [150, 100], "EXIF applied / --no-exif")
        except (ValueError, KeyError):
            check(False, f"EXIF runs gave JSON ({r.stdout[:100]!r}, {r2.stdout[:100]!r})")

        # --- a bad image in a batch: reported, skipped, others written, exit 2 ---
        bad = os.path.join(tmp, "trunc.png")
        data = open(paths[0], "rb").read()
        open(bad, "wb").write(data[: len(data) // 2])
        batch = os.path.join(tmp, "batch")
        r = g4v("--model", ck, paths[0], bad, paths[1], "--tokens", "70", "--json", "-o", batch)
        js = [json.loads(x) for x in r.stdout.splitlines()]
        check(r.returncode == 2 and len(js) == 3 and [d["ok"] for d in js] == [True, False, True]
              and os.path.exists(os.path.join(batch, "a.npy"))
              and os.path.exists(os.path.join(batch, "b.npy")) and "trunc.png" in r.stderr
              and "1 of 3 images failed" in r.stderr,
              f"batch with a truncated image: exit 2, others written (got {r.returncode}: {r.stderr[-300:]})")

        # --- file names that are not UTF-8 (Latin-1 "café", a lone 0xff): the --json lines and the
        # safetensors header stay strict UTF-8 JSON (bad bytes become '?'), one tensor each ---
        odd = [os.path.join(tmp.encode(), b"caf\xe9.png"), os.path.join(tmp.encode(), b"x\xff.png")]
        for o in odd:
            shutil.copyfile(paths[0], o)
        st_out = os.path.join(tmp, "odd.safetensors")
        bad_json = os.path.join(tmp.encode(), b"missing\xfe.png")
        r = subprocess.run([pyutil.BIN.encode(), b"encode", b"--model", ck.encode(), *odd, bad_json,
                            b"--tokens", b"70", b"--json", b"-o", st_out.encode()], capture_output=True)
        try:
            js = [json.loads(x.decode("utf-8", errors="strict")) for x in r.stdout.splitlines()]
            _, smeta, _ = read_safetensors(st_out)
            names = sorted(k.split(".")[0] for k in smeta if k.endswith(".source"))
            ok = (r.returncode == 2 and [d["ok"] for d in js] == [True, True, False]
                  and js[0]["file"].endswith("caf?.png") and "missing?.png" in js[2]["error"]
                  and names == ["caf?", "x?"])
        except ValueError as e:
            ok, js, names = False, str(e), None
        check(ok, f"non-UTF-8 file names: JSON lines and safetensors header decode ({js} {names})")

        # --- error cases: exit code + a message naming the cause ---
        corrupt = os.path.join(tmp, "corrupt")
        shutil.copytree(ck, corrupt)
        with open(os.path.join(corrupt, "model.safetensors"), "r+b") as f:
            f.seek(8)
            f.write(b"{not json at all")
        shapes = os.path.join(tmp, "shapes")
        shutil.copytree(ck, shapes)
        cfgp = os.path.join(shapes, "config.json")
        cfg = json.load(open(cfgp))
        cfg["vision_config"]["intermediate_size"] = cfg["vision_config"]["intermediate_size"] * 2
        json.dump(cfg, open(cfgp, "w"))
        out = os.path.join(tmp, "o.npy")
        small = os.path.join(tmp, "small.png")
        Image.fromarray(np.full((1, 1, 3), 200, np.uint8)).save(small)
        wide = os.path.join(tmp, "wide.png")
        Image.fromarray(np.zeros((1, 3000, 3), np.uint8)).save(wide)
        ro = os.path.join(tmp, "ro")  # a regular file: nothing can be created below it, even by root
        open(ro, "w").write("x")
        cases = [
            ("missing image", [paths[0].replace("a.png", "zz.png")], 2, "zz.png"),
            ("truncated image", [bad], 2, "trunc.png"),
            ("not an image", [lst], 2, "list.txt"),
            ("unsupported budget", ["--tokens", "300", paths[0]], 1, "300"),
            ("bad .npy image", [os.path.join(outdir, "a.npy")], 2, "uint8 [H, W, 3]"),
            ("corrupted safetensors header", ["--model", corrupt, paths[0]], 3, "model.safetensors"),
            ("wrong tensor shape", ["--model", shapes, paths[0]], 3, "shape"),
            ("wrong model dir", ["--model", imgs, paths[0]], 3, "config.json"),
            ("missing model dir", ["--model", os.path.join(tmp, "none")], 3, "none"),
            ("unwritable output", [paths[0], "-o", os.path.join(ro, "x.npy")], 4, "ro"),
            ("unwritable output dir", [paths[0], paths[1], "-o", os.path.join(ro, "d")], 4, "ro/d"),
            ("several images into one .npy", [paths[0], paths[1]], 1, ".safetensors"),
            ("missing @list", ["@" + os.path.join(tmp, "nolist.txt")], 1, "nolist.txt"),
            ("no image", [], 1, "IMAGE"),
        ]
        for name, args, want, needle in cases:
            full = list(args)
            if "--model" not in full:
                full = ["--model", ck] + full
            if "-o" not in full:
                full += ["-o", out]
            if name == "missing model dir":
                full += [paths[0]]
            r = g4v("--tokens", "70", *full)
            check(r.returncode == want and needle in r.stderr,
                  f"{name}: exit {want}, message names '{needle}' (got {r.returncode}: {r.stderr.strip()[-160:]})")
        # tiny and extreme images are upscaled like transformers does (not an error)
        for name, img, want_tokens in (("1x1 image", small, (384 // 48) ** 2),
                                       ("1x3000 image", wide, None)):
            r = g4v("--model", ck, img, "--tokens", "70", "--json", "-o", out)
            d = json.loads(r.stdout) if r.returncode == 0 else {}
            th, tw = target_size(*Image.open(img).size[::-1], 70)
            check(r.returncode == 0 and d.get("target_size") == [tw, th],
                  f"{name}: encoded at {tw}x{th} (got {r.returncode}: {r.stderr.strip()[-160:]})")
        # decoded pixels as a raw uint8 [H, W, 3] .npy give the PNG's tokens bit for bit; a file
        # named .npy without the magic is decoded by content; a truncated .npy is refused
        rgb = os.path.join(tmp, "a_rgb.npy")
        np.save(rgb, arrays["a.png"])
        outs = {k: os.path.join(tmp, f"from_{k}.npy") for k in ("png", "npy", "disguised")}
        disguised = os.path.join(tmp, "png_bytes.npy")
        shutil.copy(paths[0], disguised)
        codes = [g4v("--model", ck, src, "--tokens", "70", "-q", "-o", outs[k]).returncode
                 for k, src in (("png", paths[0]), ("npy", rgb), ("disguised", disguised))]
        same = codes == [0, 0, 0] and all(np.array_equal(np.load(outs["png"]), np.load(outs[k]))
                                          for k in ("npy", "disguised"))
        check(same, f".npy pixels and a PNG named .npy encode as the PNG does (exits {codes})")
        short = os.path.join(tmp, "short.npy")
        open(short, "wb").write(open(rgb, "rb").read()[:-10])
        r = g4v("--model", ck, short, "--tokens", "70", "-o", out)
        check(r.returncode == 2 and "(and complete)" in r.stderr,
              f"truncated .npy: exit 2 (got {r.returncode}: {r.stderr.strip()[-160:]})")
        # stdout on a terminal: the span is summarised; piped: the whole span (scripts rely on
        # it); --full-span: the whole span on a terminal too. A TIFF in the directory is picked
        # up by its extension.
        tif = os.path.join(imgs, "d.tif")
        Image.fromarray(arrays["a.png"]).save(tif, compression="tiff_lzw")
        piped = g4v("--model", ck, paths[0], "--tokens", "70", "-o", out)
        n = piped.stdout.count("<|image|>")
        check(piped.returncode == 0 and n > 0 and piped.stdout.startswith("<|image><|image|>"),
              f"piped: the whole span ({n} image tokens)")
        for extra, want in (((), f"<|image> + {n} x <|image|> + <image|>\r\nids:"),
                            (("--full-span",), "<|image>" + "<|image|>" * n + "<image|>\r\n")):
            tty = on_terminal([pyutil.BIN, "encode",
                               "--model", ck, paths[0], "--tokens", "70", "-o", out, *extra])
            check(tty.startswith(want), f"terminal {extra}: starts with {want[:60]!r} "
                                        f"(got {tty[:80]!r})")
        r = g4v("--model", ck, imgs, "--tokens", "70", "--json", "-o", os.path.join(tmp, "d"))
        files = [json.loads(x)["file"] for x in r.stdout.splitlines()]
        check(r.returncode == 0 and files[-1] == tif and len(files) == 4,
              f"a directory's .tif is encoded ({files})")
        os.remove(tif)
        r = g4v("--help")
        check(r.returncode == 0 and "--safetensors" not in r.stdout and "exit codes" in r.stdout
              and "--json" in r.stdout and "@LIST" in r.stdout, "encode --help is complete")
        r = pyutil.g4v("--help")
        check(r.returncode == 0 and "encode" in r.stdout and "exit codes" in r.stdout, "g4v --help")

