"""hf_peer.py - the PyPI PyTorch peer for bench_encoder: transformers' own Gemma4VisionModel (and
the Gemma4MultimodalEmbedder after it, as Gemma4Model.get_image_features runs them) on the same
checkpoint, as a Hugging Face user runs it on CPU.

Runs under the venv of scripts/hf-env.sh (PyPI torch, whose CPU wheel reaches oneDNN for bf16
Linear layers and its flash attention kernels, and the pinned transformers), unlike
bench/torch_peer.py, which runs Debian's torch on our own eager re-implementation. The modules are
built and loaded by tests/hf/hf_models.py (transformers' classes, every tensor required), with
attention through torch's scaled_dot_product_attention (attn_implementation "sdpa"), in bf16 or
f32, under torch.inference_mode and torch.set_num_threads(--threads).

The input is what transformers' image processor gives for a random uint8 square image at the
side bench_encoder passes (Gemma4ImageProcessorPil with max_soft_tokens = the budget, outside the
timing); the timing covers pixel_values -> soft tokens. One warm-up call per budget, then --reps
timed calls. Prints one line per budget and dtype in bench_encoder's peer format:
"peer budget=B dtype=X L=... tokens=N median_s=S reps=R load_s=... threads=T attn=sdpa
torch=VERSION". Used by the bench only, never by the tests.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "hf"))
sys.path.insert(0, HERE)
import hf_models  # noqa: E402  (transformers' modules loaded from our checkpoint)
import peer_plan  # noqa: E402  (bench/: the budgets, sides and repetitions asked for)
from transformers import AutoConfig  # noqa: E402
from transformers.models.gemma4.modeling_gemma4 import (  # noqa: E402
    Gemma4MultimodalEmbedder, Gemma4VisionModel)
from transformers.models.gemma4.image_processing_pil_gemma4 import Gemma4ImageProcessorPil  # noqa: E402


class Tower:
    """hf_models.Tower (Gemma4Model.get_image_features) with the vision config's attention set to
    sdpa before the modules are built."""

    __call__ = hf_models.Tower.__call__

    def __init__(self, ckpt, dtype):
        self.config = AutoConfig.from_pretrained(ckpt)
        self.config.vision_config._attn_implementation = "sdpa"
        tensors = hf_models.checkpoint_tensors(ckpt)
        self.vision = Gemma4VisionModel(self.config.vision_config)
        self.embed = Gemma4MultimodalEmbedder(self.config.vision_config, self.config.text_config)
        hf_models._load(self.vision, tensors, "vision_tower.")
        hf_models._load(self.embed, tensors, "embed_vision.")
        self.vision.to(dtype).eval()
        self.embed.to(dtype).eval()
        self.dtype = dtype


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--budgets", default="280")
    ap.add_argument("--sides", default="", help="image sides per budget (from bench_encoder)")
    ap.add_argument("--reps", default="3", help="one count, or one per budget")
    ap.add_argument("--dtypes", default="bf16,f32")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    points = peer_plan.plan(a.budgets, a.sides, a.reps)
    rng = np.random.default_rng(0)
    for dt in a.dtypes.split(","):
        t0 = time.perf_counter()
        tower = Tower(a.model, {"bf16": torch.bfloat16, "f32": torch.float32}[dt])
        load_s = time.perf_counter() - t0
        attn = tower.vision.config._attn_implementation
        for b, side, r in points:
            img = Image.fromarray(rng.integers(0, 256, (side, side, 3), dtype=np.uint8))
            feats = Gemma4ImageProcessorPil(max_soft_tokens=b)(images=img, return_tensors="pt")
            pix, pos = feats["pixel_values"].to(tower.dtype), feats["image_position_ids"]
            L = int((pos != -1).all(-1).sum())
            times = []
            with torch.inference_mode():
                rows = tower(pix, pos)  # warm-up: oneDNN primitives, allocator
                for _ in range(r):
                    t = time.perf_counter()
                    rows = tower(pix, pos)
                    times.append(time.perf_counter() - t)
            print(f"peer budget={b} dtype={dt} L={L} tokens={rows[0].shape[0]} "
                  f"median_s={statistics.median(times):.4f} reps={r} load_s={load_s:.2f} "
                  f"threads={torch.get_num_threads()} attn={attn} torch={torch.__version__}",
                  flush=True)


if __name__ == "__main__":
    main()
