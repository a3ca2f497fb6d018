"""Dense matrix multiply, the smallest useful spec: C = A @ B in float32.

The baseline every contraction kernel is measured against (a GEMM roofline)."""
import numpy as np

DIMS = dict(M=256, K=512, N=256)


def matmul(a: "f32[M, K]", b: "f32[K, N]") -> "f32[M, N]":
    return a @ b


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    a = rng.standard_normal((DIMS["M"], DIMS["K"]), dtype=np.float32)
    b = rng.standard_normal((DIMS["K"], DIMS["N"]), dtype=np.float32)
    out = matmul(a, b)
    print("matmul", out.shape, out.dtype)
