"""Reductions with dtype= (f32 summed in f64, ints summed to f32), reductions over
size-1 axes, of integer arrays (sum -> int64, mean -> f64) and of booleans."""
import numpy as np

DIMS = dict(M=3, N=5)


def reduce_dtype(x: "f32[M, N]", i: "i32[M, N]") -> ("f64[M]", "f32[N]", "f64[M]", "i32[M]", "f32[M, 1]", "f64[]"):
    a = x.sum(axis=1, dtype=np.float64) + np.mean(x, axis=-1, dtype=np.float64)
    b = np.sum(i, axis=0, dtype=np.float32) + x.sum(axis=0)
    c = i.mean(axis=1) + i.var(axis=-1)
    d = (x > 0).sum(axis=1).astype(np.int32) + i.sum(axis=1).astype(np.int32) + i.max(axis=1)
    e = x[:, :1].sum(axis=1, keepdims=True) + x[:, :1].max(axis=-1, keepdims=True)
    f = i.sum() * 0.5 + (i > 0).mean()
    return a, b, c, d, e, f
