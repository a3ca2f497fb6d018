import numpy as np

DIMS = dict(M=256, K=512, N=256)

def matmul_bias_relu(a: "f32[M, K]", b: "f32[K, N]", bias: "f32[N]") -> "f32[M, N]":
    return np.maximum(a @ b + bias, 0.0)
