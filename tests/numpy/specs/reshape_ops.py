"""reshape with -1, tuple and varargs forms, np.reshape, and shapes computed from
x.shape (slices, tuple concatenation, products, .size and .ndim)."""
import numpy as np

DIMS = dict(A=2, B=3, C=4)


def reshape_ops(x: "f32[A, B, C]", y: "f32[A, B, C]") -> ("f32[A, B, C]", "f32[B, C, A]", "f32[A, B, C]", "f32[A, B, C]"):
    a, b, c = x.shape
    flat = x.reshape(-1)                                   # [A*B*C]
    pairs = y.reshape(y.shape[:-1] + (-1, 2))             # [A, B, C/2, 2]: C must be even
    r1 = flat.reshape(a, b, c) + pairs.reshape(x.shape)
    r2 = x.transpose(1, 2, 0).reshape(-1, a).reshape(b, c, a)
    r3 = x.reshape((a, -1)).reshape(x.shape[0], x.shape[1], -1)
    r4 = np.reshape(x.reshape(a, b * c), (a, b, c)) * x.size / x.shape[-1] / x.ndim
    return r1, r2, r3, r4
