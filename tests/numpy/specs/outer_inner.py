"""np.outer of vectors (either order, of an expression) and np.inner of vectors."""
import numpy as np

DIMS = dict(M=3, N=4)


def outer_inner(u: "f32[M]", v: "f32[N]", a: "f32[M, N]") -> ("f32[M, N]", "f32[N, M]", "f32[]"):
    o = np.outer(u, v) + a
    r = np.outer(v, u * 2.0)
    i = np.inner(u, u) + np.inner(v, v)
    return o, r, i
