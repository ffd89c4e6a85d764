"""hf_models.py - Hugging Face's own Gemma 4 vision code, loaded from one of our checkpoints.

Builds transformers' modules from the checkpoint's config.json as transformers parses it
(AutoConfig), loads the vision tensors into them (transformers' own key renames for the 12B
unified files applied, every module tensor required), and runs them as a user of transformers
would: the processor's padded pixel_values and positions in, soft tokens out.

- Towers (e2b, e4b, 26B-A4B, 31B): Gemma4VisionModel + Gemma4MultimodalEmbedder, which is what
  Gemma4Model.get_image_features runs (vision_tower, then embed_vision).
- 12B unified: Gemma4UnifiedVisionEmbedder (Gemma4UnifiedModel.get_image_features).

The language model is not built: its embedding table alone (262,144 x T) would be gigabytes of
random numbers that the image path never reads.
"""
import glob
import json
import os
import re

import torch
from safetensors.torch import load_file
from transformers import AutoConfig
from transformers.conversion_mapping import get_checkpoint_conversion_mapping
from transformers.models.gemma4.modeling_gemma4 import Gemma4MultimodalEmbedder, Gemma4VisionModel
from transformers.models.gemma4_unified.modeling_gemma4_unified import Gemma4UnifiedVisionEmbedder

# Tensors our synthetic checkpoints carry that no transformers module owns (tools/gen_checkpoint.py
# writes them as decoys a vision loader must ignore): transformers ignores them too.
IGNORED = ("vision_tower.rotary_emb.inv_freq", "vision_tower.pooler.scale")


def checkpoint_tensors(ckpt):
    """Every tensor of the checkpoint directory, names without the 'model.' prefix."""
    files = []
    for name in ("optiq_vision.safetensors", "model.safetensors"):
        if os.path.exists(os.path.join(ckpt, name)):
            files.append(os.path.join(ckpt, name))
    index = os.path.join(ckpt, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files += sorted({os.path.join(ckpt, v) for v in json.load(f)["weight_map"].values()})
    if not files:
        files = sorted(glob.glob(os.path.join(ckpt, "*.safetensors")))
    out = {}
    for fn in files:
        for k, v in load_file(fn).items():
            out.setdefault(k[len("model."):] if k.startswith("model.") else k, v)
    return out


def renamed(tensors, model_type):
    """transformers' load-time renames for model_type (conversion_mapping.py), applied in order."""
    rules = get_checkpoint_conversion_mapping(model_type) or []
    out = {}
    for k, v in tensors.items():
        for r in rules:
            srcs, dsts = getattr(r, "source_patterns", None), getattr(r, "target_patterns", None)
            if srcs and dsts and len(srcs) == 1 and len(dsts) == 1:
                k = re.sub(srcs[0], dsts[0], k)
        out[k] = v
    return out


def _load(module, tensors, prefix):
    sd = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
    missing, unexpected = module.load_state_dict(sd, strict=False)
    unexpected = [k for k in unexpected if prefix + k not in IGNORED]
    if missing or unexpected:
        raise RuntimeError(f"{prefix}: missing {missing[:8]}, unexpected {unexpected[:8]}")


class Tower:
    """Gemma4Model.get_image_features for one checkpoint, in `dtype` (torch.float32 or bfloat16)."""

    def __init__(self, ckpt, dtype=torch.float32):
        self.config = AutoConfig.from_pretrained(ckpt)
        if self.config.model_type != "gemma4":
            raise ValueError(f"{ckpt}: model_type {self.config.model_type}, not gemma4")
        tensors = checkpoint_tensors(ckpt)
        self.vision = Gemma4VisionModel(self.config.vision_config)
        self.embed = Gemma4MultimodalEmbedder(self.config.vision_config, self.config.text_config)
        _load(self.vision, tensors, "vision_tower.")
        _load(self.embed, tensors, "embed_vision.")
        self.vision.to(dtype).eval()
        self.embed.to(dtype).eval()
        self.dtype = dtype
        self.attn_implementation = self.vision.config._attn_implementation

    @torch.no_grad()
    def __call__(self, pixel_values, position_ids):
        """pixel_values [B, max_patches, 768], position_ids [B, max_patches, 2] as the processor
        gives them (padded with -1 positions); returns one [N_i, T] float32 array per image."""
        out = self.vision(pixel_values=pixel_values, pixel_position_ids=position_ids).last_hidden_state
        rows = self.embed(inputs_embeds=out)
        k2 = self.config.vision_config.pooling_kernel_size ** 2
        sizes = ((position_ids != -1).all(-1).sum(-1) // k2).tolist()
        return [r.float().numpy() for r in torch.split(rows, sizes)]


class Unified:
    """Gemma4UnifiedModel.get_image_features (the 12B encoder-free embedder)."""

    def __init__(self, ckpt, dtype=torch.float32):
        self.config = AutoConfig.from_pretrained(ckpt)
        if self.config.model_type != "gemma4_unified":
            raise ValueError(f"{ckpt}: model_type {self.config.model_type}, not gemma4_unified")
        tensors = renamed(checkpoint_tensors(ckpt), "gemma4_unified")
        self.embedder = Gemma4UnifiedVisionEmbedder(self.config.vision_config, self.config.text_config)
        _load(self.embedder, tensors, "embed_vision.")
        self.embedder.to(dtype).eval()
        self.dtype = dtype

    @torch.no_grad()
    def __call__(self, pixel_values, position_ids):
        rows = self.embedder(pixel_values, position_ids).pooler_output
        valid = (position_ids != -1).all(-1)
        return [rows[b][valid[b]].float().numpy() for b in range(rows.shape[0])]
