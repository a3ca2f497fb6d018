"""** with non-integer exponents: 0.5 (sqrt), -0.5, 1.7, base ** array, and array ** array."""
import numpy as np

DIMS = dict(M=3, N=6)


def power_float(x: "f32[M, N]", y: "f32[M, N]") -> ("f32[M, N]", "f32[M, N]", "f32[M, N]", "f32[M, N]"):
    p = np.abs(x) + 0.5                    # positive base
    a = p ** 0.5 + p ** -0.5 + p ** 1.7
    b = 2.0 ** x + 10.0 ** (y * 0.25)      # scalar base, array exponent
    c = p ** y                             # array ** array
    d = np.power(p, 2.5) + np.power(3.0, x)
    return a, b, c, d
