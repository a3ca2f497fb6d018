"""Every elementwise arithmetic operator and numpy ufunc form of it."""
import numpy as np

DIMS = dict(M=3, N=7)


def elementwise_arith(x: "f32[M, N]", y: "f32[M, N]") -> ("f32[M, N]", "f32[M, N]", "f32[M, N]", "f32[M, N]"):
    d = y * y + 0.5                        # away from zero
    a = x + y - x * y + x / d
    b = np.add(x, y) - np.subtract(y, x) + np.multiply(x, 3) + np.divide(x, d) + np.true_divide(y, d)
    c = -x + np.negative(y) + np.abs(x) + np.absolute(y) + abs(x - y)
    e = np.square(x) + np.reciprocal(d) + np.maximum(x, y) - np.minimum(x, 0.25) + np.clip(y, -0.5, 0.5)
    return a, b, c, e
