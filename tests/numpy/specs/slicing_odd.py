"""Slices on odd and size-1 dims: steps that do not divide the length, stop past the end
(clipped), start past a short axis, and slices whose length is a floor division."""
import numpy as np

DIMS = dict(M=5, N=7)


def slicing_odd(x: "f32[M, N]") -> ("f32[M]", "f32[N]", "f32[M]", "f32[N]"):
    a = x[:, ::2].sum(axis=1) + x[:, 1::3].sum(axis=-1)    # ceil(N/2) and ceil((N-1)/3) long
    b = x[::2].sum(axis=0) - x[-2::2].sum(axis=0)
    c = x[:, :2].sum(axis=1) + x[:, -100:].sum(axis=1)      # clipped at the bounds
    d = x[1:].sum(axis=0) + x[:, None][2:].sum(axis=(0, 1))   # empty when M <= 2
    return a, b, c, d
