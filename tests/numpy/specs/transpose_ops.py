"""transpose with and without a permutation (tuple and varargs), negative axes, .T,
swapaxes (method and function) and np.transpose."""
import numpy as np

DIMS = dict(A=2, B=3, C=4)


def transpose_ops(x: "f32[A, B, C]", m: "f32[B, C]") -> ("f32[C, B, A]", "f32[B, A, C]", "f32[C, A, B]", "f32[A, C, B]", "f32[C, B]", "f32[A, C, B]"):
    a = x.transpose() + x.T
    b = x.transpose(1, 0, 2) + np.transpose(x, (1, 0, 2))
    c = x.transpose((2, 0, 1)) * 2.0
    d = x.swapaxes(1, 2) - np.swapaxes(x, -1, -2)
    e = m.T + np.transpose(m)
    f = np.transpose(x, (0, -1, -2)) + m.T
    return a, b, c, d, e, f
