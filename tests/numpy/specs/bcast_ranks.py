"""Broadcasting across rank combinations: scalar, 1-D, 2-D and 3-D operands against each
other, trailing-dim alignment, and explicit size-1 dims in the annotations."""
import numpy as np

DIMS = dict(B=2, M=3, N=4)


def bcast_ranks(s: "f32[]", v: "f32[N]", col: "f32[M, 1]", row: "f32[1, N]", m: "f32[M, N]",
                t: "f32[B, M, N]", tb: "f32[B, 1, 1]") -> ("f32[M, N]", "f32[B, M, N]", "f32[M, N]", "f32[B, M, N]", "f32[N]"):
    a = m + v * s                 # 2-D + 1-D * 0-D
    b = t - col + row * v         # 3-D - 2-D(size-1 col) + 2-D(size-1 row) * 1-D
    c = col * row                 # outer product by broadcasting: [M,1] * [1,N]
    d = tb * m + t * s - v        # [B,1,1] * [M,N] -> [B,M,N]
    e = s - v                     # 0-D - 1-D
    return a, b, c, d, e
