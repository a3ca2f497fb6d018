"""One GPT-2 transformer block (pre-norm, causal multi-head attention, GELU MLP), written
after picoGPT's gpt2.py (github.com/jaymody/picoGPT) the way people write it: helpers
`gelu`, `softmax`, `layer_norm`, `linear`, `ffn`, `attention`, `mha`. GPT-2 small has
D=768, 12 heads, T up to 1024; the dims are scaled to a 2-core machine (D=256, 4 heads of
64, the MLP 4*D wide, T=64) so that verification stays in seconds.

Differences from picoGPT: the spec language now reads picoGPT's functions unchanged
(dicts passed with **, list(map(lambda ...)), a comprehension over zip(*heads), np.hstack;
tests/numpy/specs/picogpt_block.py), but this example keeps the computation in float32
as deployed GPT-2 kernels do: picoGPT's np.sqrt(2 / np.pi) is a float64 scalar, with
which numpy 2 computes the whole MLP in float64 (ollie names it when the annotation says
f32). So GELU's constant is math.sqrt(2 / math.pi), and the heads are a reshape and
transpose with q, k, v as three [D, D] weights."""
import math

import numpy as np

DIMS = dict(T=64, D=256, F=1024)
N_HEAD = 4


def gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def softmax(x):
    exp_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return exp_x / np.sum(exp_x, axis=-1, keepdims=True)


def layer_norm(x, g, b, eps=1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    variance = np.var(x, axis=-1, keepdims=True)
    x = (x - mean) / np.sqrt(variance + eps)
    return g * x + b


def linear(x, w, b):
    return x @ w + b


def ffn(x, fc_w, fc_b, proj_w, proj_b):
    a = gelu(linear(x, fc_w, fc_b))
    return linear(a, proj_w, proj_b)


def attention(q, k, v, mask):
    return softmax(q @ k.transpose(0, 2, 1) / np.float32(math.sqrt(q.shape[-1])) + mask) @ v


def heads(x, n_head):
    t, d = x.shape
    return x.reshape(t, n_head, d // n_head).transpose(1, 0, 2)


def mha(x, q_w, q_b, k_w, k_b, v_w, v_b, proj_w, proj_b, n_head):
    q = heads(linear(x, q_w, q_b), n_head)
    k = heads(linear(x, k_w, k_b), n_head)
    v = heads(linear(x, v_w, v_b), n_head)
    causal_mask = (1 - np.tri(x.shape[0], dtype=x.dtype)) * -1e10
    out = attention(q, k, v, causal_mask)
    out = out.transpose(1, 0, 2).reshape(x.shape)
    return linear(out, proj_w, proj_b)


def gpt2_block(
    x: "f32[T, D]",
    ln1_g: "f32[D]", ln1_b: "f32[D]",
    q_w: "f32[D, D]", q_b: "f32[D]",
    k_w: "f32[D, D]", k_b: "f32[D]",
    v_w: "f32[D, D]", v_b: "f32[D]",
    proj_w: "f32[D, D]", proj_b: "f32[D]",
    ln2_g: "f32[D]", ln2_b: "f32[D]",
    fc_w: "f32[D, F]", fc_b: "f32[F]",
    fc_proj_w: "f32[F, D]", fc_proj_b: "f32[D]",
) -> "f32[T, D]":
    x = x + mha(layer_norm(x, ln1_g, ln1_b), q_w, q_b, k_w, k_b, v_w, v_b, proj_w, proj_b,
                n_head=N_HEAD)
    x = x + ffn(layer_norm(x, ln2_g, ln2_b), fc_w, fc_b, fc_proj_w, fc_proj_b)
    return x


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    T, D, F = DIMS["T"], DIMS["D"], DIMS["F"]

    def w(*shape):
        return (rng.standard_normal(shape) / math.sqrt(shape[0])).astype(np.float32)

    def vec(n, base=0.0):
        return (base + 0.1 * rng.standard_normal(n)).astype(np.float32)

    out = gpt2_block(
        rng.standard_normal((T, D), dtype=np.float32),
        vec(D, 1.0), vec(D), w(D, D), vec(D), w(D, D), vec(D), w(D, D), vec(D),
        w(D, D), vec(D), vec(D, 1.0), vec(D), w(D, F), vec(F), w(F, D), vec(D))
    print("gpt2_block", out.shape, out.dtype)
