"""Integer indexing: first/last, negative, mixed with slices and None, Ellipsis, on
several axes at once, and x[i][j] chaining."""
import numpy as np

DIMS = dict(A=3, B=4, C=5)


def int_index(x: "f32[A, B, C]") -> ("f32[B, C]", "f32[A, C]", "f32[A, B]", "f32[]", "f32[1, C]", "f32[B]"):
    a = x[0] + x[-1]
    b = x[:, 1] - x[:, -1, :]
    c = x[..., 0] * x[..., -2]
    d = x[1, 2, 3] + x[-1][-1][-1]
    e = x[0, 0][None, :]
    f = x[2, :, 4] + x[-1, ..., -1]
    return a, b, c, d, e, f
