"""np.maximum / np.minimum with arrays, broadcast rows and scalars on either side,
clip with scalars, arrays and one side None, Python max/min of scalars."""
import numpy as np

DIMS = dict(M=3, N=6)

LIMIT = max(0.5, 0.25)


def minmax_clip(x: "f32[M, N]", lo: "f32[N]", y: "f32[M, N]") -> ("f32[M, N]", "f32[M, N]", "f32[M, N]"):
    a = np.maximum(x, 0.0) + np.minimum(0, y) + np.maximum(x, lo) - np.minimum(lo, y)
    b = np.clip(x, -LIMIT, LIMIT) + x.clip(lo, lo + 1.0) + np.clip(y, None, min(1.0, 2.0))
    c = np.maximum(np.minimum(x, y), lo) * 2
    return a, b, c
