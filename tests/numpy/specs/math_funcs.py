"""Every math function of the subset on arrays (np.*) and on Python scalars (math.*)."""
import math

import numpy as np

DIMS = dict(M=3, N=8)


def math_funcs(x: "f32[M, N]") -> ("f32[M, N]", "f32[M, N]", "f32[M, N]", "f64[M]"):
    pos = x * x + 0.25
    a = np.exp(x) + np.log(pos) + np.sqrt(pos)
    b = np.tanh(x) + np.sin(x) - np.cos(x)
    c = x * math.exp(0.5) + math.log(3.0) + math.tanh(0.3) - math.sin(1.0) + math.cos(2.0) + math.sqrt(2.0) \
        + math.erf(0.5) + math.fabs(-1.5) + math.log2(8.0) + math.log10(100.0)
    n = x.shape[1]
    d = np.exp(x.astype(np.float64)).sum(axis=1) / math.sqrt(n) + math.log(n)
    return a, b, c, d
