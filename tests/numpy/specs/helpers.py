"""Helpers: keyword arguments, defaults, tuple returns unpacked, nested helpers, helper
calling helper, and keyword-only parameters."""
import numpy as np

DIMS = dict(M=4, N=6)


def scale_shift(x, scale=2.0, shift=0.0):
    return x * scale + shift


def moments(x, axis=-1):
    mu = x.mean(axis=axis, keepdims=True)
    return mu, ((x - mu) ** 2).mean(axis=axis, keepdims=True)


def normalize(x, eps=1e-5, *, center=1.0):
    mu, var = moments(x)
    return (x - center * mu) / np.sqrt(var + eps)


def helpers(x: "f32[M, N]") -> ("f32[M, N]", "f32[M, N]", "f32[M, 1]"):
    a = scale_shift(x) + scale_shift(x, 3.0) + scale_shift(x, shift=1.0, scale=0.5)
    b = normalize(x) + normalize(x, eps=1e-3, center=0.0)
    mu, _ = moments(x, axis=1)
    return a, b, mu
