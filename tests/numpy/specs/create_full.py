"""np.full / np.zeros / np.ones with constant shapes, dim-derived shapes, an int shape,
and dtype= (f32, f64, int32, bool), combined with inputs so the dtype shows."""
import numpy as np

DIMS = dict(M=3, N=4)


def create_full(x: "f32[M, N]") -> ("f32[M, N]", "f64[M, N]", "f32[M, N]", "i32[3, 2]", "bool[M]"):
    m, n = x.shape
    a = x + np.zeros((m, n), dtype=np.float32) + np.ones(n, dtype=np.float32) + np.full((m, 1), 2.5, dtype=np.float32)
    b = x + np.zeros(x.shape) + np.ones((1, n)) * 3     # default dtype f64 promotes
    c = x * np.full(x.shape, 0.5, np.float32) - np.full(n, 7, dtype=np.float32)
    d = np.full((3, 2), 4, dtype=np.int32) + np.ones((3, 2), np.int32)
    e = np.zeros(m, dtype=bool) | np.ones(m, dtype=np.bool_)
    return a, b, c, d, e
