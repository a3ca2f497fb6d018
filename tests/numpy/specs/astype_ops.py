"""astype between f32, f64, int32, int64 and bool (rounding on narrowing, truncation to
int), with np.float32 / 'float32' / float dtype spellings."""
import numpy as np

DIMS = dict(M=3, N=4)


def astype_ops(x: "f32[M, N]", y: "f64[M, N]") -> ("f32[M, N]", "f64[M, N]", "i32[M, N]", "f32[M, N]", "bool[M, N]"):
    a = y.astype(np.float32) * x + x.astype("float32")  # (f32 * f32 so float64 numpy stays exact)
    b = x.astype(np.float64) * y + x.astype(float)
    c = (y * 4).astype(np.int32) + (x * 3).astype(np.int64).astype(np.int32)
    d = (x > 0).astype(np.float32) * x + (y * 8).astype(np.int32).astype(np.float32)
    e = (x * 2).astype(np.int32).astype(bool)
    return a, b, c, d, e
