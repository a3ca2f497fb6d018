"""Boolean logic: & | ~ on masks, np.logical_and/or/not, and the masks used as values."""
import numpy as np

DIMS = dict(M=3, N=6)


def logic_ops(x: "f32[M, N]", y: "f32[M, N]") -> ("bool[M, N]", "bool[M, N]", "f32[M, N]"):
    p, q = x > 0, y > 0
    a = (p & ~q) | (~p & q)                 # exclusive or
    b = np.logical_or(np.logical_and(p, q), np.logical_not(p | q))
    c = np.where(a & (x < y), x, 0.0) + (~b) * y
    return a, b, c
