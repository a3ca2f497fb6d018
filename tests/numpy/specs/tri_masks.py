"""np.tri (N, N and M, k), np.triu / np.tril with k (positive, negative, default) on
inputs and on ones, and the float64 default dtype of np.tri."""
import numpy as np

DIMS = dict(S=5, T=3)


def tri_masks(x: "f32[S, S]", y: "f32[T, S]") -> ("f32[S, S]", "f32[T, S]", "f64[S, S]", "f32[S, S]"):
    s = x.shape[0]
    a = np.triu(x) + np.tril(x, -1) * 2 + np.triu(x, 2) - np.tril(x, k=1)
    b = np.tril(y, 1) + np.triu(y, k=-1) + np.tri(y.shape[0], s, 1, dtype=np.float32) * y
    c = np.tri(s) + np.tri(s, s, -2) + np.triu(np.ones((s, s)), 1)
    d = np.where(np.tri(s, dtype=bool), x, 0.0) + np.tril(np.ones_like(x)) * x
    return a, b, c, d
