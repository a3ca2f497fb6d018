"""Float floor division and modulo (numpy's floor semantics: the result takes the
divisor's sign), with exactly representable divisors, and their identity x = q*d + r."""
import numpy as np

DIMS = dict(M=3, N=7)


def float_mod(x: "f32[M, N]") -> ("f32[M, N]", "f32[M, N]", "f32[M, N]"):
    q = x // 0.25
    r = x % 0.5
    s = (-x) % 2.0 + x // -0.5
    return q, r, s
