"""** with integer exponents: positive, negative, zero and one, np.power and x ** int
where the exponent comes from a dim."""
import numpy as np

DIMS = dict(M=3, N=5)


def power_int(x: "f32[M, N]") -> ("f32[M, N]", "f32[M, N]", "f32[M, N]", "f32[M, N]"):
    d = x * x + 0.5
    a = x ** 2 + x ** 3 - x ** 1 + x ** 0
    b = d ** -1 + d ** -2 + 2 * d ** -3
    c = np.power(x, 2) + np.power(d, -1)
    e = (-x) ** 4 + x ** 5
    return a, b, c, e
