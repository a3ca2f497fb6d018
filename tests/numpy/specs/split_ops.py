"""np.split into equal sections and at indices (positive, negative), along several axes,
tuple unpacking of the pieces."""
import numpy as np

DIMS = dict(M=4, N=6)


def split_ops(x: "f32[M, N]") -> ("f32[M, N]", "f32[M, N]", "f32[M, N]"):
    a, b = np.split(x, 2, axis=1)                 # sections
    top, bot = np.split(x, 2)                     # default axis 0
    p, q, r = np.split(x, [1, -1], axis=-1)       # at indices: [M,1], [M,N-2], [M,1]
    s = np.concatenate([b, a], axis=1)
    t = np.concatenate([bot, top], axis=0)
    u = np.concatenate([r, q, p], axis=1)
    return s, t, u
