"""0-d results: reductions to scalars, 0-d inputs, a returned Python float computed from
dims, matmul of vectors, and 0-d arithmetic with broadcasting back to arrays."""
import numpy as np

DIMS = dict(N=4)


def scalar_outputs(s: "f32[]", v: "f32[N]") -> ("f32[]", "f64[]", "f32[N]", "f32[]", "f32[1]"):
    t = s * 2 + v.sum() * s
    n = v.shape[0] / 2.0 + 1
    w = v - v.mean() + s
    return t, n, w, v @ v - s * s, s.reshape(1) + s[None]
