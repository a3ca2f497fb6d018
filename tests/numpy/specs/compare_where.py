"""Comparisons (every operator, ufunc forms, scalars on either side) feeding np.where
with array and Python-scalar branches."""
import numpy as np

DIMS = dict(M=4, N=5)


def compare_where(x: "f32[M, N]", y: "f32[M, N]", v: "f32[N]") -> ("f32[M, N]", "f64[M, N]", "f64[M, N]", "bool[M, N]", "bool[M, N]"):
    a = np.where(x > y, x, y) + np.where(x <= 0, 0.0, x)              # relu as where
    b = np.where(0.5 < x, 1, x) * np.where(y >= v, y, v) - np.where(x != y, 0, 1) * x   # int branches: int64, strong -> f64
    c = np.where(x < 0, -1.0, 1.0)                                     # both branches weak: f64
    d = (x == x) & (x >= -0.5) | (y < v)
    e = np.logical_and(np.greater_equal(x, y), np.less(y, 0.5)) | np.equal(x, v) \
        | np.not_equal(y, y) | np.less_equal(x, -1.0) | np.greater(y, 1.0)
    return a, b, c, d, e
