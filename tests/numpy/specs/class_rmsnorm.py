"""Model classes: RMSNorm as people write it, `__init__` storing the weight and eps on self
and `forward` computing with them; eps is a Python scalar with a default, held constant.
The entry is RMSNorm.forward (the only annotated method): its arrays are weight, then x.
A class constant and a helper method read through self."""
import numpy as np

DIMS = dict(T=4, D=8)


class RMSNorm:
    """Root-mean-square normalization with a learned scale."""

    power = 2

    def __init__(self, weight: "f32[D]", eps: float = 1e-6):
        self.weight = weight
        self.eps = eps

    def mean_square(self, x):
        return (x**self.power).mean(-1, keepdims=True)

    def forward(self, x: "f32[T, D]") -> "f32[T, D]":
        z = self.mean_square(x) + self.eps
        return x / np.sqrt(z) * self.weight


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal(8).astype(np.float32), rng.standard_normal((4, 8)).astype(np.float32)
    print(RMSNorm(w).forward(x))
