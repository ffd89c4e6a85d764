"""pyutil.py - what the Python tests share, so each script holds only its cases.

  SRC, BUILD, BIN, GEN   the source tree, the build tree, the g4v binary, tools/gen_checkpoint.py
                         (from the environment ctest sets: G4V_SOURCE_DIR, G4V_BUILD_DIR, G4V_BIN)
  check(cond, what)      records a failure and prints "ok   what" / "FAIL what"
  fail(what)             records a failure found otherwise
  finish(name)           prints the failures and a summary line; returns the exit status
  target_size(h, w, b)   docs/PREPROCESSING.md §5's target size, computed here independently of the C code
  gen_checkpoint(dst, *args)   a synthetic checkpoint (tools/gen_checkpoint.py)
  g4v(*args)             runs the g4v binary, capturing text output
  arg(i)                 the i-th --arg=VALUE ctest passed to pytest (tests/conftest.py)
  st_header(path)        a safetensors file's (header, data offset), read by its layout alone
  st_read(path)          (header without __metadata__, metadata, data bytes)
  st_tensors(path)       {name: float32 array} (F32, BF16, F16), plus metadata and header length
  st_write(path, header, data)   a safetensors file (header padded to 8 bytes)
  st_load(path)          (header with __metadata__, data bytearray), for editing
  st_edit(path, fn)      fn(header, data bytearray) edits a file in place
  st_bump_byte(path, tensor, where, delta)   adds delta to one byte inside a tensor's data

The tests are pytest modules: a test function may call check() many times (every check runs and
is printed; tests/conftest.py fails the test if any failed) or plain assert. Scripts import it
with sys.path.insert(0, <the tests directory>). Importing it also puts tests/reference on
sys.path, for the float64 oracle (`import reference`).

The st_* helpers are the one place the tests and benchmarks parse the safetensors container
(8-byte little-endian header length, JSON header, data); they do not use our loader, so they
can check it.
"""
import json
import math
import os
import struct
import subprocess
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("G4V_SOURCE_DIR", os.path.dirname(TESTS))
BUILD = os.environ.get("G4V_BUILD_DIR", os.path.join(SRC, "build"))
BIN = os.environ.get("G4V_BIN", os.path.join(BUILD, "g4v"))
GEN = os.path.join(SRC, "tools", "gen_checkpoint.py")
sys.path.insert(0, os.path.join(SRC, "tests", "reference"))
sys.path.insert(0, os.path.join(SRC, "tests", "image"))

failures = []
ARGS = []  # set by tests/conftest.py from pytest's --arg options


def arg(i):
    """The i-th (1-based, as sys.argv) argument ctest passed with --arg=VALUE."""
    return ARGS[i - 1]


def check(cond, what, show_ok=True):
    """Records what as a failure unless cond; show_ok=False prints failures only."""
    if cond:
        if show_ok:
            print("ok   " + what, flush=True)
    else:
        fail(what)
    return cond


def fail(what):
    failures.append(what)
    print("FAIL " + what, flush=True)


def finish(name):
    for f in failures:
        print("FAILED:", f)
    print(f"{name}: {'FAIL (%d)' % len(failures) if failures else 'all passed'}")
    return 1 if failures else 0


def pillow_resize(a, tw, th):
    """A uint8 [H, W, 3] array resized as the library does by default: Pillow BICUBIC in Pillow
    >= 13's pass order (tests/image/pillow_ref.py emulates it with this machine's Pillow)."""
    import pillow_ref
    return pillow_ref.pil_resize(a, tw, th, "13")


def target_size(h, w, budget, p=16, k=3):
    """docs/PREPROCESSING.md §5 (HF get_aspect_ratio_preserving_size), independent of the C code."""
    max_patches = budget * k * k
    side = k * p
    factor = math.sqrt(max_patches * p * p / (h * w))
    th = math.floor(factor * h / side) * side
    tw = math.floor(factor * w / side) * side
    max_side = (max_patches // (k * k)) * side
    if th == 0:
        th, tw = side, min(math.floor(w / h) * side, max_side)
    elif tw == 0:
        tw, th = side, min(math.floor(h / w) * side, max_side)
    return th, tw


def gen_checkpoint(dst, *args, quiet=False):
    subprocess.run([sys.executable, GEN, dst, *args], check=True, capture_output=quiet)


def g4v(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True)


# ---- the safetensors container, read and written by its layout alone -----------------------------

def st_header(path):
    """(header dict with __metadata__, byte offset of the data) of a safetensors file."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n)), 8 + n


def st_parse(raw):
    """(header without __metadata__, metadata, data bytes, header length) of a file's bytes."""
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    return header, meta, raw[8 + n:], n


def st_read(path):
    """(header without __metadata__, metadata, data bytes) of a safetensors file."""
    with open(path, "rb") as f:
        header, meta, data, _ = st_parse(f.read())
    return header, meta, data


def st_array(entry, data):
    """One tensor of st_read's output as float32 (F32, BF16, F16)."""
    import numpy as np
    a, b = entry["data_offsets"]
    dt = entry["dtype"]
    if dt == "F32":
        arr = np.frombuffer(data[a:b], dtype="<f4")
    elif dt == "BF16":
        arr = (np.frombuffer(data[a:b], dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    elif dt == "F16":
        arr = np.frombuffer(data[a:b], dtype="<f2").astype(np.float32)
    else:
        raise ValueError(dt)
    return arr.reshape(entry["shape"])


def st_tensors(path):
    """({name: float32 array}, metadata, header length) of a safetensors file."""
    with open(path, "rb") as f:
        header, meta, data, n = st_parse(f.read())
    return {k: st_array(e, data) for k, e in header.items()}, meta, n


def st_write(path, header, data, raw=None, length=None):
    """Writes header (dict; or raw header bytes, unpadded) and data; length overrides the
    8-byte header length (for corrupt files)."""
    hb = raw if raw is not None else json.dumps(header).encode()
    if raw is None:
        hb += b" " * (-len(hb) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb) if length is None else length))
        f.write(hb)
        f.write(data)


def st_load(path):
    """(header with __metadata__, data as a bytearray): the whole file, for editing."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        return header, bytearray(f.read())


def st_edit(path, fn):
    """Calls fn(header, data) (st_load's) and writes the file back with fn's changes."""
    header, data = st_load(path)
    fn(header, data)
    st_write(path, header, data)


def st_bump_byte(path, tensor, where=0.5, delta=1):
    """Adds delta (mod 256) to the byte at fraction where (0 first, 1 last) of tensor's data."""
    header, base = st_header(path)
    b, e = header[tensor]["data_offsets"]
    off = base + b + min(int((e - b) * where), e - b - 1)
    with open(path, "r+b") as f:
        f.seek(off)
        v = f.read(1)[0]
        f.seek(off)
        f.write(bytes([(v + delta) & 255]))
