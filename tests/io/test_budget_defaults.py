"""test_budget_defaults.py - the default soft-token budget is read from the checkpoint, not assumed.

A Gemma 4 repository names the image budget in five places (docs/GUIDE.md "Default budget"):
processor_config.json image_processor.max_soft_tokens, image_processor.image_seq_length and the
top-level image_seq_length; config.json vision_config.default_output_length (num_soft_tokens for
the 12B) and the top-level vision_soft_tokens_per_image. The published files all say 280; an HF
discussion proposes 1120 in all five. `g4v encode` without --tokens (g4v_model_options.budget 0)
must use the checkpoint's value, first present key in that order, and `g4v info` must show it.

Cases, on a tiny synthetic tower (and the unified-tiny embedder for the 12B layout):
  all five at 1120              -> 1120, rows bit-identical to --tokens 1120
  all five disagreeing          -> each key in turn wins once the keys before it are removed
  the 12B's layout (no image_processor.image_seq_length; no vision_soft_tokens_per_image)
                                -> max_soft_tokens, then the top-level image_seq_length
  the real E2B files raised to 1120 in the five places (when the real files are present)
  video_processor max_soft_tokens / num_frames -> the video defaults
  an unsupported value (300) or a wrong type -> a load error naming the file and key
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pyutil import BIN, GEN, SRC, check, target_size  # noqa: E402

PROCESSOR = "processor_config.json"
H, W = 61, 97  # the test image; odd sizes, so the target size depends on the budget


def real_files():
    d = os.environ.get("G4V_REAL_FILES", "")
    return d if os.path.isfile(os.path.join(d, "gemma-4-e2b-it.config.json")) else None


def run(*args, ok=True):
    r = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=300)
    if ok:
        assert r.returncode == 0, f"g4v {' '.join(args)}: rc {r.returncode}\n{r.stderr}"
    return r


def processor(max_soft=None, ip_seq=None, top_seq=None, video=None):
    """A processor_config.json shaped like the real ones (keys left out when None)."""
    ip = {"image_processor_type": "Gemma4ImageProcessor", "patch_size": 16,
          "pooling_kernel_size": 3, "do_normalize": False, "resample": 3}
    if max_soft is not None:
        ip["max_soft_tokens"] = max_soft
    if ip_seq is not None:
        ip["image_seq_length"] = ip_seq
    p = {"processor_class": "Gemma4Processor", "image_processor": ip,
         "video_processor": {"max_soft_tokens": 70, "num_frames": 32, **(video or {})}}
    if top_seq is not None:
        p["image_seq_length"] = top_seq
    return p


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("budget")
    from PIL import Image
    rng = np.random.default_rng(7)
    Image.fromarray((rng.random((H, W, 3)) * 255).astype(np.uint8)).save(d / "img.png")
    for cfg in ("tiny", "unified-tiny"):
        subprocess.run([sys.executable, GEN, str(d / cfg), "--config", cfg], check=True)
    return d


def model_dir(work, name, base="tiny", config_edit=None, proc=None):
    """work/name: base's weights (linked) + its config.json edited by config_edit(cfg) +
    proc written as processor_config.json (none when proc is None)."""
    d = work / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    os.symlink(work / base / "model.safetensors", d / "model.safetensors")
    cfg = json.loads((work / base / "config.json").read_text())
    if config_edit:
        config_edit(cfg)
    (d / "config.json").write_text(json.dumps(cfg))
    if proc is not None:
        (d / PROCESSOR).write_text(json.dumps(proc))
    return d


def set_config(vision=None, top=None, key="default_output_length"):
    def edit(cfg):
        for k, v in ((key, vision), ("vision_soft_tokens_per_image", top)):
            obj = cfg["vision_config"] if k == key else cfg
            if v is None:
                obj.pop(k, None)
            else:
                obj[k] = v
    return edit


def encode(work, d, *extra):
    """(JSON line, rows) of `g4v encode` on the test image."""
    out = work / (d.name + ".npy")
    r = run("encode", "--model", str(d), str(work / "img.png"), "-o", str(out), "--json", *extra)
    return json.loads(r.stdout.strip().splitlines()[-1]), np.load(out)


def info_budget(d):
    return json.loads(run("info", "--model", str(d), "--json").stdout)["default_budget"]


def expect_budget(work, d, budget, what):
    js, rows = encode(work, d)
    th, tw = target_size(H, W, budget)
    n = (th // 48) * (tw // 48)
    check(js["budget"] == budget and rows.shape[0] == n == js["tokens"],
          f"{what}: encode without --tokens uses {budget} (got budget {js['budget']}, "
          f"{rows.shape[0]} rows, expected {n})")
    check(info_budget(d) == budget, f"{what}: info reports default_budget {budget}")
    return rows


def test_all_five_at_1120(work):
    d = model_dir(work, "all1120", config_edit=set_config(1120, 1120),
                  proc=processor(1120, 1120, 1120))
    rows = expect_budget(work, d, 1120, "all five 1120")
    _, explicit = encode(work, d, "--tokens", "1120")
    check(np.array_equal(rows, explicit), "all five 1120: rows bit-identical to --tokens 1120")
    _, at280 = encode(work, d, "--tokens", "280")
    check(at280.shape[0] < rows.shape[0], "--tokens 280 still overrides the checkpoint's 1120")


def test_precedence_when_they_disagree(work):
    """Each key wins once every key before it is gone: all five are read."""
    steps = [  # (processor keys, config keys, expected, the key that decides)
        ((140, 560, 1120), (70, 560), 140, "image_processor.max_soft_tokens"),
        ((None, 560, 1120), (70, 140), 560, "image_processor.image_seq_length"),
        ((None, None, 1120), (70, 140), 1120, "top-level image_seq_length"),
        ((None, None, None), (70, 140), 70, "vision_config.default_output_length"),
        ((None, None, None), (None, 140), 140, "vision_soft_tokens_per_image"),
        ((None, None, None), (None, None), 280, "nothing: the built-in 280"),
    ]
    for i, (p, c, want, key) in enumerate(steps):
        d = model_dir(work, f"prec{i}", config_edit=set_config(*c), proc=processor(*p))
        expect_budget(work, d, want, f"processor {p}, config {c}: {key}")
    # no processor_config.json at all: config.json speaks
    d = model_dir(work, "noproc", config_edit=set_config(560, 140))
    expect_budget(work, d, 560, "no processor_config.json: vision_config.default_output_length")


def test_12b_layout_missing_key(work):
    """The 12B processor has no image_processor.image_seq_length and its config no
    vision_soft_tokens_per_image; its vision key is num_soft_tokens."""
    def p12(max_soft, top):
        p = processor(max_soft, None, top)
        p["processor_class"] = "Gemma4UnifiedProcessor"
        return p

    edit = set_config(70, None, key="num_soft_tokens")
    d = model_dir(work, "u12a", "unified-tiny", edit, p12(560, 280))
    expect_budget(work, d, 560, "12B layout: image_processor.max_soft_tokens")
    d = model_dir(work, "u12b", "unified-tiny", edit, p12(None, 1120))
    expect_budget(work, d, 1120, "12B layout without max_soft_tokens: top-level image_seq_length")
    d = model_dir(work, "u12c", "unified-tiny", edit, p12(None, None))
    expect_budget(work, d, 70, "12B layout, processor silent: vision_config.num_soft_tokens")


def test_real_e2b_files_raised_to_1120(work):
    real = real_files()
    if not real:
        pytest.skip("real files not found (set G4V_REAL_FILES: docs/TESTING.md \"Real metadata\")")
    proc = json.load(open(os.path.join(real, "gemma-4-e2b-it.processor_config.json")))
    cfg = json.load(open(os.path.join(real, "gemma-4-e2b-it.config.json")))
    check(proc["image_processor"]["max_soft_tokens"] == proc["image_processor"]["image_seq_length"]
          == proc["image_seq_length"] == cfg["vision_config"]["default_output_length"]
          == cfg["vision_soft_tokens_per_image"] == 280, "the real E2B files say 280 five times")
    proc["image_processor"]["max_soft_tokens"] = proc["image_processor"]["image_seq_length"] = 1120
    proc["image_seq_length"] = 1120

    def edit(c):  # our tiny tower's shapes, the real file's five budget keys raised
        c["vision_config"]["default_output_length"] = c["vision_soft_tokens_per_image"] = 1120

    d = model_dir(work, "reale2b1120", config_edit=edit, proc=proc)
    expect_budget(work, d, 1120, "real E2B processor_config raised to 1120")


def test_video_defaults(work):
    if not shutil.which("ffmpeg"):
        pytest.skip("ffmpeg not found")
    vid = work / "clip.mkv"
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc2=size=64x48:rate=10:duration=1", "-c:v", "ffv1", str(vid)], check=True)
    d = model_dir(work, "video", proc=processor(280, video={"max_soft_tokens": 140,
                                                           "num_frames": 4}))
    out = work / "video.npy"
    r = run("encode", "--model", str(d), str(vid), "-o", str(out), "--json")
    js = json.loads(r.stdout.strip().splitlines()[-1])
    th, tw = target_size(48, 64, 140)
    per = (th // 48) * (tw // 48)
    check(len(js["frames"]) == 4 and js["tokens_per_frame"] == per,
          f"video: video_processor num_frames 4 and max_soft_tokens 140 are the defaults "
          f"(got {len(js['frames'])} frames of {js['tokens_per_frame']}, expected 4 of {per})")


def test_bad_values(work):
    d = model_dir(work, "bad300", proc=processor(300))
    r = run("encode", "--model", str(d), str(work / "img.png"), "-o", str(work / "x.npy"), ok=False)
    check(r.returncode != 0 and "image_processor.max_soft_tokens" in r.stderr and "300" in r.stderr,
          f"max_soft_tokens 300: refused, naming the key ({r.stderr.strip()})")
    js, _ = encode(work, d, "--tokens", "280")
    check(js["budget"] == 280, "max_soft_tokens 300 with --tokens 280: loads")
    d = model_dir(work, "badtype", proc=processor("280"))
    r = run("encode", "--model", str(d), str(work / "img.png"), "-o", str(work / "x.npy"), ok=False)
    check(r.returncode != 0 and "processor_config.json: image_processor.max_soft_tokens" in r.stderr,
          f"max_soft_tokens \"280\": a model error naming file and key ({r.stderr.strip()})")
    d = model_dir(work, "badjson")
    (d / PROCESSOR).write_text("{")
    r = run("info", "--model", str(d), ok=False)
    check(r.returncode != 0 and PROCESSOR in r.stderr, f"malformed {PROCESSOR}: refused")
