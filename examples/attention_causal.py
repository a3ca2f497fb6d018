"""Single-head causal self-attention: softmax(q k^T / sqrt(D) + causal mask) @ v.

Query i sees keys 0..i. The mask is np.where on a lower-triangular np.tri rather than
adding -inf, so a masked score is a large finite negative and exp sends it to exactly 0.
The S x S score matrix is what flash-style rewrites avoid materializing."""
import math

import numpy as np

DIMS = dict(S=512, D=64)

MASKED = -1e30   # below any real score, still finite in float32


def softmax_rows(scores):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention_causal(q: "f32[S, D]", k: "f32[S, D]", v: "f32[S, D]") -> "f32[S, D]":
    s = q.shape[0]
    scores = (q @ k.T) / math.sqrt(q.shape[1])
    visible = np.tri(s, s) > 0          # True on and below the diagonal
    scores = np.where(visible, scores, MASKED)
    return softmax_rows(scores) @ v


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    S, D = DIMS["S"], DIMS["D"]
    q = rng.standard_normal((S, D), dtype=np.float32)
    k = rng.standard_normal((S, D), dtype=np.float32)
    v = rng.standard_normal((S, D), dtype=np.float32)
    out = attention_causal(q, k, v)
    print("attention_causal", out.shape, out.dtype)
