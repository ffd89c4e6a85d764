#!/usr/bin/env python3
"""test_hf_prompt_video.py - the prompt contract and video input against transformers' own
Gemma4Processor and Gemma4VideoProcessor.

Prompt. Gemma4Processor expands each `<|image|>` of the text into `<|image>` + N x `<|image|>` +
`<image|>` and each `<|video|>` into one `MM:SS <|image>` + N x `<|video|>` + `<image|>` group per
frame, joined by spaces; the token ids are the tokenizer's. No Gemma 4 tokenizer or chat template
can be downloaded here, so the tokenizer is a small one built in this file with the special
tokens at their real ids (<|image> 255999, <|image|> 258880, <image|> 258882, <|video|> 258884;
other words are <unk>) and the chat template is a minimal one of ours that only places the
markers: what is compared is transformers' expansion of the markers (text and ids), which is
what our prompt span and g4v_video_prompt_* reproduce, through processor() and through
processor.apply_chat_template() with images and a video in the messages.

Video. Clips made with Debian's ffmpeg (30 and 29.97 fps H.264 with B-frames, VP9 WebM, a 70 s
clip for timestamps past a minute, one shorter than 32 frames) go through transformers'
load_video (PyAV backend) + the processor's own frame sampler and Gemma4VideoProcessor, and
through `g4v encode`. Compared: frame count, fps, sampled indices, timestamps, tokens per frame,
the prompt text and ids; and the soft tokens, HF float32 tower on HF's pixel values against ours
PRECISE. Gemma4VideoProcessor resizes frames with torchvision (it has no Pillow backend), so the
rows are compared exactly (<= 1e-5) only with `--resize torchvision`, when our build has it; with
our default Pillow resize the difference is measured and printed.

usage: test_hf_prompt_video.py [--json OUT.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from functools import partial

import numpy as np
import torch
from PIL import Image

import hfutil
from hfutil import check, rel

import hf_models
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from transformers.models.gemma4.feature_extraction_gemma4 import Gemma4AudioFeatureExtractor
from transformers.models.gemma4.image_processing_pil_gemma4 import Gemma4ImageProcessorPil
from transformers.models.gemma4.processing_gemma4 import Gemma4Processor
from transformers.models.gemma4.video_processing_gemma4 import Gemma4VideoProcessor
from transformers.video_utils import load_video

SPECIAL = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3, "<|image>": 255999, "<|audio>": 256000,
           "<|image|>": 258880, "<|audio|>": 258881, "<image|>": 258882, "<audio|>": 258883,
           "<|video|>": 258884}
WORDS = ["Describe", "these", "images", "and", "this", "video", "."]
# Our minimal template: the text parts as they are, an <|image|> / <|video|> marker per media item.
TEMPLATE = ("{% for m in messages %}{% for c in m['content'] %}{% if c['type'] == 'image' %}"
            "<|image|>{% elif c['type'] == 'video' %}<|video|>{% else %}{{ c['text'] }}{% endif %}"
            "{% endfor %}{% endfor %}")
UNK = SPECIAL["<unk>"]


def processor():
    vocab = dict(SPECIAL)
    vocab.update({w: 100 + i for i, w in enumerate(WORDS)})
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
        unk_token="<unk>",
        extra_special_tokens={"image_token": "<|image|>", "boi_token": "<|image>",
                              "eoi_token": "<image|>", "audio_token": "<|audio|>",
                              "boa_token": "<|audio>", "eoa_token": "<audio|>"})
    tok.add_special_tokens({"additional_special_tokens": list(SPECIAL)[4:]})
    return Gemma4Processor(feature_extractor=Gemma4AudioFeatureExtractor(),
                           image_processor=Gemma4ImageProcessorPil(), tokenizer=tok,
                           video_processor=Gemma4VideoProcessor())


def ffmpeg(*args):
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args], check=True, timeout=300)


def make_clips(d):
    src = "testsrc2=size=%s:rate=%s:duration=%s"
    clips = {
        "h264-30fps.mp4": ["-f", "lavfi", "-i", src % ("320x240", 30, 3), "-c:v", "libx264",
                           "-pix_fmt", "yuv420p", "-bf", "2"],
        "h264-29.97fps.mp4": ["-f", "lavfi", "-i", src % ("200x150", "30000/1001", 4), "-c:v",
                              "libx264", "-pix_fmt", "yuv420p", "-bf", "3"],
        "vp9-24fps.webm": ["-f", "lavfi", "-i", src % ("160x120", 24, 2.5), "-c:v", "libvpx-vp9",
                           "-b:v", "200k"],
        "mpeg4-2fps-70s.mp4": ["-f", "lavfi", "-i", src % ("96x64", 2, 70), "-c:v", "mpeg4"],
        "h264-20frames.mp4": ["-f", "lavfi", "-i", src % ("128x96", 10, 2), "-c:v", "libx264",
                              "-pix_fmt", "yuv420p"],
    }
    for name, args in clips.items():
        ffmpeg(*args, os.path.join(d, name))
    return sorted(clips)


def special_ids(ids):
    return [i for i in ids if i != UNK and i >= 255999]


def ours_has_resize():
    r = subprocess.run([hfutil.G4V, "encode", "--help"], capture_output=True, text=True)
    return "--resize" in r.stdout + r.stderr


def g4v_encode(ckpt, path, out, tokens, extra=()):
    r = hfutil.run([hfutil.G4V, "encode", "--model", ckpt, path, "--tokens", str(tokens),
                    "--json", "-o", out, *extra])
    info = json.loads(r.stdout.strip().splitlines()[-1])
    return info, np.load(out)


def g4v_text(ckpt, path, out, tokens):
    """The plain stdout: the prompt text line(s) and the ids line."""
    r = hfutil.run([hfutil.G4V, "encode", "--model", ckpt, path, "--tokens", str(tokens),
                    "-o", out])
    return r.stdout


def expand_ids(line):
    """'ids: 255999 258880x64 258882 ...' -> the list of ids."""
    out = []
    for t in line.split()[1:]:
        v, _, n = t.partition("x")
        out += [int(v)] * (int(n) if n else 1)
    return out


def check_images(proc, ckpt, tmp):
    """Two photos of different sizes in one text, at two budgets, through processor() and
    apply_chat_template()."""
    print("images: the <|image|> expansion", flush=True)
    ims = [Image.open(hfutil.photo("chelsea.png")).convert("RGB"),
           Image.open(hfutil.photo("rocket.jpg")).convert("RGB").crop((0, 0, 300, 427))]
    paths = []
    for i, im in enumerate(ims):
        p = os.path.join(tmp, f"img{i}.png")
        im.save(p)
        paths.append(p)
    for budget in (70, 280):
        ours = []
        for p in paths:
            info, _ = g4v_encode(ckpt, p, os.path.join(tmp, "o.npy"), budget)
            pid = info["prompt_ids"]
            span = [pid["boi"]] + [pid["image"]] * info["tokens"] + [pid["eoi"]]
            ours += span
            stdout_ids = expand_ids(g4v_text(ckpt, p, os.path.join(tmp, "o.npy"), budget)
                                    .strip().splitlines()[-1])
            check(stdout_ids == span, f"{os.path.basename(p)} at {budget}: the ids line on "
                  f"stdout == --json prompt_ids ({info['tokens']} tokens)")
        out = proc(text=["Describe these images <|image|> and <|image|> ."], images=[ims],
                   return_tensors="np", images_kwargs={"max_soft_tokens": budget})
        hf_ids = special_ids(out["input_ids"][0].tolist())
        check(hf_ids == ours, f"two images at {budget}: Gemma4Processor ids == our prompt_ids "
              f"({len(ours)} ids)")
        msgs = [{"role": "user", "content": [
            {"type": "text", "text": "Describe these images "}, {"type": "image", "image": paths[0]},
            {"type": "text", "text": " and "}, {"type": "image", "image": paths[1]}]}]
        r = proc.apply_chat_template(msgs, chat_template=TEMPLATE, tokenize=True,
                                     return_dict=True, return_tensors="np",
                                     processor_kwargs={"images_kwargs": {"max_soft_tokens": budget}})
        check(special_ids(r["input_ids"][0].tolist()) == ours,
              f"two images at {budget}: apply_chat_template ids == our prompt_ids")


def hf_video(proc, path, frames=32):
    """transformers' own video flow with the PyAV backend: load_video with the processor's
    sampler, then Gemma4VideoProcessor. Returns (metadata, processed) or the exception."""
    vp = proc.video_processor
    try:
        video, meta = load_video(path, backend="pyav",
                                 sample_indices_fn=partial(vp.sample_frames, num_frames=frames))
    except Exception as e:  # noqa: BLE001 -- transformers refuses: reported as such
        return None, e
    out = vp(videos=[video], video_metadata=[meta], do_sample_frames=False, return_tensors="pt",
             return_metadata=True)
    out["frames"] = video
    return meta, out


def check_video(proc, tower, ckpt, clip, tmp, resize_exact):
    name = os.path.basename(clip)
    print(f"video {name}", flush=True)
    meta, out = hf_video(proc, clip)
    info, rows = g4v_encode(ckpt, clip, os.path.join(tmp, "v.npy"), 70, ["--precise"])
    if meta is None:
        # Documented differences (docs/VIDEO.md): transformers refuses a clip shorter than the
        # 32 frames it samples (ours takes all its frames), and its PyAV loader takes the frame
        # count from the container, which a WebM does not store (0: "exceeds total_num_frames=0").
        short = info.get("ok") and info["total_frames"] < 32
        uncounted = "total_num_frames=0" in str(out)
        check(info.get("ok") and (short or uncounted),
              f"{name}: transformers refuses ({str(out)[:90]}...); ours encodes its "
              f"{info.get('total_frames')} frames")
        return
    n_tok = int(out["num_soft_tokens_per_video"][0])
    idx = [int(i) for i in meta.frames_indices]
    check(info["total_frames"] == meta.total_num_frames,
          f"{name}: frame count {info['total_frames']} == {meta.total_num_frames}")
    check(abs(info["fps"] - meta.fps) < 1e-9, f"{name}: fps {info['fps']!r} == {meta.fps!r}")
    ours_idx = [f["index"] for f in info["frames"]]
    check(ours_idx == idx, f"{name}: sampled indices ({len(idx)} frames) identical")
    check(all(abs(f["timestamp"] - t) < 1e-9 for f, t in zip(info["frames"], meta.timestamps)),
          f"{name}: timestamps identical")
    check(info["tokens_per_frame"] == n_tok,
          f"{name}: tokens per frame {info['tokens_per_frame']} == {n_tok}")
    # The prompt: the text transformers puts in place of <|video|>, and its ids.
    hf_text = proc.replace_video_token({"num_soft_tokens_per_video": [n_tok],
                                        "video_metadata": [meta]}, 0)
    ours_text, ours_ids = g4v_text(ckpt, clip, os.path.join(tmp, "v.npy"), 70).rstrip("\n") \
        .rsplit("\n", 1)
    check(ours_text == hf_text, f"{name}: prompt text identical ({len(hf_text)} characters)")
    enc = proc(text=["this video <|video|>"], videos=[out["frames"]],
               video_metadata=[meta], do_sample_frames=False, return_tensors="np")
    check(special_ids(enc["input_ids"][0].tolist()) == expand_ids(ours_ids),
          f"{name}: Gemma4Processor ids == our ids line")
    msgs = [{"role": "user", "content": [{"type": "text", "text": "this video "},
                                         {"type": "video", "video": out["frames"]}]}]
    r = proc.apply_chat_template(msgs, chat_template=TEMPLATE, tokenize=True, return_dict=True,
                                 return_tensors="np", processor_kwargs={"videos_kwargs": {
                                     "video_metadata": [meta], "do_sample_frames": False}})
    check(special_ids(r["input_ids"][0].tolist()) == expand_ids(ours_ids),
          f"{name}: apply_chat_template with the video: ids == our ids line")
    # The soft tokens: HF's tower on HF's frames against ours.
    hf_rows = np.concatenate(tower(out["pixel_values_videos"], out["video_position_ids"]))
    if rows.shape != hf_rows.shape:
        check(False, f"{name}: rows {rows.shape} vs HF {hf_rows.shape}")
        return
    e = rel(rows, hf_rows)[0]
    print(f"  ours (Pillow resize, PRECISE) vs HF float32 on its torchvision frames: rel RMSE "
          f"{e:.2e}", flush=True)
    if resize_exact:
        _, tv = g4v_encode(ckpt, clip, os.path.join(tmp, "v.npy"), 70,
                           ["--precise", "--resize", "torchvision"])
        e = rel(tv, hf_rows)[0]
        check(e <= 1e-5, f"{name}: --resize torchvision PRECISE vs HF float32 {e:.2e} <= 1e-05")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json")
    a = ap.parse_args()
    proc = processor()
    ckpt = hfutil.checkpoint("tiny", "--config", "tiny", "--seed", "1")
    tower = hf_models.Tower(ckpt, torch.float32)
    resize_exact = ours_has_resize()
    os.makedirs(hfutil.WORK, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=hfutil.WORK) as tmp:
        check_images(proc, ckpt, tmp)
        for clip in make_clips(tmp):
            check_video(proc, tower, ckpt, os.path.join(tmp, clip), tmp, resize_exact)
    return hfutil.finish("test_hf_prompt_video", a.json)


if __name__ == "__main__":
    sys.exit(main())
