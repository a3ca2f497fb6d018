"""np.linalg.norm (a row's 2-norm with keepdims, a column's, the whole matrix's Frobenius
norm, ord=2 and 'fro'), np.log1p and np.expm1, as model code writes them (an L2-normalized
embedding, a softplus, an ELU)."""
import numpy as np

DIMS = dict(M=3, N=7)


def norm_log1p_expm1(x: "f32[M, N]") -> ("f32[M, N]", "f32[N]", "f32[]", "f32[M]", "f32[M, N]", "f32[M, N]"):
    unit = x / np.linalg.norm(x, axis=-1, keepdims=True)
    cols = np.linalg.norm(x, ord=2, axis=0)
    whole = np.linalg.norm(x, 'fro')
    rows = np.linalg.norm(x, axis=1)
    softplus = np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)
    elu = np.where(x > 0, x, np.expm1(x))
    return unit, cols, whole, rows, softplus, elu
