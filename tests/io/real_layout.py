"""real_layout.py - the names of the tensors a real Gemma 4 checkpoint holds besides the vision
ones, for writing repository-shaped test checkpoints (tests/io/test_real_configs.py).

Names only (values are tiny dummies). They are the state-dict keys of transformers 5.23's
Gemma4ForConditionalGeneration / Gemma4UnifiedForConditionalGeneration built on the meta device
from the real config.json files (lm_head.weight left out: tied to embed_tokens, not stored),
cross-checked against the published names gathered in the real-files evidence
(gemma-4.safetensors-tensor-names.evidence.txt: model.language_model.*, layer_scalar,
embed_tokens_per_layer, per_layer_*, experts.gate_up_proj / down_proj without ".weight",
router.proj, model.embed_audio.embedding_projection.weight). The vision names the same build
gives are exactly tools/gen_checkpoint.py's (checked when this list was made, 659 of 659 for
e2b). The audio tower carries its own clip scalars (input_min, ...), under model.audio_tower:
a loader that matched clip bounds by suffix alone would pick them up.
"""

TEXT_LAYER = [
    "layer_scalar", "self_attn.q_proj.weight", "self_attn.q_norm.weight",
    "self_attn.k_norm.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
    "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
    "mlp.down_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight",
    "pre_feedforward_layernorm.weight", "post_feedforward_layernorm.weight",
]
# E2B/E4B: per-layer embeddings
PER_LAYER = ["per_layer_input_gate.weight", "per_layer_projection.weight",
             "post_per_layer_input_norm.weight"]
# 26B-A4B: the mixture of experts
MOE_LAYER = ["router.scale", "router.per_expert_scale", "router.proj.weight",
             "experts.gate_up_proj", "experts.down_proj", "post_feedforward_layernorm_1.weight",
             "post_feedforward_layernorm_2.weight", "pre_feedforward_layernorm_2.weight"]
TEXT_TOP = ["model.language_model.embed_tokens.weight", "model.language_model.norm.weight"]
PER_LAYER_TOP = ["model.language_model.embed_tokens_per_layer.weight",
                 "model.language_model.per_layer_model_projection.weight",
                 "model.language_model.per_layer_projection_norm.weight"]

_CLIP = ("input_min", "input_max", "output_min", "output_max")


def _clipped(prefix):
    return [f"{prefix}.{k}" for k in _CLIP] + [f"{prefix}.linear.weight"]


AUDIO_LAYER = (
    _clipped("feed_forward1.ffw_layer_1") + _clipped("feed_forward1.ffw_layer_2")
    + ["feed_forward1.pre_layer_norm.weight", "feed_forward1.post_layer_norm.weight"]
    + _clipped("feed_forward2.ffw_layer_1") + _clipped("feed_forward2.ffw_layer_2")
    + ["feed_forward2.pre_layer_norm.weight", "feed_forward2.post_layer_norm.weight",
       "self_attn.per_dim_scale"]
    + _clipped("self_attn.q_proj") + _clipped("self_attn.k_proj") + _clipped("self_attn.v_proj")
    + _clipped("self_attn.post") + ["self_attn.relative_k_proj.weight"]
    + _clipped("lconv1d.linear_start") + _clipped("lconv1d.linear_end")
    + ["lconv1d.depthwise_conv1d.weight", "lconv1d.pre_layer_norm.weight",
       "lconv1d.conv_norm.weight", "norm_pre_attn.weight", "norm_post_attn.weight",
       "norm_out.weight"])
AUDIO_TOP = [
    "model.audio_tower.subsample_conv_projection.layer0.conv.weight",
    "model.audio_tower.subsample_conv_projection.layer0.norm.weight",
    "model.audio_tower.subsample_conv_projection.layer1.conv.weight",
    "model.audio_tower.subsample_conv_projection.layer1.norm.weight",
    "model.audio_tower.subsample_conv_projection.input_proj_linear.weight",
    "model.audio_tower.output_proj.weight", "model.audio_tower.output_proj.bias",
    "model.embed_audio.embedding_projection.weight",
]


def other_tensor_names(config):
    """Every non-vision tensor name (HF "model." spelling) of the checkpoint config.json
    (a parsed dict) describes: text model, audio tower and audio embedder."""
    tc = config["text_config"]
    per_layer = bool(tc.get("hidden_size_per_layer_input"))
    moe = bool(tc.get("enable_moe_block") or tc.get("num_experts"))
    layer = TEXT_LAYER + (PER_LAYER if per_layer else []) + (MOE_LAYER if moe else [])
    names = list(TEXT_TOP) + (PER_LAYER_TOP if per_layer else [])
    names += [f"model.language_model.layers.{i}.{n}" for i in range(tc["num_hidden_layers"])
              for n in layer]
    ac = config.get("audio_config")
    if ac and ac.get("num_hidden_layers"):  # E2B/E4B: the audio tower
        names += AUDIO_TOP + [f"model.audio_tower.layers.{i}.{n}"
                              for i in range(ac["num_hidden_layers"]) for n in AUDIO_LAYER]
    elif ac:  # 12B: the audio embedder only
        names.append("model.embed_audio.embedding_projection.weight")
    return names


def dummy_shape(name):
    """A tiny shape of the tensor's real rank class: clip bounds are 0-d scalars, the rest [2]."""
    return [] if name.rsplit(".", 1)[-1] in _CLIP else [2]


def to_mlx(name):
    """mlx-community's spelling of an HF name (no "model." prefix; the text model under
    language_model.model)."""
    if name.startswith("model.language_model."):
        return "language_model.model." + name[len("model.language_model."):]
    return name[len("model."):] if name.startswith("model.") else name
