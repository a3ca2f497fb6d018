"""matmul with 1-D operands: vector @ matrix, matrix @ vector, vector @ vector (a 0-d
result), np.matmul, np.dot and the batched matrix @ vector."""
import numpy as np

DIMS = dict(B=2, M=3, K=5)


def matmul_1d(a: "f32[M, K]", u: "f32[K]", w: "f32[M]", t: "f32[B, M, K]") -> ("f32[M]", "f32[K]", "f32[]", "f32[B, M]", "f32[]"):
    mv = a @ u
    vm = np.matmul(w, a)
    vv = u @ u
    bmv = t @ u
    dot = np.dot(w, w) + np.dot(u, u)
    return mv, vm, vv, bmv, dot
