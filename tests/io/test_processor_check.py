"""test_processor_check.py - a processor_config.json asking for another image pipeline than the one
libg4v implements is refused, not silently ignored (src/io/processor_check.h).

On a tiny synthetic tower: the published processor files (E2B = 26B, 12B; written here from
their published values, or the real files when G4V_REAL_FILES has them)
load and give the same tokens as no processor file; mlx-community's bogus size 224x224 is
ignored; each pipeline key set to another value (normalization with mean 0.5, no rescale,
another rescale factor, bilinear resample, patch or pooling size unlike config.json's, no
resize; in the image and the video processor) is G4V_ERR_UNSUPPORTED naming the key.
"""
import copy
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pyutil import BIN, GEN, SRC, check  # noqa: E402

PUBLISHED = {  # the image/video pipeline keys of the published E2B processor_config.json
    "image_processor": {"do_convert_rgb": True, "do_normalize": False, "do_rescale": True,
                        "do_resize": True, "image_mean": [0.0, 0.0, 0.0],
                        "image_processor_type": "Gemma4ImageProcessor", "image_seq_length": 280,
                        "image_std": [1.0, 1.0, 1.0], "max_soft_tokens": 280, "patch_size": 16,
                        "pooling_kernel_size": 3, "resample": 3,
                        "rescale_factor": 0.00392156862745098},
    "image_seq_length": 280, "processor_class": "Gemma4Processor",
    "video_processor": {"do_convert_rgb": True, "do_normalize": True, "do_rescale": True,
                        "do_resize": True, "do_sample_frames": True,
                        "image_mean": [0.0, 0.0, 0.0], "image_std": [1.0, 1.0, 1.0],
                        "max_soft_tokens": 70, "num_frames": 32, "patch_size": 16,
                        "pooling_kernel_size": 3, "resample": 3,
                        "rescale_factor": 0.00392156862745098, "return_metadata": False},
}


def real_processors():
    d = os.environ.get("G4V_REAL_FILES", "")
    names = ["gemma-4-e2b-it.processor_config.json", "gemma-4-12b-it.processor_config.json"]
    return [os.path.join(d, n) for n in names if os.path.isfile(os.path.join(d, n))]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("proc")
    from PIL import Image
    rng = np.random.default_rng(5)
    Image.fromarray((rng.random((50, 70, 3)) * 255).astype(np.uint8)).save(d / "img.png")
    subprocess.run([sys.executable, GEN, str(d / "tiny"), "--config", "tiny"], check=True)
    return d


def with_processor(work, name, proc):
    d = work / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    for f in ("model.safetensors", "config.json"):
        os.symlink(work / "tiny" / f, d / f)
    if proc is not None:
        (d / "processor_config.json").write_text(json.dumps(proc))
    return d


def encode(work, d):
    out = work / (d.name + ".npy")
    r = subprocess.run([BIN, "encode", "--model", str(d), str(work / "img.png"), "-o", str(out),
                        "-q", "--tokens", "70"], capture_output=True, text=True)
    return r, (out.read_bytes() if r.returncode == 0 else None)


def test_published_values_load(work):
    _, ref = encode(work, with_processor(work, "none", None))
    procs = [("published values", PUBLISHED)]
    procs += [(os.path.basename(p), json.load(open(p))) for p in real_processors()]
    bogus = copy.deepcopy(PUBLISHED)
    bogus["image_processor"]["size"] = {"height": 224, "width": 224}  # mlx-community's copies
    procs.append(("size 224x224 added", bogus))
    for i, (what, proc) in enumerate(procs):
        r, rows = encode(work, with_processor(work, f"ok{i}", proc))
        check(r.returncode == 0 and rows == ref, f"{what}: loads, same tokens as no processor "
              f"file {r.stderr.strip()}")


def test_other_pipelines_refused(work):
    cases = [  # (processor, key, value, the key's text in the message)
        ("image_processor", "do_normalize", True, None),  # the identity: accepted
        ("image_processor", "image_mean", [0.5, 0.5, 0.5], "image_mean"),
        ("image_processor", "image_std", [1.0, 0.5, 1.0], "image_std"),
        ("image_processor", "do_rescale", False, "do_rescale"),
        ("image_processor", "rescale_factor", 1 / 127.5, "rescale_factor"),
        ("image_processor", "resample", 2, "resample"),
        ("image_processor", "patch_size", 14, "patch_size"),
        ("image_processor", "pooling_kernel_size", 4, "pooling_kernel_size"),
        ("image_processor", "do_resize", False, "do_resize"),
        ("video_processor", "image_mean", [0.5, 0.5, 0.5], "image_mean"),
        ("video_processor", "resample", 0, "resample"),
    ]
    for i, (obj, key, value, named) in enumerate(cases):
        proc = copy.deepcopy(PUBLISHED)
        proc[obj][key] = value
        if key in ("image_mean", "image_std"):
            proc[obj]["do_normalize"] = True
        r, _ = encode(work, with_processor(work, f"bad{i}", proc))
        if named is None:
            check(r.returncode == 0, f"{obj}.{key} = {value}: accepted ({r.stderr.strip()})")
        else:
            check(r.returncode == 3 and f"{obj}.{named}" in r.stderr and "G4V" not in r.stdout,
                  f"{obj}.{key} = {value}: refused naming the key ({r.stderr.strip()})")
    # do_normalize false: mean and std are not used, so any values load
    proc = copy.deepcopy(PUBLISHED)
    proc["image_processor"]["image_mean"] = [0.5, 0.5, 0.5]
    r, _ = encode(work, with_processor(work, "unused_mean", proc))
    check(r.returncode == 0, "image_mean 0.5 with do_normalize false: accepted (not applied)")
