"""hfutil.py - shared helpers of the transformers parity tests (tests/hf): paths, our CLI, the
synthetic checkpoints, the sample photos, metrics and the pass/fail bookkeeping.

Run under the venv of scripts/hf-env.sh (torch, transformers); numpy and Pillow come from there.
"""
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("G4V_BUILD_DIR", os.path.join(ROOT, "build"))
G4V = os.environ.get("G4V_BIN", os.path.join(BUILD, "g4v"))
WORK = os.environ.get("G4V_HF_WORK", os.path.join(BUILD, "hf-parity"))
PHOTOS = os.environ.get("G4V_HF_PHOTOS",
                        os.path.join(os.path.expanduser("~"), ".cache", "g4v-hf", "photos"))
DEBIAN_PYTHON = "/usr/bin/python3"  # runs tools/gen_checkpoint.py, as everywhere else

sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
sys.path.insert(0, os.path.join(ROOT, "tests", "image"))

_results = {"passed": 0, "failed": 0, "rows": []}


def check(ok, what, **row):
    """One comparison: counted, printed, and kept for the JSON report."""
    _results["passed" if ok else "failed"] += 1
    _results["rows"].append(dict(row, what=what, ok=bool(ok)))
    print(f"  {'ok  ' if ok else 'FAIL'} {what}", flush=True)


def finish(name, json_path=None):
    if json_path:
        with open(json_path, "w") as f:
            json.dump(_results["rows"], f, indent=1)
    print(f"{name}: {_results['passed']} passed, {_results['failed']} failed")
    return 1 if _results["failed"] else 0


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stderr}")
    return r


def checkpoint(name, *args):
    """A synthetic checkpoint made by tools/gen_checkpoint.py ARGS, kept in WORK between runs
    (config.json is written last, so a cut-short generation is redone)."""
    path = os.path.join(WORK, "ckpt", name)
    stamp = os.path.join(path, "g4v-args.json")
    want = json.dumps(list(args))
    if not (os.path.exists(os.path.join(path, "config.json")) and os.path.exists(stamp)
            and open(stamp).read() == want):
        os.makedirs(path, exist_ok=True)
        run([DEBIAN_PYTHON, os.path.join(ROOT, "tools", "gen_checkpoint.py"), path, *args])
        with open(stamp, "w") as f:
            f.write(want)
    return path


def photo(name):
    p = os.path.join(PHOTOS, name)
    if not os.path.exists(p):
        raise SystemExit(f"{p} missing: run scripts/hf-env.sh (it unpacks the sample photos)")
    return p


def rel(a, ref):
    """Relative RMS error ||a - ref|| / ||ref|| and max |a - ref|, in float64."""
    a, ref = np.asarray(a, np.float64), np.asarray(ref, np.float64)
    return float(np.linalg.norm(a - ref) / np.linalg.norm(ref)), float(np.abs(a - ref).max())
