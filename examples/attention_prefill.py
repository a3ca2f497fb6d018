"""Multi-head non-causal attention, prefill: S queries attend to all S keys, per head,
softmax(q k^T / sqrt(D)) @ v.

The shape of an encoder's self-attention (BERT-base: 12 heads of 64, sequences up to 512
tokens) or of a prefill over a prompt whose every token sees every other (cross-attention,
bidirectional encoders). Here 8 heads of 64 over 512 tokens: an H x S x S score tensor of
8 MiB that flash-style kernels never materialize, compute-bound (about 0.5 GFLOP). No
mask: every key is visible, unlike attention_causal.py."""
import math

import numpy as np

DIMS = dict(H=8, S=512, D=64)


def softmax_rows(scores):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention_prefill(q: "f32[H, S, D]", k: "f32[H, S, D]", v: "f32[H, S, D]") -> "f32[H, S, D]":
    scores = (q @ k.transpose(0, 2, 1)) / math.sqrt(q.shape[-1])
    return softmax_rows(scores) @ v


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    H, S, D = DIMS["H"], DIMS["S"], DIMS["D"]
    q = rng.standard_normal((H, S, D), dtype=np.float32)
    k = rng.standard_normal((H, S, D), dtype=np.float32)
    v = rng.standard_normal((H, S, D), dtype=np.float32)
    out = attention_prefill(q, k, v)
    print("attention_prefill", out.shape, out.dtype)
