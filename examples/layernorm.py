"""Layer normalization over the last axis with a learned scale (gamma) and shift (beta).

Uses the two-pass form (mean, then the variance of the centred values), as PyTorch's
LayerNorm defines it (biased variance, eps inside the square root)."""
import numpy as np

DIMS = dict(T=128, D=1024)

EPS = 1e-5


def layernorm(x: "f32[T, D]", gamma: "f32[D]", beta: "f32[D]") -> "f32[T, D]":
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(var + EPS) * gamma + beta


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x = rng.standard_normal((DIMS["T"], DIMS["D"]), dtype=np.float32)
    gamma = rng.standard_normal(DIMS["D"], dtype=np.float32)
    beta = rng.standard_normal(DIMS["D"], dtype=np.float32)
    out = layernorm(x, gamma, beta)
    print("layernorm", out.shape, out.dtype)
