"""mean / var / std with axis forms, keepdims and ddof, function and method forms."""
import numpy as np

DIMS = dict(A=3, B=4, C=6)


def reduce_mean_var(x: "f32[A, B, C]") -> ("f32[A, B]", "f32[C]", "f32[]", "f32[A, 1, C]", "f32[A, B, 1]", "f32[B]", "f32[A]"):
    a = x.mean(axis=-1)
    b = np.mean(x, axis=(0, 1))
    c = np.mean(x)
    d = np.var(x, axis=1, keepdims=True)
    e = x.var(axis=-1, keepdims=True, ddof=1) + x.std(axis=2, keepdims=True)
    f = np.std(x, axis=(0, 2))
    g = x.var(axis=(1, 2))
    return a, b, c, d, e, f, g
