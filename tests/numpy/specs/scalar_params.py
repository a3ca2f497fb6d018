"""Scalar parameters of the entry with defaults: held constant (not kernel inputs), used for
head counts, flags and scales, picoGPT's `mha(x, c_attn, c_proj, n_head)` style."""
import numpy as np

DIMS = dict(T=4, D=8)


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def scalar_params(x: "f32[T, D]", w: "f32[D, D]", n_head: int = 2, causal=True, scale: float = 0.5) -> "f32[T, D]":
    q = x @ w
    heads = np.split(q, n_head, axis=-1)
    mask = (1 - np.tri(x.shape[0], dtype=x.dtype)) * -1e10 if causal else 0.0
    outs = [softmax(h @ h.T * scale + mask) @ h for h in heads]
    return np.hstack(outs)
