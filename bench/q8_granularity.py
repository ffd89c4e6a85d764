#!/usr/bin/python3
"""q8_granularity.py - the per-GEMM error of int8 quantization at four scale granularities.

usage: q8_granularity.py [--rows 256] [--seed 0]
For the encoder's two GEMM depths (K = 768: q, k, v, o, gate, up on a Gaussian, RMS-normed
input; K = 3072: down, whose input is a GeGLU output with heavy tails), weights drawn as
tools/gen_checkpoint.py draws a linear (Gaussian, std K^-1/2), every combination of
{weights per output channel, per 32-block of K} x {activations per row, per 32-block of K}
is computed in int8 x int8 -> exact integer sums (numpy int64), dequantized in float64, and its
relative error ||y - y64|| / ||y64|| against the exact float64 product is printed as a markdown
table (docs/NUMERICS.md §12.2 keeps it). Codes as kernels/gemm_q8.h: scale amax / 127, code
round-half-even(v * 127 / amax), no -128. Needs numpy only; a few seconds.
"""
import argparse

import numpy as np

BLOCK = 32


def quantize(v, block):
    """Codes and scales of v [rows, K] per row (block None) or per `block` of K (K padded)."""
    rows, k = v.shape
    if block is None:
        amax = np.abs(v).max(axis=1, keepdims=True)
        s = amax / 127.0
        inv = np.where(amax > 0, 127.0 / np.where(amax > 0, amax, 1), 0)
        return np.clip(np.rint(v * inv), -127, 127).astype(np.int64), s
    kp = -(-k // block) * block
    vp = np.zeros((rows, kp), v.dtype)
    vp[:, :k] = v
    vb = vp.reshape(rows, kp // block, block)
    amax = np.abs(vb).max(axis=2, keepdims=True)
    s = amax / 127.0
    inv = np.where(amax > 0, 127.0 / np.where(amax > 0, amax, 1), 0)
    return np.clip(np.rint(vb * inv), -127, 127).astype(np.int64), s


def q8_gemm(x, w, xblock, wblock):
    """y = x · wᵀ through int8 codes at the given granularities (None: per row / per channel)."""
    if xblock is None and wblock is None:
        qa, sa = quantize(x, None)
        qw, sw = quantize(w, None)
        return (qa @ qw.T).astype(np.float64) * (sa * sw.T)
    # blocked on at least one side: sum the per-block dot products with their scales
    k = x.shape[1]
    nb = -(-k // BLOCK)
    if xblock is None:
        qa, sa = quantize(x, None)
        qa = np.pad(qa, ((0, 0), (0, nb * BLOCK - k))).reshape(x.shape[0], nb, BLOCK)
        sa = np.repeat(sa[:, :, None], nb, axis=1)
    else:
        qa, sa = quantize(x, BLOCK)
    if wblock is None:
        qw, sw = quantize(w, None)
        qw = np.pad(qw, ((0, 0), (0, nb * BLOCK - k))).reshape(w.shape[0], nb, BLOCK)
        sw = np.repeat(sw[:, :, None], nb, axis=1)
    else:
        qw, sw = quantize(w, BLOCK)
    y = np.zeros((x.shape[0], w.shape[0]))
    for b in range(nb):
        acc = qa[:, b, :] @ qw[:, b, :].T
        y += acc.astype(np.float64) * (sa[:, b, 0][:, None] * sw[:, b, 0][None, :])
    return y


def gelu_tanh(v):
    return 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    D, I = 768, 3072
    xg = rng.standard_normal((a.rows, D))
    w768 = rng.standard_normal((D, D)) * D ** -0.5
    # down's input: gelu(gate) * up of an RMS-normed x through gen_checkpoint-like weights
    wg = rng.standard_normal((I, D)) * D ** -0.5
    wu = rng.standard_normal((I, D)) * D ** -0.5
    xd = gelu_tanh(xg @ wg.T) * (xg @ wu.T)
    wd = rng.standard_normal((D, I)) * I ** -0.5
    cases = [("Gaussian x, K = 768", xg, w768), ("GeGLU output x (down), K = 3072", xd, wd)]
    combos = [("per row", None, "per channel", None), ("per 32-block", BLOCK, "per channel", None),
              ("per row", None, "per 32-block", BLOCK),
              ("per 32-block", BLOCK, "per 32-block", BLOCK)]
    print(f"{a.rows} rows, seed {a.seed}; relative error ||y - y64|| / ||y64||")
    print("| activations / weights | " + " | ".join(c[0] for c in cases) + " |")
    print("|---|" + "---|" * len(cases))
    for an, ab, wn, wb in combos:
        cells = []
        for _, x, w in cases:
            ref = x @ w.T
            y = q8_gemm(x, w, ab, wb)
            cells.append(f"{np.linalg.norm(y - ref) / np.linalg.norm(ref):.3g}")
        print(f"| {an} / {wn} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
