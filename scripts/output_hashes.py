#!/usr/bin/python3
"""output_hashes.py - SHA-256 of `g4v encode`'s outputs over a grid of models, images and modes,
to show that a change which must not move any bit (a refactor, a merge) did not.

Grid: 5 synthetic checkpoints (tiny, tiny-oddk, e4b and 31b shapes cut to 2 layers, the unified
12B shape) x 4 images (two at a target size, two that are resized, one of them tall; PNG and
JPEG with an EXIF orientation) x FAST / PRECISE x 1 / 2 threads x every kernel table this CPU
has (G4V_ISA = native, avx512-nobf16, avx2, portable, as available) -- 5 x 4 x 2 x 2 x ISAs
outputs (240 on an AVX512-BF16 CPU). Each line: the case and the hash of the .npy written.

  output_hashes.py BUILD_DIR -o hashes.txt           record
  output_hashes.py BUILD_DIR --check hashes.txt      compare (exit 1 on any difference)

Hashes depend on the CPU's kernel tables (FAST differs across them by design, NUMERICS §6.3):
compare only files recorded on the same machine.
"""
import argparse
import hashlib
import io
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CKPTS = {
    "tiny": ["--config", "tiny", "--seed", "1"],
    "tiny-oddk": ["--config", "tiny-oddk", "--seed", "2"],
    "e4b-2l": ["--config", "e4b", "--layers", "2", "--seed", "3"],
    "31b-2l": ["--config", "31b", "--layers", "2", "--seed", "4", "--shards", "2"],
    "12b": ["--config", "12b", "--seed", "5", "--no-decoys"],
}
ISAS = ("", "avx512-nobf16", "avx2", "portable")


def images(d):
    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:480, 0:640]
    photo = (128 + 90 * np.sin(x / 23.0)[..., None] * np.cos(y / 17.0)[..., None] +
             rng.normal(0, 18, (480, 640, 3))).clip(0, 255).astype(np.uint8)
    out = {}
    def save(name, im, fmt, **kw):
        p = os.path.join(d, name)
        im.save(p, fmt, **kw)
        out[name] = p
    save("target-768x768.png", Image.fromarray(photo).resize((768, 768)), "PNG")
    save("target-432x336.png", Image.fromarray(photo[:336, :432]), "PNG")
    ex = Image.Exif()
    ex[0x0112] = 6
    save("resized-640x480-o6.jpg", Image.fromarray(photo), "JPEG", quality=90, exif=ex.tobytes())
    save("resized-tall-120x1500.png", Image.fromarray(np.ascontiguousarray(
        np.tile(photo[:, :120], (4, 1, 1))[:1500])), "PNG")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("-o", dest="out")
    g.add_argument("--check")
    ap.add_argument("--work", default=None, help="where checkpoints are kept (default BUILD/hashes)")
    a = ap.parse_args()
    g4v = os.path.join(a.build, "g4v")
    work = a.work or os.path.join(a.build, "hashes")
    os.makedirs(work, exist_ok=True)
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        imgs = images(tmp)
        for ck, args in CKPTS.items():
            path = os.path.join(work, ck)
            if not os.path.exists(os.path.join(path, "config.json")):
                subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools", "gen_checkpoint.py"),
                                path, *args], check=True)
            for isa in ISAS:
                env = dict(os.environ)
                if isa:
                    env["G4V_ISA"] = isa
                for iname, ipath in imgs.items():
                    for mode in ("fast", "precise"):
                        for threads in (1, 2):
                            o = os.path.join(tmp, "o.npy")
                            cmd = [g4v, "encode", "--model", path, ipath, "--tokens", "140",
                                   "--threads", str(threads), "--quiet", "-o", o]
                            if mode == "precise":
                                cmd.append("--precise")
                            subprocess.run(cmd, check=True, env=env, capture_output=True)
                            h = hashlib.sha256(open(o, "rb").read()).hexdigest()
                            lines.append(f"{ck} {isa or 'native'} {iname} {mode} t{threads} {h}")
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
        print(f"output_hashes: {len(lines)} outputs recorded in {a.out}")
        return 0
    want = dict(ln.rsplit(" ", 1) for ln in open(a.check).read().split("\n") if ln)
    got = dict(ln.rsplit(" ", 1) for ln in lines)
    diff = [k for k in got if want.get(k) != got[k]]
    for k in diff:
        print(f"differs: {k}")
    print(f"output_hashes: {len(got) - len(diff)} passed, {len(diff)} failed")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
