"""Bool arithmetic: bool * f32 array is f32, bool + bool is logical or, bool sums count,
bool * Python float is f64, bool * Python int is int64."""
import numpy as np

DIMS = dict(M=4, N=5)


def promo_bool(x: "f32[M, N]", y: "f32[M, N]") -> ("f32[M, N]", "f64[M, N]", "i32[M]", "bool[M, N]", "i32[M, N]"):
    pos = x > 0
    big = y > 0.5
    a = pos * x + big * y                  # bool * f32 -> f32
    b = pos * 1.5 - big * 0.25             # bool * Python float -> f64
    c = pos.sum(axis=1).astype(np.int32)   # count of True
    d = pos + big                          # logical or
    e = (pos * 3 + big).astype(np.int32)   # bool * int -> int64
    return a, b, c, d, e
