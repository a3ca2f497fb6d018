"""np.zeros_like / ones_like / full_like keep shape and dtype (or take dtype=)."""
import numpy as np

DIMS = dict(M=3, N=5)


def create_like(x: "f32[M, N]", y: "f64[N]") -> ("f32[M, N]", "f64[N]", "f64[M, N]"):
    a = np.zeros_like(x) + np.ones_like(x) * x + np.full_like(x, 0.25)
    b = np.ones_like(y) - y + np.full_like(y, 3)
    c = np.zeros_like(x, dtype=np.float64) + np.full_like(x, 1.5, dtype=np.float64) * x
    return a, b, c
