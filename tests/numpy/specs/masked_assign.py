"""Boolean-mask assignment as model code writes it: att[mask] = -np.inf for a causal mask,
y[y < 0] = 0 (a ReLU in place), whole rows selected by a mask of the leading axis and set
to a scalar or to one row, and through an alias (numpy's in-place write shows there too)."""
import numpy as np

DIMS = dict(T=5, D=6)


def masked_assign(x: "f32[T, D]", q: "f32[T, D]") -> (
    "f32[T, T]", "f32[T, D]", "f32[T, D]", "f32[T, D]", "f32[T, D]"):
    att = q @ q.T
    mask = np.triu(np.ones((q.shape[0], q.shape[0])), k=1).astype(bool)
    att[mask] = -np.inf
    relu = x.copy()
    relu[relu < 0] = 0
    rows = x * 1.0
    rows[x[:, 0] > 0] = -1.5
    row = x * 1.0
    alias = row
    row[x[:, 1] < 0] = q[0]
    return att, relu, rows, row, alias
