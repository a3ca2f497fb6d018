"""Broadcasting where a symbolic dim may itself be 1 (the test runs it at size 1) and
where size-1 dims on both sides stretch against each other."""
import numpy as np

DIMS = dict(B=3, M=4, N=5)


def bcast_size1(x: "f32[B, 1, N]", y: "f32[1, M, 1]", z: "f32[M, N]", w: "f32[B, M, 1]") -> ("f32[B, M, N]", "f32[B, M, N]"):
    p = x * y + z                 # both sides stretch
    q = (w / (y * y + 1.0)) - x   # [B,M,1] / [1,M,1] - [B,1,N]
    return p, q
