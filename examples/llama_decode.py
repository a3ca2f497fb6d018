"""The decode step of the Llama 3 block of llama_block.py: one new position attends to a
KV cache of P past positions. As in llama3.np (github.com/likejazz/llama3.np) the new
token's keys and values join the cache before attention, rotary embeddings are taken at
position start_pos = P, and no mask is needed for a single query. The step returns the
block's output and the new token's (rotated) key and value, which the caller appends to
its cache; llama3.np writes them into the cache in place (`self.cache_k[:B, start_pos :
start_pos + L] = xk`); the spec language takes that item assignment now, but a kernel
that writes the whole cache back would move it twice, so the step returns the new entries
and joins them to the cache with a concatenation. The rotary embedding reshapes its
pairs back with `.reshape(xk.shape)` (llama3.np: `.reshape(xk_out.shape[:-2] + (-1,))`,
whose 2*(HD//2) equals the cache's HD only for an even HD). Dims as llama_block.py, with P=512 cached positions: a
memory-bound step, like MLA decode."""
import math

import numpy as np

DIMS = dict(B=1, P=512, HD=32, F=768)
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
    xq_out = xq_out.reshape(xq.shape)
    xk_out = xk_out.reshape(xk.shape)
    return xq_out, xk_out


def repeat_kv(x, n_rep):
    return np.repeat(x, n_rep, axis=2)


def attention(x, q_weight, k_weight, v_weight, o_weight, cache_k, cache_v):
    B, L, _ = x.shape
    start_pos = cache_k.shape[1]
    head_dim = cache_k.shape[-1]
    xq = x @ q_weight
    xk = x @ k_weight
    xv = x @ v_weight
    xq = xq.reshape(B, L, N_HEADS, head_dim)
    xk = xk.reshape(B, L, N_KV_HEADS, head_dim)
    xv = xv.reshape(B, L, N_KV_HEADS, head_dim)
    freqs_cos, freqs_sin = precompute_freqs_cis(head_dim, start_pos + L)
    xq, xk = apply_rotary_emb(xq, xk, freqs_cos[start_pos:], freqs_sin[start_pos:])
    ks = np.concatenate([cache_k, xk], axis=1)
    vs = np.concatenate([cache_v, xv], axis=1)
    keys = repeat_kv(ks, N_HEADS // N_KV_HEADS).transpose(0, 2, 1, 3)
    values = repeat_kv(vs, N_HEADS // N_KV_HEADS).transpose(0, 2, 1, 3)
    xq = xq.transpose(0, 2, 1, 3)
    scores = softmax(xq @ keys.transpose(0, 1, 3, 2) / math.sqrt(head_dim))
    output = (scores @ values).transpose(0, 2, 1, 3).reshape(B, L, -1)
    return output @ o_weight, xk, xv


def feed_forward(x, up_weight, gate_weight, down_weight):
    swish = silu(x @ gate_weight)
    x_v = x @ up_weight
    x = swish * x_v
    return x @ down_weight


def llama_decode(
    x: "f32[B, 1, D]",
    cache_k: "f32[B, P, 2, HD]",
    cache_v: "f32[B, P, 2, HD]",
    attention_norm: "f32[D]",
    q_weight: "f32[D, D]",
    k_weight: "f32[D, KV]",
    v_weight: "f32[D, KV]",
    o_weight: "f32[D, D]",
    ffn_norm: "f32[D]",
    up_weight: "f32[D, F]",
    gate_weight: "f32[D, F]",
    down_weight: "f32[F, D]",
) -> ("f32[B, 1, D]", "f32[B, 1, 2, HD]", "f32[B, 1, 2, HD]"):
    attn, xk, xv = attention(rms_norm(x, attention_norm), q_weight, k_weight, v_weight,
                             o_weight, cache_k, cache_v)
    h = x + attn
    return h + feed_forward(rms_norm(h, ffn_norm), up_weight, gate_weight, down_weight), xk, xv


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    B, P, F, HD = (DIMS[k] for k in ("B", "P", "F", "HD"))
    D, KV, KVH = N_HEADS * HD, N_KV_HEADS * HD, N_KV_HEADS

    def w(*shape):
        return (rng.standard_normal(shape) / math.sqrt(shape[0])).astype(np.float32)

    out, k, v = llama_decode(
        rng.standard_normal((B, 1, D), dtype=np.float32),
        rng.standard_normal((B, P, KVH, HD), dtype=np.float32),
        rng.standard_normal((B, P, KVH, HD), dtype=np.float32),
        (1 + 0.1 * rng.standard_normal(D)).astype(np.float32), w(D, D), w(D, KV), w(D, KV),
        w(D, D), (1 + 0.1 * rng.standard_normal(D)).astype(np.float32), w(D, F), w(D, F), w(F, D))
    print("llama_decode", out.shape, out.dtype, k.shape, v.shape)
