"""np.hstack (1-D end to end, N-d along axis 1), np.vstack (1-D arrays as rows),
np.array_split into sections that need not divide the axis (numpy: the first N % 3
parts one longer), and .T on a 3-d array (all axes reversed)."""
import numpy as np

DIMS = dict(M=3, N=7, K=2)


def hvstack_array_split(a: "f32[M, N]", b: "f32[M, K]", u: "f32[N]",
                        c: "f32[K, M, N]") -> ("f32[M, N + K]", "f32[N + K]", "f32[M + 2, N]",
                                               "f32[M, N]", "f32[N, M, K]"):
    h = np.hstack([a, b])
    h1 = np.hstack((u, b[0]))
    v = np.vstack([a, u, u * 2.0])
    p, q, r = np.array_split(a, 3, axis=1)
    s = np.concatenate([r, p * 3.0, q], axis=1)
    return h, h1, v, s, c.T
