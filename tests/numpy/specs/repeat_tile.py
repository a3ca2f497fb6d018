"""np.repeat (scalar count along an axis, flattening with axis=None) and np.tile."""
import numpy as np

DIMS = dict(M=2, N=3)


def repeat_tile(x: "f32[M, N]", v: "f32[N]") -> ("f32[M, N]", "f32[M, N]", "f32[M, N]"):
    r0 = np.repeat(x, 2, axis=0)              # rows duplicated: [2M, N]
    r1 = np.repeat(x, 3, axis=-1)             # [M, 3N]
    a = r0[::2] + r0[1::2] + r1[:, ::3] - r1[:, 2::3]
    flat = np.repeat(v, 2)                    # [2N]
    b = x * flat[1::2] + np.repeat(x, 1, axis=0)
    t = np.tile(v, 2)                         # [2N]
    c = x + t[:v.shape[0]] * t[v.shape[0]:]
    return a, b, c
