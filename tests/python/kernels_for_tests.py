# Spec functions for the Python package's tests: a helper and module-level constants that
# ollie must carry into the spec file it writes.
import numpy as np

DIMS = dict(M=8, N=16)
SCALE = 0.5
OFFSET = 1.0


def _act(x):
    return np.maximum(x, 0) * SCALE


def relu_scale(x: "f32[M, N]") -> "f32[M, N]":
    return _act(x) + OFFSET


def relu_scale_numpy(x):
    """What relu_scale computes, in float64."""
    return np.maximum(x.astype(np.float64), 0) * SCALE + OFFSET
