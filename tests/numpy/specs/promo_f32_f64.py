"""Strong dtypes: f32 array with an f64 array gives f64; np.float64 / np.float32 scalars
made explicitly are strong too (numpy 2)."""
import numpy as np

DIMS = dict(M=3, N=4)


def promo_f32_f64(x: "f32[M, N]", y: "f64[M, N]", v: "f64[N]") -> ("f64[M, N]", "f64[M, N]", "f32[M, N]"):
    a = x + y                     # f32 + f64 -> f64
    b = x * v - y / 3.0           # f32 * f64 row -> f64
    c = (x * 2.0).astype(np.float32) + x   # stays f32
    return a, b, c
