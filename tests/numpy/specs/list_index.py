"""Fancy indexing by one constant list of integers, as model code permutes or picks rows:
the list's order, repeats, negative entries, after an ellipsis, with None before it, next to
an integer index (numpy puts the single list's axis where the list stands, or first when a
slice separates it from an integer index)."""
import numpy as np

DIMS = dict(M=3, N=4)


def list_index(x: "f32[M, N]", g: "f32[2, M, N]") -> (
    "f32[M, 3]", "f32[4, N]", "f32[2, M, 2]", "f32[1, 2, N]", "f32[3]", "f32[2, M]"):
    perm = x[:, [2, 0, 1]]
    rows = x[[0, -1, 0, 1]]
    last = g[..., [-1, 0]]
    lifted = x[None, [1, 0]]
    picked = g[1, [0, 1, 2], 3]
    apart = g[1, :, [0, 2]]                            # a slice between: the list's axis first
    return perm, rows, last, lifted, picked, apart
