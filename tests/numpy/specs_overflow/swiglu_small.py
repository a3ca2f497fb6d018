"""A small SwiGLU MLP, down(silu(x @ w_gate) * (x @ w_up)); with unscaled weights some
gate values pass -88.7 and their exp(-g) overflows float32."""
import numpy as np

DIMS = dict(T=8, D=16, F=32)


def silu(g):
    return g / (1.0 + np.exp(-g))


def swiglu_small(x: "f32[T, D]", w_gate: "f32[D, F]", w_up: "f32[D, F]",
                 w_down: "f32[F, D]") -> "f32[T, D]":
    return (silu(x @ w_gate) * (x @ w_up)) @ w_down
