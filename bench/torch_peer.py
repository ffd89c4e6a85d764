#!/usr/bin/python3
"""torch_peer.py - the PyTorch peer for bench_encoder: an eager implementation of the Gemma 4
vision tower (docs/NUMERICS.md §4) as a Hugging Face user runs it on CPU, on the same checkpoint.

Written from docs/NUMERICS.md §4, not from transformers: patch embedding (+ position table), 16
sandwich-norm layers (ClippableLinear q/k/v/o with q/k RMSNorm (weight as w), weightless v norm, 2D
rotate-half RoPE, eager attention as HF's eager path: scores with scale 1.0, softmax in f32
(Debian's torch 1.13 has no scaled_dot_product_attention), GeGLU-tanh MLP), 3x3 pooling, x sqrt(D),
[standardize], weightless RMSNorm, projection. Weights are loaded once from the safetensors files
(BF16/F16/F32) and cast to the run dtype: --dtype bf16 keeps bf16 weights and activations (norms and
softmax in f32, as HF does), f32 runs everything in f32. Runs under torch.inference_mode with
torch.set_num_threads(--threads), and OpenBLAS (which torch reaches through the plain BLAS
interface) limited to the same count through OPENBLAS_NUM_THREADS.

Prints one line per budget: "peer budget=B dtype=X L=... tokens=N median_s=S reps=R load_s=..."
(the image is random uint8 at the budget's square target size, patchified outside the timing;
the timing covers pixel_values -> soft tokens). Needs python3-torch and numpy; used by the bench
only, never by the tests.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time


def _argv_value(flag, default):
    for i, arg in enumerate(sys.argv):
        if arg == flag and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return default


# Read before numpy and torch load: Debian's torch calls the system BLAS (OpenBLAS here) through
# the plain libblas interface, so torch.set_num_threads does not reach it; OpenBLAS takes its
# thread count from the environment when it loads, and otherwise uses every core (a "1-thread"
# peer then ran its matmuls on 2 threads, above the 1-core peak). --blas-threads (default
# --threads) sets it apart from torch's own threads, so the peer can also run as torch 1 +
# OpenBLAS 2: torch's OpenMP threads then do not compete with OpenBLAS's for the 2 cores
# (bench/RESULTS.md, Zen 3, gives both configurations and counts the faster as the peer's).
os.environ["OPENBLAS_NUM_THREADS"] = _argv_value("--blas-threads", _argv_value("--threads", "1"))

import numpy as np  # noqa: E402  (after the thread count is in the environment)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import pyutil  # noqa: E402  (the safetensors header reader the tests share)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_plan  # noqa: E402  (the budgets, sides and repetitions asked for)


def load_tensors(path):
    files = []
    idx = os.path.join(path, "model.safetensors.index.json")
    if os.path.exists(os.path.join(path, "optiq_vision.safetensors")):
        files.append(os.path.join(path, "optiq_vision.safetensors"))
    if os.path.exists(idx):
        with open(idx) as f:
            files += sorted({os.path.join(path, v) for v in json.load(f)["weight_map"].values()})
    else:
        files.append(os.path.join(path, "model.safetensors"))
    out = {}
    for fn in files:
        header, base = pyutil.st_header(fn)
        for name, e in header.items():
            if name == "__metadata__":
                continue
            key = name[6:] if name.startswith("model.") else name
            if not (key.startswith("vision_tower.") or key.startswith("embed_vision.")):
                continue
            b, en = e["data_offsets"]
            dt = {"BF16": np.uint16, "F16": np.float16, "F32": np.float32}[e["dtype"]]
            cnt = int(np.prod(e["shape"], dtype=np.int64))
            raw = np.fromfile(fn, dtype=dt, count=cnt, offset=base + b)
            if e["dtype"] == "BF16":
                t = torch.from_numpy(raw.view(np.int16).copy()).view(torch.bfloat16)
            else:
                t = torch.from_numpy(raw.astype(np.float32))
            out.setdefault(key, t.reshape(e["shape"]))
    return out


class Tower:
    def __init__(self, path, dtype):
        with open(os.path.join(path, "config.json")) as f:
            cfg = json.load(f)
        v = cfg["vision_config"]
        self.D, self.I, self.layers = v["hidden_size"], v["intermediate_size"], v["num_hidden_layers"]
        self.H = v["num_attention_heads"]
        self.Hkv = v.get("num_key_value_heads", self.H)
        self.d, self.eps = v["head_dim"], v.get("rms_norm_eps", 1e-6)
        self.p, self.k = v.get("patch_size", 16), v.get("pooling_kernel_size", 3)
        self.clipped = bool(v.get("use_clipped_linears", False))
        self.standardize = bool(v.get("standardize", False))
        rope = v.get("rope_parameters") or {}
        self.theta = float(rope.get("rope_theta", v.get("rope_theta", 100.0)))
        self.dtype = dtype
        self.w = {k: t.to(dtype) for k, t in load_tensors(path).items()}

    def g(self, name):
        return self.w[name]

    def rms(self, x, w=None):  # docs/NUMERICS.md §3.1: f32 inside, weight as w, run dtype out
        xf = x.float()
        y = xf * torch.pow(xf.pow(2).mean(-1, keepdim=True) + self.eps, -0.5)
        if w is not None:
            y = y * w.float()
        return y.to(x.dtype)

    def lin(self, x, prefix):  # docs/NUMERICS.md §3.2 ClippableLinear
        if self.clipped:
            x = torch.clamp(x, self.g(prefix + ".input_min"), self.g(prefix + ".input_max"))
        y = F.linear(x, self.g(prefix + ".linear.weight"))
        if self.clipped:
            y = torch.clamp(y, self.g(prefix + ".output_min"), self.g(prefix + ".output_max"))
        return y

    def rope(self, px, py):  # docs/NUMERICS.md §4.5: cos/sin [L, d] for both halves, run dtype
        c = self.d // 2
        inv = 1.0 / (self.theta ** (torch.arange(0, c, 2, dtype=torch.float32) / c))
        tabs = []
        for pos in (px, py):
            ang = pos.float()[:, None] * inv[None, :]
            emb = torch.cat([ang, ang], -1)
            tabs.append((emb.cos(), emb.sin()))
        cos = torch.cat([tabs[0][0], tabs[1][0]], -1).to(self.dtype)
        sin = torch.cat([tabs[0][1], tabs[1][1]], -1).to(self.dtype)
        return cos[:, None, :], sin[:, None, :]

    @staticmethod
    def rot_half(x):
        h = x.shape[-1] // 2
        return torch.cat([-x[..., h:], x[..., :h]], -1)

    def apply_rope(self, x, cos, sin):
        c = self.d // 2
        parts = []
        for i in range(2):
            p = x[..., i * c:(i + 1) * c]
            parts.append(p * cos[..., i * c:(i + 1) * c] + self.rot_half(p) * sin[..., i * c:(i + 1) * c])
        return torch.cat(parts, -1)

    def forward(self, pixel_values, px, py, gh, gw):
        L, D, H, Hkv, d = pixel_values.shape[0], self.D, self.H, self.Hkv, self.d
        pe = "vision_tower.patch_embedder."
        x = (2.0 * (pixel_values - 0.5)).to(self.dtype)
        tab = self.g(pe + "position_embedding_table")
        h = F.linear(x, self.g(pe + "input_proj.weight")) + (tab[0, px] + tab[1, py])
        cos, sin = self.rope(px, py)
        for i in range(self.layers):
            pre = f"vision_tower.encoder.layers.{i}."
            a = self.rms(h, self.g(pre + "input_layernorm.weight"))
            q = self.lin(a, pre + "self_attn.q_proj").view(L, H, d)
            k = self.lin(a, pre + "self_attn.k_proj").view(L, Hkv, d)
            v = self.lin(a, pre + "self_attn.v_proj").view(L, Hkv, d)
            q = self.apply_rope(self.rms(q, self.g(pre + "self_attn.q_norm.weight")), cos, sin)
            k = self.apply_rope(self.rms(k, self.g(pre + "self_attn.k_norm.weight")), cos, sin)
            v = self.rms(v)
            if Hkv != H:
                k = k.repeat_interleave(H // Hkv, dim=1)
                v = v.repeat_interleave(H // Hkv, dim=1)
            # HF's eager attention: scores * 1.0, softmax in f32, cast back, times v
            qh, kh, vh = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
            s = torch.matmul(qh, kh.transpose(1, 2))
            pr = torch.softmax(s.float(), dim=-1).to(self.dtype)
            o = torch.matmul(pr, vh).transpose(0, 1).reshape(L, H * d)
            o = self.lin(o, pre + "self_attn.o_proj")
            h = h + self.rms(o, self.g(pre + "post_attention_layernorm.weight"))
            m = self.rms(h, self.g(pre + "pre_feedforward_layernorm.weight"))
            m = F.gelu(self.lin(m, pre + "mlp.gate_proj"), approximate="tanh") * self.lin(m, pre + "mlp.up_proj")
            m = self.lin(m, pre + "mlp.down_proj")
            h = h + self.rms(m, self.g(pre + "post_feedforward_layernorm.weight"))
        k3 = self.k
        pooled = h.float().view(gh // k3, k3, gw // k3, k3, D).mean(dim=(1, 3)).reshape(-1, D)
        pooled = pooled.to(self.dtype) * math.sqrt(D)
        if self.standardize:
            pooled = (pooled - self.g("vision_tower.std_bias")) * self.g("vision_tower.std_scale")
        n = self.rms(pooled)
        return F.linear(n, self.g("embed_vision.embedding_projection.weight"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--blas-threads", type=int, default=0,
                    help="OpenBLAS threads (default: --threads); read before torch loads")
    ap.add_argument("--budgets", default="70,140,280")
    ap.add_argument("--sides", default="", help="image sides per budget (from bench_encoder)")
    ap.add_argument("--reps", default="3", help="one count, or one per budget")
    ap.add_argument("--dtypes", default="bf16,f32")
    ap.add_argument("--bf16-max-budget", type=int, default=70,
                    help="skip bf16 above this budget: Debian's torch 1.13 has no fast CPU bf16 "
                         "matmul without AVX512-BF16 (~1.3 GFLOP/s on Zen 3), so larger budgets "
                         "take many minutes per image")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    points = peer_plan.plan(a.budgets, a.sides, a.reps)
    rng = np.random.default_rng(0)
    for dt in a.dtypes.split(","):
        t0 = time.perf_counter()
        tower = Tower(a.model, {"bf16": torch.bfloat16, "f32": torch.float32}[dt])
        load_s = time.perf_counter() - t0
        for b, side, r in points:
            if dt == "bf16" and b > a.bf16_max_budget:
                continue
            p = tower.p
            img = rng.integers(0, 256, (side, side, 3), dtype=np.uint8)
            gh = gw = side // p
            x = (img.astype(np.float32) / 255.0).reshape(gh, p, gw, p, 3).transpose(0, 2, 1, 3, 4)
            pix = torch.from_numpy(np.ascontiguousarray(x.reshape(gh * gw, p * p * 3)))
            px = torch.arange(gw).repeat(gh)
            py = torch.arange(gh).repeat_interleave(gw)
            times = []
            with torch.inference_mode():
                if dt != "bf16":  # warm-up (allocator, primitives); bf16 is too slow to repeat
                    tower.forward(pix, px, py, gh, gw)
                for _ in range(r):
                    t = time.perf_counter()
                    out = tower.forward(pix, px, py, gh, gw)
                    times.append(time.perf_counter() - t)
            print(f"peer budget={b} dtype={dt} L={gh * gw} tokens={out.shape[0]} "
                  f"median_s={statistics.median(times):.4f} reps={r} load_s={load_s:.2f} "
                  f"threads={torch.get_num_threads()} "
                  f"blas_threads={os.environ['OPENBLAS_NUM_THREADS']}", flush=True)


if __name__ == "__main__":
    main()
