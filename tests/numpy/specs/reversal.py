"""Reversed and negative-step slices, as model code flips sequences (a backward scan's
input, a reversed cumulative mask): x[::-1], x[:, ::-1], steps of -2 with and without
bounds, negative bounds, an empty result, np.flip (one axis, all axes), np.fliplr and
np.flipud; symbolic dims, so the rows read follow the length. And np.cumsum (an axis, the
flattened array, a boolean mask's positions as int64, an inf that must not reach the
elements before it)."""
import numpy as np

DIMS = dict(M=5, N=7)


def reversal(x: "f32[M, N]", g: "f32[2, M, N]") -> (
    "f32[M, N]", "f32[M, N]", "f32[M, N]", "f32[2, M, N]", "f32[M, N]", "f32[M, N]",
    "f32[M]", "f32[2, N]", "f32[M, N]", "f32[M*N]", "i64[M, N]", "f32[M, N]"):
    rows = x[::-1]
    cols = x[:, ::-1] + np.flip(x, 1)
    both = np.flip(x) + np.fliplr(np.flipud(x))
    whole = np.flip(g)
    back2 = x[::-2].sum(axis=0, keepdims=True) + x[-1::-3].max(axis=0) * x
    bounded = x[-2::-1][:, -1::-2].sum() + x
    empty = x[1:3:-1].sum() + x[:, 0]
    picked = g[:, -1, ::-1]
    running = np.cumsum(x, axis=0) + x.cumsum(-1)
    flat = np.cumsum(x)
    positions = np.cumsum(x > 0, axis=1) - 1
    blocked = np.where(x > 1.0, np.inf, x).cumsum(axis=1)
    return rows, cols, both, whole, back2, bounded, empty, picked, running, flat, positions, blocked
