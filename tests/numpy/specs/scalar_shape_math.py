"""Python int arithmetic on dims: shape products, // and %, len(), x.size/x.ndim, Python
max/min of dims, tuple indexing and dims used as float scalars."""
import numpy as np

DIMS = dict(M=4, N=6)


def scalar_shape_math(x: "f32[M, N]") -> ("f32[M, N]", "f32[M, N]"):
    m, n = x.shape
    total = m * n
    half = n // 2
    acc = x * 6 + x * max(m, n) - x * min(m, n)
    a = acc / total + x * len(x) / x.size + half - x.ndim
    b = np.repeat(x[:, :half], 2, axis=1) * (n % 2 + 1) + x.shape[-1] / 2.0
    return a, b
