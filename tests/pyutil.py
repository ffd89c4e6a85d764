"""pyutil.py - what the Python tests share, so each script holds only its cases.

  SRC, BUILD, BIN, GEN   the source tree, the build tree, the g4v binary, tools/gen_checkpoint.py
                         (from the environment ctest sets: G4V_SOURCE_DIR, G4V_BUILD_DIR, G4V_BIN)
  check(cond, what)      records a failure and prints "ok   what" / "FAIL what"
  fail(what)             records a failure found otherwise
  finish(name)           prints the failures and a summary line; returns the exit status
  target_size(h, w, b)   docs/PREPROCESSING.md §5's target size, computed here independently of the C code
  gen_checkpoint(dst, *args)   a synthetic checkpoint (tools/gen_checkpoint.py)
  g4v(*args)             runs the g4v binary, capturing text output

Scripts import it with sys.path.insert(0, <the tests directory>). Importing it also puts
tests/reference on sys.path, for the float64 oracle (`import reference`).
"""
import math
import os
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
