"""np.concatenate (axis 0, negative axis, tuple or list of arrays,
mixed symbolic sizes) and np.stack (new first, middle and last axis)."""
import numpy as np

DIMS = dict(M=2, N=3, P=4)


def concat_stack(x: "f32[M, N]", y: "f32[P, N]", z: "f32[M, P]") -> ("f32[M, N]", "f32[M, N]", "f32[2, M, N]", "f32[M, 3, N]", "f32[M, N, 2]"):
    c0 = np.concatenate([x, y, x], axis=0)                         # [2M+P, N]
    c1 = np.concatenate((x, z), axis=-1)                           # [M, N+P]
    flat = np.concatenate([x.reshape(-1), z.reshape(-1)])          # [M*N + M*P]
    a = c0[:x.shape[0]] + c0[-x.shape[0]:] + c1[:, :x.shape[1]] + flat[:x.size].reshape(x.shape)
    b = c1[:, x.shape[1]:].sum(axis=-1, keepdims=True) + x
    s0 = np.stack([x, x * 2])
    s1 = np.stack([x, a, b], axis=1)
    s2 = np.stack((x, -x), axis=-1)
    return a, b, s0, s1, s2
