"""Multi-head causal self-attention with input and output projections, one sequence.

The projection weights carry the head axis explicitly ([DM, H, HD] and [H, HD, DM], the
layout JAX/Flax models use) so that every reshape below is exact for any dims:
project, split heads, attend per head under a causal mask (np.triu), merge heads, W_o."""
import math

import numpy as np

DIMS = dict(S=256, DM=512, H=8, HD=64)

MASKED = -1e30   # below any real score, still finite in float32


def split_heads(x, w):
    # [S, DM] @ [DM, H*HD] -> [S, H, HD] -> [H, S, HD]
    s = x.shape[0]
    y = x @ w.reshape(w.shape[0], -1)
    return y.reshape(s, w.shape[1], w.shape[2]).transpose(1, 0, 2)


def mha_causal(x: "f32[S, DM]", w_q: "f32[DM, H, HD]", w_k: "f32[DM, H, HD]",
               w_v: "f32[DM, H, HD]", w_o: "f32[H, HD, DM]") -> "f32[S, DM]":
    s = x.shape[0]
    q = split_heads(x, w_q)
    k = split_heads(x, w_k)
    v = split_heads(x, w_v)
    scores = (q @ k.swapaxes(-1, -2)) / math.sqrt(w_q.shape[2])   # [H, S, S]
    future = np.triu(np.ones((s, s)), 1) > 0                       # True above the diagonal
    scores = np.where(future[None, :, :], MASKED, scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    heads = p @ v                                                  # [H, S, HD]
    merged = heads.transpose(1, 0, 2).reshape(s, -1)               # [S, H*HD]
    return merged @ w_o.reshape(-1, w_o.shape[2])


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    S, DM, H, HD = DIMS["S"], DIMS["DM"], DIMS["H"], DIMS["HD"]
    x = rng.standard_normal((S, DM), dtype=np.float32)
    scale_in = np.float32(1.0 / np.sqrt(DM))
    w_q = rng.standard_normal((DM, H, HD), dtype=np.float32) * scale_in
    w_k = rng.standard_normal((DM, H, HD), dtype=np.float32) * scale_in
    w_v = rng.standard_normal((DM, H, HD), dtype=np.float32) * scale_in
    w_o = rng.standard_normal((H, HD, DM), dtype=np.float32) * np.float32(1.0 / np.sqrt(H * HD))
    out = mha_causal(x, w_q, w_k, w_v, w_o)
    print("mha_causal", out.shape, out.dtype)
