"""np.expand_dims (single and tuple axes, negative), squeeze (all, one axis, method and
function), None / np.newaxis indexing in every position."""
import numpy as np

DIMS = dict(M=3, N=4)


def expand_squeeze(x: "f32[M, N]", s: "f32[1, M, 1]") -> ("f32[1, M, N]", "f32[M, N, 1]", "f32[M, 1, N]", "f32[M]", "f32[M, 1]", "f32[M, N, M]"):
    a = np.expand_dims(x, 0) + x[None]
    b = np.expand_dims(x, -1) + x[..., np.newaxis] + x[:, :, None]
    c = x[:, None, :] + np.expand_dims(x, axis=(1,))
    d = s.squeeze() + np.squeeze(s, axis=(0, 2))
    e = s.squeeze(0) + np.squeeze(s, 0)
    f = x[:, :, None] * x.T[None, :, :]
    return a, b, c, d, e, f
