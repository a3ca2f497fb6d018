"""Module constants (ints, floats, computed from each other and from math / np),
math.sqrt of a dim, np.pi, np.e and math.pi, math.inf."""
import math

import numpy as np

DIMS = dict(M=3, D=8)

EPS = 1e-6
HALF = 0.5
TWO_PI = 2 * np.pi
SCALE = 1 / math.sqrt(64)
NEG = -math.inf
C = (3 + 4) * HALF ** 2


def constants(x: "f32[M, D]") -> ("f32[M, D]", "f64[M, D]"):
    d = x.shape[-1]
    a = x / math.sqrt(d) + SCALE * x + TWO_PI + math.pi * EPS - np.e * C
    b = np.maximum(x, NEG) * np.sqrt(2.0 / np.pi) + np.float32(HALF) * x  # np.sqrt(float) is a strong f64
    return a, b
