"""Heads counted by a module constant: RELATIONS = ["D = N_HEAD * HD"] makes D // N_HEAD
exactly HD, and grouped-query attention's QH = 2 * KVH makes QH // KVH the constant 2."""
import numpy as np

N_HEAD = 2
DIMS = dict(T=3, HD=2, KVH=2)
RELATIONS = ["D = N_HEAD * HD", "QH = 2 * KVH"]


def dim_const_heads(x: "f32[T, D]", q: "f32[QH, T, HD]",
                    k: "f32[KVH, T, HD]") -> ("f32[T, D]", "f32[QH, T, T]"):
    T, D = x.shape
    heads = x.reshape(T, N_HEAD, D // N_HEAD)
    heads = heads - heads.mean(axis=-1, keepdims=True)
    y = heads.reshape(T, D)
    rep = q.shape[0] // k.shape[0]
    kk = np.repeat(k, rep, axis=0)                       # [QH, T, HD]
    s = q @ kk.swapaxes(-1, -2)
    return y, s
