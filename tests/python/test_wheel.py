#!/usr/bin/python3
"""test_wheel.py - the pip route: `python3 -m build` makes a wheel that carries libg4v, a fresh
venv installs it, imports the package from its site-packages and encodes images with it (bit for
bit as the g4v CLI of this build), and without its libg4v.so the package still imports and says
on use what is missing. `pip install <repository>` is checked the same way.

Needs PyPI (build and scikit-build-core, pinned in pyproject.toml); skipped when pip cannot
reach it (pytest skip; tests/conftest.py then exits 77, CTest's SKIP_RETURN_CODE). The wheel's
CMake build directory is kept in the build tree, so a rerun recompiles only what changed.
Environment (set by CTest): G4V_SOURCE_DIR, G4V_BUILD_DIR, G4V_BIN, G4V_WHEEL_WORK (a folder for
the venvs; kept between runs)."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

import numpy as np
import pytest
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pyutil import check  # noqa: E402

SRC = os.environ["G4V_SOURCE_DIR"]
BIN = os.environ["G4V_BIN"]
WORK = os.environ["G4V_WHEEL_WORK"]
BUILD_PIN = "build==1.2.2.post1"


def run(cmd, timeout=300, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                          **kw)


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "G4V_LIBRARY", "LD_LIBRARY_PATH", "PYTHONHOME")}
    env.update(extra)
    return env


def venv(path, system_site=False):
    if os.path.exists(path):
        shutil.rmtree(path)
    r = run([sys.executable, "-m", "venv", *(["--system-site-packages"] if system_site else []),
             path])
    if r.returncode:
        pytest.skip(f"python3 -m venv does not work: {r.stderr.strip()[-300:]}")
    return os.path.join(path, "bin", "python")


PROBE = r"""
import json, sys
import gemma4_vision as g
m = g.Model(sys.argv[1], threads=1)
out = {"file": g.__file__, "lib": g.library_path(), "budgets": list(g.BUDGETS)}
for p in sys.argv[2:]:
    r = m.encode(p, tokens=70)
    r.features.tofile(p + ".py.f32")
    out[p] = r.n_tokens
print(json.dumps(out))
"""

MISSING = r"""
import gemma4_vision as g
try:
    g.Model("anything")
except g.LibraryNotFoundError as e:
    print("ERROR:", e)
"""


def probe(py, ck, images, cwd):
    r = run([py, "-c", PROBE, ck, *images], env=clean_env(), cwd=cwd)
    if r.returncode:
        return None, r.stderr
    return json.loads(r.stdout.splitlines()[-1]), ""


def test_wheel():
    os.makedirs(WORK, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=WORK, prefix="run-")
    try:
        body(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def body(tmp):
    # a build venv; PyPI reachable? (skip cleanly when not)
    bpy = venv(os.path.join(WORK, "venv-build"))
    r = run([bpy, "-m", "pip", "install", "-q", "--disable-pip-version-check", BUILD_PIN],
            timeout=180)
    if r.returncode:
        pytest.skip(f"pip cannot install {BUILD_PIN} (no PyPI?): {r.stderr.strip()[-300:]}")
    dist = os.path.join(tmp, "dist")
    env = clean_env(CMAKE_BUILD_PARALLEL_LEVEL="2")
    r = run([bpy, "-m", "build", "--wheel", "-o", dist, "-C",
             "build-dir=" + os.path.join(WORK, "cmake-build"), SRC], timeout=600, env=env)
    if r.returncode and ("Could not find a version" in r.stderr + r.stdout or
                         "NewConnectionError" in r.stderr + r.stdout):
        pytest.skip("the isolated build environment cannot reach PyPI")
    check(r.returncode == 0, "python3 -m build --wheel: " + (r.stderr + r.stdout)[-800:]
          if r.returncode else "python3 -m build --wheel")
    wheels = glob.glob(os.path.join(dist, "*.whl"))
    check(len(wheels) == 1 and wheels[0].endswith("-py3-none-linux_x86_64.whl"),
          f"one py3-none-linux_x86_64 wheel ({[os.path.basename(w) for w in wheels]})")
    if not wheels:
        return
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    want = {"gemma4_vision/" + n for n in ("__init__.py", "_errors.py", "_lib.py", "bulk.py",
                                           "model.py", "safetensors.py", "py.typed",
                                           "libg4v.so")}
    check(want <= names, f"the wheel holds the package, py.typed and libg4v.so "
                         f"(missing: {sorted(want - names)})")
    check(not any("_paths.py" in n or n.endswith(".so.0") for n in names),
          "no install-prefix files in the wheel")

    # a checkpoint and images (a PNG and a TIFF), and the CLI's features for them
    ck = os.path.join(tmp, "tiny")
    run([sys.executable, os.path.join(SRC, "tools", "gen_checkpoint.py"), ck, "--config", "tiny",
         "--seed", "4"], check=True)
    rng = np.random.default_rng(3)
    images = []
    for name, kw in (("a.png", {}), ("b.tif", {"compression": "tiff_lzw"})):
        p = os.path.join(tmp, name)
        Image.fromarray(rng.integers(0, 256, (90, 130, 3), dtype=np.uint8)).save(p, **kw)
        images.append(p)
        run([BIN, "encode", "--model", ck, p, "--tokens", "70", "--threads", "1", "-q", "-o",
             p + ".cli.npy"], check=True)

    # a fresh venv (numpy from Debian's site-packages), the wheel installed into it
    for route in ("wheel", "pip install <repository>"):
        ipy = venv(os.path.join(tmp, "venv-" + route.split()[0]), system_site=True)
        if route == "wheel":
            r = run([ipy, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                     "--no-index", wheels[0]], timeout=180)
        else:
            r = run([ipy, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                     "--config-settings=build-dir=" + os.path.join(WORK, "cmake-build"), SRC],
                    timeout=600, env=env)
        check(r.returncode == 0, f"{route}: pip install " + r.stderr[-600:])
        res, err = probe(ipy, ck, images, tmp)
        check(res is not None, f"{route}: import and encode in the venv {err[-600:]}")
        if res is None:
            continue
        site = run([ipy, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"]
                   ).stdout.strip()
        check(res["file"].startswith(site) and res["lib"] == os.path.join(
            site, "gemma4_vision", "libg4v.so"),
              f"{route}: the package and its libg4v.so come from the venv ({res['file']}, "
              f"{res['lib']})")
        check(res["budgets"] == [70, 140, 280, 560, 1120], f"{route}: BUDGETS from the library")
        for p in images:
            cli = np.load(p + ".cli.npy")
            py = np.fromfile(p + ".py.f32", dtype=np.float32).reshape(cli.shape) \
                if os.path.getsize(p + ".py.f32") == cli.nbytes else None
            check(py is not None and py.tobytes() == cli.tobytes(),
                  f"{route}: {os.path.basename(p)} encodes as the CLI does, bit for bit")
        if route == "wheel":  # the library removed: import works, use says what is missing
            os.unlink(res["lib"])
            r = run([ipy, "-c", MISSING], env=clean_env(), cwd=tmp)
            check(r.returncode == 0 and "ERROR:" in r.stdout and res["lib"] in r.stdout and
                  "pip install" in r.stdout and "G4V_LIBRARY" in r.stdout,
                  f"without libg4v.so: import works and use says what is missing "
                  f"({(r.stdout + r.stderr).strip()[-400:]})")
