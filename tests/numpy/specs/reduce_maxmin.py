"""max/min/amax/amin with every axis form and keepdims, and max - x stabilisation."""
import numpy as np

DIMS = dict(A=3, B=2, C=5)


def reduce_maxmin(x: "f32[A, B, C]") -> ("f32[A, B]", "f32[B, C]", "f32[C]", "f32[]", "f32[A, B, C]", "f32[1, B, 1]"):
    a = x.max(axis=-1)
    b = np.min(x, axis=0)
    c = np.amax(x, axis=(0, 1)) - np.amin(x, axis=(1, 0))
    d = x.min() + np.max(x)
    e = x - x.max(axis=2, keepdims=True) + np.min(x, axis=-3, keepdims=True)
    f = x.max(axis=(0, 2), keepdims=True)
    return a, b, c, d, e, f
