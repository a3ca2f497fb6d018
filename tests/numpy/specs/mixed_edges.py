"""Edge combinations: int32 matmul and einsum, dim ** 0.5 and 1 / math.sqrt(dim) as weak
scalars, split at a dim-derived index, tile with a tuple, expand_dims with several
axes, np.dot of matrices, 0-d conditions in np.where, comparisons of masks."""
import math

import numpy as np

DIMS = dict(M=4, N=6)


def mixed_edges(x: "f32[M, N]", i: "i32[M, N]", c: "bool[]") -> ("i32[M, M]", "f32[M, N]", "f32[M, N]", "f32[1, M, 1, N]", "f32[M, M]", "bool[M, N]"):
    n = x.shape[1]
    ii = i @ i.T + np.einsum('ij,kj->ik', i, i)
    scaled = x * n ** 0.5 + x / math.sqrt(n) + x * (1 / n)
    left, right = np.split(x, [n // 2], axis=1)
    halves = np.concatenate([right, left], axis=1) + np.tile(x, (1, 2))[:, n:] + np.tile(x[:1], (2, 1))[1:]
    e = np.expand_dims(x, (0, 2)) + np.where(c, 1.0, x)[None, :, None, :]
    d = np.dot(x, x.T) + np.where(c, x @ x.T, 0.0)
    m = (x > 0) == (i > 0)
    return ii.astype(np.int32), scaled, halves, e, d, m
