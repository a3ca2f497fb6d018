"""A plain float32 GEMM at 1024 x 1024 x 1024: C = A @ B.

The size where OpenBLAS's sgemm is at its best on a core of this kind (its packed
micro-kernel reaches 84-87% of the FMA peak here): 2.1 GFLOP over 12 MiB, far above the
ridge point, so the goal is the machine's FMA peak. matmul.py is the same spec at a
smaller size."""
import numpy as np

DIMS = dict(M=1024, K=1024, N=1024)


def gemm(a: "f32[M, K]", b: "f32[K, N]") -> "f32[M, N]":
    return a @ b


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    a = rng.standard_normal((DIMS["M"], DIMS["K"]), dtype=np.float32)
    b = rng.standard_normal((DIMS["K"], DIMS["N"]), dtype=np.float32)
    out = gemm(a, b)
    print("gemm", out.shape, out.dtype)
