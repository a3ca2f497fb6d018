"""Layer normalization of float16 activations, as deployed: float16 in, the statistics and
the normalization in float32 after an explicit astype, float16 out (rounded once, to
nearest even, as numpy rounds). gamma and beta stay float32, as mixed-precision training
keeps its parameters.

The same two-pass form as layernorm.py (mean, then the variance of the centred values;
eps inside the square root)."""
import numpy as np

DIMS = dict(T=128, D=1024)

EPS = 1e-5


def layernorm_f16(x: "f16[T, D]", gamma: "f32[D]", beta: "f32[D]") -> "f16[T, D]":
    x32 = x.astype(np.float32)
    mean = x32.mean(axis=-1, keepdims=True)
    centred = x32 - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return (centred / np.sqrt(var + EPS) * gamma + beta).astype(np.float16)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x = rng.standard_normal((DIMS["T"], DIMS["D"])).astype(np.float16)
    gamma = rng.standard_normal(DIMS["D"], dtype=np.float32)
    beta = rng.standard_normal(DIMS["D"], dtype=np.float32)
    out = layernorm_f16(x, gamma, beta)
    print("layernorm_f16", out.shape, out.dtype)
