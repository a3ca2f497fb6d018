"""np.arange with 1, 2 and 3 arguments, dim-derived bounds, float steps, dtype=, and
arange used as positions."""
import numpy as np

DIMS = dict(N=6)


def arange_ops(x: "f32[N]") -> ("f32[N]", "f64[N]", "i32[N]", "f32[N]", "f64[6]"):
    n = x.shape[0]
    a = x * np.arange(n, dtype=np.float32) + np.arange(1, n + 1, dtype=np.float32)
    b = np.arange(0, 2 * n, 2) + np.arange(n - 1, -1, -1) * 0.5 + np.arange(n) * 0.5
    c = np.arange(n, dtype=np.int32) * 3 - np.arange(2, n + 2).astype(np.int32)
    d = x[np.newaxis, :][0] + np.arange(n).astype(np.float32) * x / n
    e = np.arange(0.0, 3.0, 0.5) + np.arange(6.0) + np.arange(1, 4, 0.5)  # float bounds, constant length
    return a, b, c, d, e
