"""sigmoid(x) = 1 / (1 + exp(-x)), overflowing float32's exp for x < -88.7."""
import numpy as np

DIMS = dict(N=256)


def sigmoid(x: "f32[N]") -> "f32[N]":
    return 1.0 / (1.0 + np.exp(-x))
