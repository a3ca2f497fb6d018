"""Several outputs of different shapes and dtypes, including a returned input, the same
value twice, and a returned scalar expression."""
import numpy as np

DIMS = dict(M=3, N=4)


def multi_output(x: "f32[M, N]", y: "f32[N]") -> ("f32[M, N]", "f32[M]", "f32[M, N]", "f32[M]", "f64[N]", "f32[]"):
    s = x.sum(axis=1)
    return x, s, x + y, s, y.astype(np.float64) * 2, s.sum() * 0.5
