"""RMSNorm (as in Llama and DeepSeek): scale each row by 1 / sqrt(mean(x^2) + eps),
then by a learned weight. No centring, one reduction."""
import numpy as np

DIMS = dict(T=128, D=1024)

EPS = 1e-6


def rmsnorm(x: "f32[T, D]", weight: "f32[D]") -> "f32[T, D]":
    mean_square = np.mean(x ** 2, axis=-1, keepdims=True)
    return x / np.sqrt(mean_square + EPS) * weight


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x = rng.standard_normal((DIMS["T"], DIMS["D"]), dtype=np.float32)
    weight = rng.standard_normal(DIMS["D"], dtype=np.float32)
    out = rmsnorm(x, weight)
    print("rmsnorm", out.shape, out.dtype)
