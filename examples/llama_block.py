"""One Llama 3 transformer block (pre-norm RMSNorm, grouped-query attention with rotary
position embeddings and a causal mask, SwiGLU feed-forward), written after the numpy
port llama3.np (github.com/likejazz/llama3.np) the way people write it: helpers
`rms_norm`, `silu`, `softmax`, `precompute_freqs_cis`, `apply_rotary_emb`, `repeat_kv`,
`attention`, `feed_forward`. Llama 3 8B has D=4096, 32 query heads sharing 8 key/value
heads of 128; the dims are scaled to a 2-core machine (D=256, 8 query heads and 2
key/value heads of 32, a hidden size of 768, L=64 positions) so that verification stays in
seconds.

Differences from llama3.np: the block is a function of arrays (the spec language also
reads llama3.np's classes, `--entry TransformerBlock.forward`: tests/numpy/specs/
class_llama.py), there is no KV cache here (see llama_decode.py), and repeat_kv has no
`if n_rep == 1` shortcut. The model's sizes are stated as RELATIONS (D and KV follow from
the head size HD), so that llama3.np's `.reshape(B, L, -1)` and the RoPE reshapes keep
every size symbolic."""
import math

import numpy as np

DIMS = dict(B=1, L=64, HD=32, F=768)
N_HEADS = 8
N_KV_HEADS = 2
RELATIONS = ["D = N_HEADS * HD", "KV = N_KV_HEADS * HD"]
ROPE_THETA = 500000.0
NORM_EPS = 1e-5


def rms_norm(x, weight, eps=NORM_EPS):
    z = (x**2).mean(-1, keepdims=True) + eps
    z = x / np.sqrt(z)
    return z * weight


def silu(x):
    return x * (1 / (1 + np.exp(-x)))


def softmax(x):
    exp_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return exp_x / np.sum(exp_x, axis=-1, keepdims=True)


def precompute_freqs_cis(head_dim, end, theta=ROPE_THETA):
    freqs = 1.0 / (theta ** (np.arange(0, head_dim, 2)[: (head_dim // 2)] / head_dim))
    t = np.arange(end)
    freqs = np.outer(t, freqs)
    return np.cos(freqs).astype(np.float32), np.sin(freqs).astype(np.float32)


def apply_rotary_emb(xq, xk, freqs_cos, freqs_sin):
    xqri = xq.reshape(xq.shape[:-1] + (-1, 2))
    xkri = xk.reshape(xk.shape[:-1] + (-1, 2))
    xq_r, xq_i = np.split(xqri, 2, axis=-1)
    xq_r = xq_r.squeeze(-1)
    xq_i = xq_i.squeeze(-1)
    xk_r, xk_i = np.split(xkri, 2, axis=-1)
    xk_r = xk_r.squeeze(-1)
    xk_i = xk_i.squeeze(-1)
    freqs_cos = freqs_cos[None, :, None, :]
    freqs_sin = freqs_sin[None, :, None, :]
    xq_out_r = xq_r * freqs_cos - xq_i * freqs_sin
    xq_out_i = xq_r * freqs_sin + xq_i * freqs_cos
    xk_out_r = xk_r * freqs_cos - xk_i * freqs_sin
    xk_out_i = xk_r * freqs_sin + xk_i * freqs_cos
    xq_out = np.stack([xq_out_r, xq_out_i], axis=-1)
    xk_out = np.stack([xk_out_r, xk_out_i], axis=-1)
    xq_out = xq_out.reshape(xq_out.shape[:-2] + (-1,))
    xk_out = xk_out.reshape(xk_out.shape[:-2] + (-1,))
    return xq_out, xk_out


def repeat_kv(x, n_rep):
    return np.repeat(x, n_rep, axis=2)


def attention(x, q_weight, k_weight, v_weight, o_weight, mask, freqs_cos, freqs_sin):
    B, L, _ = x.shape
    head_dim = x.shape[-1] // N_HEADS
    xq = x @ q_weight
    xk = x @ k_weight
    xv = x @ v_weight
    xq = xq.reshape(B, L, N_HEADS, head_dim)
    xk = xk.reshape(B, L, N_KV_HEADS, head_dim)
    xv = xv.reshape(B, L, N_KV_HEADS, head_dim)
    xq, xk = apply_rotary_emb(xq, xk, freqs_cos, freqs_sin)
    xk = repeat_kv(xk, N_HEADS // N_KV_HEADS)
    xv = repeat_kv(xv, N_HEADS // N_KV_HEADS)
    xq = xq.transpose(0, 2, 1, 3)
    xk = xk.transpose(0, 2, 1, 3)
    xv = xv.transpose(0, 2, 1, 3)
    scores = xq @ xk.transpose(0, 1, 3, 2) / math.sqrt(head_dim)
    scores = scores + mask[None, None, :, :]
    scores = softmax(scores)
    output = scores @ xv
    output = output.transpose(0, 2, 1, 3).reshape(B, L, -1)
    return output @ o_weight


def feed_forward(x, up_weight, gate_weight, down_weight):
    swish = silu(x @ gate_weight)
    x_v = x @ up_weight
    x = swish * x_v
    return x @ down_weight


def llama_block(
    x: "f32[B, L, D]",
    attention_norm: "f32[D]",
    q_weight: "f32[D, D]",
    k_weight: "f32[D, KV]",
    v_weight: "f32[D, KV]",
    o_weight: "f32[D, D]",
    ffn_norm: "f32[D]",
    up_weight: "f32[D, F]",
    gate_weight: "f32[D, F]",
    down_weight: "f32[F, D]",
) -> "f32[B, L, D]":
    L = x.shape[1]
    freqs_cos, freqs_sin = precompute_freqs_cis(x.shape[-1] // N_HEADS, L)
    mask = np.full((L, L), float("-inf"))
    mask = np.triu(mask, k=1).astype(np.float32)
    h = x + attention(rms_norm(x, attention_norm), q_weight, k_weight, v_weight, o_weight,
                      mask, freqs_cos, freqs_sin)
    return h + feed_forward(rms_norm(h, ffn_norm), up_weight, gate_weight, down_weight)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    B, L, HD, F = DIMS["B"], DIMS["L"], DIMS["HD"], DIMS["F"]
    D, KV = N_HEADS * HD, N_KV_HEADS * HD

    def w(*shape):
        return (rng.standard_normal(shape) / math.sqrt(shape[0])).astype(np.float32)

    out = llama_block(
        rng.standard_normal((B, L, D), dtype=np.float32),
        (1 + 0.1 * rng.standard_normal(D)).astype(np.float32), w(D, D), w(D, KV), w(D, KV),
        w(D, D), (1 + 0.1 * rng.standard_normal(D)).astype(np.float32), w(D, F), w(D, F), w(F, D))
    print("llama_block", out.shape, out.dtype)
