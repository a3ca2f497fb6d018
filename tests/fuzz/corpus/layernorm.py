import numpy as np

DIMS = dict(M=64, N=256)

def layernorm(x: "f32[M, N]", g: "f32[N]", b: "f32[N]", *, eps=1e-5) -> ("f32[M, N]", "f32[M]"):
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps) * g + b
    return y, mu[:, 0]
