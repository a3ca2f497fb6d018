"""The SwiGLU feed-forward block of Llama-style transformers:
down(silu(x @ W_gate) * (x @ W_up)). Two GEMMs share their left operand, one follows."""
import numpy as np

DIMS = dict(T=64, D=512, F=1024)


def silu(g):
    return g / (1.0 + np.exp(-g))


def swiglu_mlp(x: "f32[T, D]", w_gate: "f32[D, F]", w_up: "f32[D, F]",
               w_down: "f32[F, D]") -> "f32[T, D]":
    hidden = silu(x @ w_gate) * (x @ w_up)
    return hidden @ w_down


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    T, D, F = DIMS["T"], DIMS["D"], DIMS["F"]
    x = rng.standard_normal((T, D), dtype=np.float32)
    # Weights scaled like a trained layer so the activations stay O(1).
    w_gate = rng.standard_normal((D, F), dtype=np.float32) / np.float32(np.sqrt(D))
    w_up = rng.standard_normal((D, F), dtype=np.float32) / np.float32(np.sqrt(D))
    w_down = rng.standard_normal((F, D), dtype=np.float32) / np.float32(np.sqrt(F))
    out = swiglu_mlp(x, w_gate, w_up, w_down)
    print("swiglu_mlp", out.shape, out.dtype)
