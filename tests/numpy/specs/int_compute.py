"""Integer-valued computations on int32 inputs: + - * //, %, **, comparisons, sums and
max, np.where on ints, int32 with Python ints staying int32, true division to f64."""
import numpy as np

DIMS = dict(M=3, N=5)


def int_compute(i: "i32[M, N]", j: "i32[N]") -> ("i32[M, N]", "i32[M, N]", "i32[M]", "f64[M, N]", "i32[M, N]"):
    a = i * 3 - j + 2 * i * j + i ** 2
    d = j * j + 1                               # positive divisor
    b = i // d + i % d - (-i) // 3
    c = i.sum(axis=1).astype(np.int32) + i.max(axis=-1) - np.min(i, axis=1)
    e = i / d + j / 2
    f = np.where(i > j, i, j) + np.maximum(i, 0) * np.abs(j)
    return a, b, c, e, f
