"""A fused linear layer: relu(A @ B + bias), the bias broadcast over rows.

Tests epilogue fusion: the add and the max should happen while the tile is in registers."""
import numpy as np

DIMS = dict(M=256, K=512, N=256)


def matmul_bias_relu(a: "f32[M, K]", b: "f32[K, N]", bias: "f32[N]") -> "f32[M, N]":
    return np.maximum(a @ b + bias, 0.0)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    a = rng.standard_normal((DIMS["M"], DIMS["K"]), dtype=np.float32)
    b = rng.standard_normal((DIMS["K"], DIMS["N"]), dtype=np.float32)
    bias = rng.standard_normal(DIMS["N"], dtype=np.float32)
    out = matmul_bias_relu(a, b, bias)
    print("matmul_bias_relu", out.shape, out.dtype)
