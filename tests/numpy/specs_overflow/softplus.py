"""softplus(x) = log(1 + exp(x)) written naively: for x > 88.7 float32 gives inf, which
ollie must accept (the overflowing elements have an infinite bound)."""
import numpy as np

DIMS = dict(N=256)


def softplus(x: "f32[N]") -> "f32[N]":
    return np.log(1.0 + np.exp(x))
