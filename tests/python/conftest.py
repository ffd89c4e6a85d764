"""Fixtures shared by the Python package tests (run by CTest: tests/python/CMakeLists.txt).

CTest sets G4V_BIN (the g4v CLI), G4V_LIBRARY (the libg4v.so under test), G4V_SOURCE_DIR and
PYTHONPATH (the package in python/). The reference for every result is the g4v CLI run on the
same input with the same options: the package must give the same bits.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

SRC = os.environ.get("G4V_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
BIN = os.environ.get("G4V_BIN", os.path.join(SRC, "build", "g4v"))
GEN = os.path.join(SRC, "tools", "gen_checkpoint.py")


def g4v(*args, check=True):
    r = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"g4v {' '.join(map(str, args))} -> {r.returncode}: {r.stderr}")
    return r


def cli_encode(model, image, out, *opts):
    """(features from `g4v encode IMAGE -o out.npy`, the --json record)."""
    r = g4v("encode", "--model", model, image, "--json", "--quiet", "--threads", "1", *opts,
            "-o", out)
    return np.load(out), json.loads(r.stdout.splitlines()[0])


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("ck") / "tiny"
    subprocess.run([sys.executable, GEN, str(d), "--config", "tiny", "--seed", "4"], check=True,
                   capture_output=True)
    return str(d)


def write_images(d, n, seed=7, formats=("png", "jpg", "webp", "gif", "bmp"), sizes=None):
    """n small images of mixed formats and sizes in d; returns their paths (sorted names)."""
    rng = np.random.default_rng(seed)
    os.makedirs(d, exist_ok=True)
    paths = []
    for i in range(n):
        h, w = sizes[i] if sizes else (40 + 13 * (i % 5), 50 + 17 * (i % 4))
        fmt = formats[i % len(formats)]
        a = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        p = os.path.join(d, f"img{i:03d}.{fmt}")
        Image.fromarray(a).save(p, **({"lossless": True} if fmt == "webp" else {}))
        paths.append(p)
    return paths
