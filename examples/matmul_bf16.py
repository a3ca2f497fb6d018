"""A bfloat16 GEMM at 1024 x 1024 x 1024 with float32 output: C = A @ B.

bfloat16 operands (ml_dtypes.bfloat16, as jax stores them), products and sums in
float32 after an explicit astype (the product of two bfloat16 values is exact in float32),
the float32 result not rounded back: the contraction that matrix units (AMX's tdpbf16ps)
and AVX512_BF16's vdpbf16ps compute. gemm.py is the float32 GEMM at the same size."""
import ml_dtypes
import numpy as np

DIMS = dict(M=1024, K=1024, N=1024)


def matmul_bf16(a: "bf16[M, K]", b: "bf16[K, N]") -> "f32[M, N]":
    return a.astype(np.float32) @ b.astype(np.float32)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    a = rng.standard_normal((DIMS["M"], DIMS["K"]), dtype=np.float32).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((DIMS["K"], DIMS["N"]), dtype=np.float32).astype(ml_dtypes.bfloat16)
    out = matmul_bf16(a, b)
    print("matmul_bf16", out.shape, out.dtype)
