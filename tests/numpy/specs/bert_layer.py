"""A BERT encoder layer as numpy ports write it: fused QKV split in three, heads by reshape and
transpose, einsum scores, a padding mask filled with np.finfo(np.float32).min, the exact
GELU through scipy.special.erf, post-norm layer norms."""
import math
import numpy as np
from scipy.special import erf

DIMS = dict(T=5, D=8, F=12)
N_HEAD = 4


def layer_norm(x, g, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return g * (x - mu) / np.sqrt(var + eps) + b


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def softmax(x, axis=-1):
    x = x - x.max(axis=axis, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def bert_layer(x: "f32[T, D]", pad: "bool[T]", wqkv: "f32[D, 3*D]", bqkv: "f32[3*D]", wo: "f32[D, D]", bo: "f32[D]",
               g1: "f32[D]", b1: "f32[D]", w1: "f32[D, F]", bb1: "f32[F]", w2: "f32[F, D]", bb2: "f32[D]",
               g2: "f32[D]", b2: "f32[D]") -> "f32[T, D]":
    T, D = x.shape
    hd = D // N_HEAD
    q, k, v = np.split(x @ wqkv + bqkv, 3, axis=-1)
    q = q.reshape(T, N_HEAD, hd).transpose(1, 0, 2)
    k = k.reshape(T, N_HEAD, hd).transpose(1, 0, 2)
    v = v.reshape(T, N_HEAD, hd).transpose(1, 0, 2)
    scores = np.einsum("hqd,hkd->hqk", q, k) / np.float32(np.sqrt(hd))
    scores = np.where(pad[None, None, :], np.finfo(np.float32).min, scores)
    ctx = np.einsum("hqk,hkd->hqd", softmax(scores), v).transpose(1, 0, 2).reshape(T, D)
    h = layer_norm(x + ctx @ wo + bo, g1, b1)
    return layer_norm(h + gelu(h @ w1 + bb1) @ w2 + bb2, g2, b2)
