"""GELU, tanh approximation (as in GPT-2 and BERT):
0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))). Purely elementwise."""
import math

import numpy as np

DIMS = dict(M=128, N=1024)

SQRT_2_OVER_PI = math.sqrt(2.0 / np.pi)


def gelu(x: "f32[M, N]") -> "f32[M, N]":
    inner = SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)
    return 0.5 * x * (1.0 + np.tanh(inner))


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x = rng.standard_normal((DIMS["M"], DIMS["N"]), dtype=np.float32)
    out = gelu(x)
    print("gelu", out.shape, out.dtype)
