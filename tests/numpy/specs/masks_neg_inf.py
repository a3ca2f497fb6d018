"""Masks: -inf and large-negative fills with np.where, causal masks from np.triu / tri and
comparisons of aranges, masked softmax (exp(-inf) = 0) and masked max."""
import numpy as np

DIMS = dict(S=5, D=3)


def masks_neg_inf(q: "f32[S, D]", k: "f32[S, D]") -> ("f32[S, S]", "f32[S, S]", "f32[S]", "f32[S, S]"):
    s = q.shape[0]
    scores = q @ k.T
    causal = np.arange(s)[:, None] >= np.arange(s)[None, :]
    masked = np.where(causal, scores, -np.inf)
    e = np.exp(masked - masked.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    big = np.where(np.triu(np.ones((s, s), dtype=bool), 1), -1e30, scores)
    rowmax = masked.max(axis=1)
    return p, big, rowmax, masked
