"""List literals where numpy wants an array, and Python's sum() of a list, as model code
writes them: np.array of numbers (float64, int64, bool, nested, a dim among them), of
arrays (stacked in their common dtype), np.sum/np.mean over a list of arrays, and sum()
of per-head terms from a comprehension."""
import numpy as np

DIMS = dict(M=3, N=4)
RELATIONS = ["N = 4"]


def list_literals(x: "f32[M, N]", y: "f64[M, N]") -> (
    "f32[M, N]", "f64[M, N]", "f64[2, M, N]", "f32[N]", "f64[M, N]", "f32[M, N]"):
    scale = np.array([0.5, 1.0, 2.0, -1.0])            # float64
    counts = np.array([[1, 2], [3, x.shape[0]]])       # int64, one a dim
    flags = np.array([True, False, True, True])
    a = (x * scale.astype(np.float32)) * flags
    b = y + counts.sum() + np.array([1, 2, 3, 4])
    stacked = np.array([x, y])                         # float64: the common dtype
    mean = np.mean([x, 2 * x, x * x], axis=0)
    heads = sum([x[:, i:i + 1] * x for i in range(2)])
    started = sum((y, y), 0.5 * y)
    return a, b, stacked, mean[0], started, heads
