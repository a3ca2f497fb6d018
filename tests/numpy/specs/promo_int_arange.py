"""Integer arrays meeting floats: np.arange is int64, int64 * f32 array is f64 (NEP 50:
the integer array is strong), int64 * Python float is f64, int64 / int64 is f64."""
import numpy as np

DIMS = dict(M=3, N=6)


def promo_int_arange(x: "f32[M, N]") -> ("f64[M, N]", "f64[N]", "f32[M, N]"):
    n = x.shape[1]
    i = np.arange(n)                       # int64 [N]
    a = x * i                              # f32 * int64 -> f64
    b = i * 0.5 + i / n                    # int64 * float, true division -> f64
    c = x * i.astype(np.float32) + (i * 2 - 1).astype(np.float32)
    return a, b, c
