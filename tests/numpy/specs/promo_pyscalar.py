"""NEP 50: Python int and float scalars are weak, so an f32 array stays f32 with them,
on either side of every operator, also as the result of scalar arithmetic."""
import numpy as np

DIMS = dict(M=3, N=5)

K = 3
ALPHA = 0.1


def promo_pyscalar(x: "f32[M, N]") -> ("f32[M, N]", "f32[M, N]", "f32[M, N]"):
    a = x * 2 + 1 - K * x                   # Python ints
    b = 0.5 * x - ALPHA / (x * x + 1) + 2.5 # Python floats, scalar on the left of /
    c = (x - 1.0 / 3.0) * (K / 2) + (K * ALPHA)  # scalar arithmetic folded first
    return a, b, c
