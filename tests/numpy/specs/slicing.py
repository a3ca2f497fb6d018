"""Constant slicing: positive and negative bounds, steps, dim-derived bounds
(:HD//2, HD//2:), Ellipsis, and assignment-free windowing."""
import numpy as np

DIMS = dict(M=6, HD=8)


def slicing(x: "f32[M, HD]") -> ("f32[M, HD]", "f32[HD]", "f32[M, HD]", "f32[HD]", "f32[M, HD]"):
    hd = x.shape[-1]
    lo, hi = x[:, :hd // 2], x[:, hd // 2:]
    rot = np.concatenate([-hi, lo], axis=-1)                    # rotate-half
    last_first = x[-1] - x[0] + x[-1:].sum(axis=0)              # [HD]
    rev = x[::2, 1::3].sum() + x[1::2].sum(axis=0)              # strided, not reversed
    ev = x[..., ::2] + x[..., 1::2]                             # [M, HD/2]
    evw = np.concatenate([ev, ev], axis=1)
    mid = x[1:-1].sum(axis=0) + x[-3:, :].sum(axis=0)           # negative bounds
    return rot, last_first, rev + evw, mid, x[:, ::1] - x[0:, -hd:]
