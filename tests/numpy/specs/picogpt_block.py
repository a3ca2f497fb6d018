"""picoGPT's transformer block (jaymody/picoGPT gpt2.py) as written there: **kwargs from
dicts of weights, map with a lambda over np.split's list, a comprehension over zip(*...),
np.hstack of the heads, and the head count a scalar parameter held constant. Under numpy 2,
np.sqrt(q.shape[-1]) is a float64 scalar, so the block returns float64, as numpy does."""
import numpy as np

DIMS = dict(T=4, HD=4, F=32)
RELATIONS = ["D = 2 * HD"]


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def softmax(x):
    exp_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return exp_x / np.sum(exp_x, axis=-1, keepdims=True)


def layer_norm(x, g, b, eps: float = 1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    variance = np.var(x, axis=-1, keepdims=True)
    x = (x - mean) / np.sqrt(variance + eps)
    return g * x + b


def linear(x, w, b):
    return x @ w + b


def ffn(x, c_fc, c_proj):
    a = gelu(linear(x, **c_fc))
    x = linear(a, **c_proj)
    return x


def attention(q, k, v, mask):
    return softmax(q @ k.T / np.sqrt(q.shape[-1]) + mask) @ v


def mha(x, c_attn, c_proj, n_head):
    x = linear(x, **c_attn)
    qkv = np.split(x, 3, axis=-1)
    qkv_heads = list(map(lambda x: np.split(x, n_head, axis=-1), qkv))
    causal_mask = (1 - np.tri(x.shape[0], dtype=x.dtype)) * -1e10
    out_heads = [attention(q, k, v, causal_mask) for q, k, v in zip(*qkv_heads)]
    x = np.hstack(out_heads)
    x = linear(x, **c_proj)
    return x


def transformer_block(x, mlp, attn, ln_1, ln_2, n_head):
    x = x + mha(layer_norm(x, **ln_1), **attn, n_head=n_head)
    x = x + ffn(layer_norm(x, **ln_2), **mlp)
    return x


def gpt2_block(x: "f32[T, D]", w_attn: "f32[D, 3*D]", b_attn: "f32[3*D]", w_proj: "f32[D, D]",
               b_proj: "f32[D]", w_fc: "f32[D, F]", b_fc: "f32[F]", w_out: "f32[F, D]",
               b_out: "f32[D]", g1: "f32[D]", g2: "f32[D]", n_head: int = 2) -> "f64[T, D]":
    params = {"attn": {"c_attn": {"w": w_attn, "b": b_attn}, "c_proj": {"w": w_proj, "b": b_proj}},
              "mlp": {"c_fc": {"w": w_fc, "b": b_fc}, "c_proj": {"w": w_out, "b": b_out}},
              "ln_1": {"g": g1, "b": g1 * 0.0}, "ln_2": dict(g=g2, b=g2 * 0.5)}
    return transformer_block(x, **params, n_head=n_head)
