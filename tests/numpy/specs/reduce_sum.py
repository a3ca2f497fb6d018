"""sum with axis int, negative, tuple and None, keepdims, function and method forms."""
import numpy as np

DIMS = dict(A=2, B=3, C=4)


def reduce_sum(x: "f32[A, B, C]") -> ("f32[B, C]", "f32[A, B]", "f32[B]", "f32[]", "f32[A, 1, C]", "f32[1, 1, 1]", "f32[A]"):
    a = np.sum(x, axis=0)
    b = x.sum(axis=-1)
    c = np.sum(x, axis=(0, -1))
    d = x.sum()
    e = x.sum(1, keepdims=True)
    f = np.sum(x, axis=None, keepdims=True)
    g = x.sum(axis=(2, 1))
    return a, b, c, d, e, f, g
