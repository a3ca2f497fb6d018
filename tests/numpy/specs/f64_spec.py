"""A float64 spec end to end: f64 inputs and outputs, matmul, reductions, exp/log,
and Python scalars staying f64."""
import numpy as np

DIMS = dict(M=3, K=5, N=4)


def f64_spec(a: "f64[M, K]", b: "f64[K, N]", bias: "f64[N]") -> ("f64[M, N]", "f64[M]"):
    h = a @ b + bias
    p = np.exp(h - h.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    lse = np.log(np.exp(h).sum(axis=1)) + 1e-3 * (a * a).mean(axis=1)
    return p, lse
