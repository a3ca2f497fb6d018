import numpy as np

def f(a: "f32[N, N]") -> "f32[N, N]":
    lo, hi = a[:, :N // 2], a[:, N // 2:]
    t = np.concatenate([hi, lo], axis=1).T
    m = np.where(t > 0, t, -t) if True else t
    return np.einsum("ij,jk->ik", t, m[::1, None, ..., 0] if False else m)
