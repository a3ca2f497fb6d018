"""Rounding to integers as quantization code writes it: a symmetric int8 fake-quant
(np.round(x / scale), np.clip, times scale), floor/ceil/trunc/rint, np.round with positive
and negative decimals (numpy's scale-rint-unscale in the array's dtype), ties at .5 (half to
even), and integers passing through unchanged."""
import numpy as np

DIMS = dict(M=3, N=8)


def rounding(x: "f32[M, N]", k: "i32[M, N]") -> (
    "f32[M, N]", "f32[M, N]", "f32[M, N]", "f32[M, N]", "f32[M, N]", "i32[M, N]", "f64[M, N]"):
    scale = np.abs(x).max(axis=-1, keepdims=True) / 127.0
    fake_quant = np.clip(np.round(x / scale), -127, 127) * scale
    ties = np.round(x * 4) / 2                  # many exact .5 ties: half to even
    parts = np.floor(x * 3) + np.ceil(x * 3) * 2 + np.trunc(x * 3) * 4 + np.rint(x * 3) * 8
    decimals = np.round(x * 10, 1) + np.around(x * 100, -1) + x.round(2)
    fixed = np.fix(-x * 5)
    ints = np.floor(k) + np.ceil(k) + np.round(k)
    return fake_quant, ties, parts, decimals, fixed, ints, np.rint(k)
