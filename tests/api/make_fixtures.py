#!/usr/bin/python3
"""make_fixtures.py OUT - fixtures for the API tests: a synthetic tiny checkpoint (OUT/tiny) and
a few images of different sizes and formats (OUT/img*.{png,jpg}), written with Pillow. One JPEG
carries EXIF orientation 6 (rotate 90), so the exif option has something to change. ~2 s."""
import os
import subprocess
import sys

import numpy as np
from PIL import Image

SRC = os.environ.get("G4V_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    subprocess.run([sys.executable, os.path.join(SRC, "tools", "gen_checkpoint.py"),
                    os.path.join(out, "tiny"), "--config", "tiny", "--seed", "3"], check=True)
    rng = np.random.default_rng(11)
    sizes = [(100, 150), (64, 64), (200, 90), (33, 257), (120, 120), (75, 140)]
    for i, (h, w) in enumerate(sizes):
        # smooth gradient + noise: realistic enough for JPEG, distinct per image
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([(x * 255 // max(w - 1, 1)), (y * 255 // max(h - 1, 1)),
                         ((x + y + 40 * i) % 256)], axis=-1)
        a = np.clip(base + rng.integers(-20, 21, base.shape), 0, 255).astype(np.uint8)
        Image.fromarray(a).save(os.path.join(out, f"img{i}.png"))
    a = rng.integers(0, 256, (90, 160, 3), dtype=np.uint8)
    exif = Image.Exif()
    exif[0x0112] = 6
    Image.fromarray(a).save(os.path.join(out, "rot6.jpg"), quality=90, exif=exif)
    print("fixtures in", out)


if __name__ == "__main__":
    main()
