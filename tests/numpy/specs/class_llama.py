"""Model classes as llama3.np (github.com/likejazz/llama3.np) writes them: RMSNorm,
FeedForward (SwiGLU with three weights stored transposed), Attention (grouped-query heads,
rotary embeddings, a causal mask; without llama3.np's KV cache) and a TransformerBlock that
constructs them from the arrays it receives, each called through `__call__`. The entry is
TransformerBlock.forward: the constructor's annotated arrays, then x (its `args` has a
default, so it is held constant). llama3.np's ModelArgs is a @dataclass and its block
takes a dict of weights; here ModelArgs is a plain class of constants, the weights are
parameters, and one reshape differs (see there)."""
import math

import numpy as np

DIMS = dict(B=1, L=6, D=16, KV=8, F=24)
ROPE_THETA = 10000.0


class ModelArgs:
    """llama3.np's ModelArgs (a @dataclass there) as a plain class of constants."""

    n_heads = 4
    n_kv_heads = 2
    norm_eps = 1e-5


def softmax(x):
    exp_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return exp_x / np.sum(exp_x, axis=-1, keepdims=True)


def silu(x):
    return x * (1 / (1 + np.exp(-x)))


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


class FeedForward:
    def __init__(self, up_weight, gate_weight, down_weight):
        self.up_weight = up_weight.T
        self.gate_weight = gate_weight.T
        self.down_weight = down_weight.T

    def __call__(self, x):
        # FD = 2 * 4 * D / 3
        swish = silu(x @ self.gate_weight)
        x_V = x @ self.up_weight
        x = swish * x_V
        x = x @ self.down_weight
        return x


class RMSNorm:
    def __init__(self, weight, eps: float):
        self.weight = weight
        self.eps = eps

    def __call__(self, x):
        z = (x**2).mean(-1, keepdims=True) + self.eps
        z = x / np.sqrt(z)
        return z * self.weight


class Attention:
    def __init__(self, q_weight, k_weight, v_weight, o_weight, args: ModelArgs):
        self.n_kv_heads = args.n_heads if args.n_kv_heads is None else args.n_kv_heads
        assert args.n_heads % self.n_kv_heads == 0
        self.n_local_heads = args.n_heads
        self.n_local_kv_heads = self.n_kv_heads
        self.n_rep = self.n_local_heads // self.n_local_kv_heads
        self.head_dim = q_weight.shape[0] // args.n_heads

        self.q_weight = q_weight.T
        self.k_weight = k_weight.T
        self.v_weight = v_weight.T
        self.o_weight = o_weight.T

    def __call__(self, x, mask, freqs_cos, freqs_sin):
        B, L, _ = x.shape

        # QKV
        xq = x @ self.q_weight
        xk = x @ self.k_weight
        xv = x @ self.v_weight

        xq = xq.reshape(B, L, self.n_local_heads, self.head_dim)
        xk = xk.reshape(B, L, self.n_local_kv_heads, self.head_dim)
        xv = xv.reshape(B, L, self.n_local_kv_heads, self.head_dim)

        # RoPE #2
        xq, xk = apply_rotary_emb(xq, xk, freqs_cos, freqs_sin)

        # GQA
        xk = repeat_kv(xk, self.n_rep)
        xv = repeat_kv(xv, self.n_rep)

        # ["B, L, QHN, HD"] -> ["B, QHN, L, HD"]
        xq = xq.transpose(0, 2, 1, 3)
        xk = xk.transpose(0, 2, 1, 3)
        xv = xv.transpose(0, 2, 1, 3)

        # Scaled Dot-Product Attention
        attention = xq @ xk.transpose(0, 1, 3, 2) / math.sqrt(self.head_dim)
        attention = attention + mask[None, None, :, :]
        attention = softmax(attention)
        output = attention @ xv

        # ["B, QHN, L, HD"] -> ["B, L, D"]
        # llama3.np: .reshape(B, L, -1), whose last size 4*(D//4) meets D in the matmul
        # below only once relations among dims are known (issue 17, item 2, first part)
        output = output.transpose(0, 2, 1, 3).reshape(x.shape)
        output = output @ self.o_weight
        return output


class TransformerBlock:
    def __init__(
        self,
        attention_norm: "f32[D]",
        q_weight: "f32[D, D]",
        k_weight: "f32[KV, D]",
        v_weight: "f32[KV, D]",
        o_weight: "f32[D, D]",
        ffn_norm: "f32[D]",
        up_weight: "f32[F, D]",
        gate_weight: "f32[F, D]",
        down_weight: "f32[D, F]",
        args: ModelArgs = ModelArgs(),
    ):
        self.attention = Attention(q_weight, k_weight, v_weight, o_weight, args)
        self.feed_forward = FeedForward(up_weight, gate_weight, down_weight)
        self.input_layernorm = RMSNorm(attention_norm, eps=args.norm_eps)
        self.post_attention_layernorm = RMSNorm(ffn_norm, eps=args.norm_eps)

    def __call__(self, x):
        return self.forward(x)

    def forward(self, x: "f32[B, L, D]") -> "f32[B, L, D]":
        L = x.shape[1]
        freqs_cos, freqs_sin = precompute_freqs_cis(self.attention.head_dim, L)
        mask = np.full((L, L), float("-inf"))
        mask = np.triu(mask, k=1).astype(np.float32)

        # RMSNorm
        norm_x = self.input_layernorm(x)
        # Masked Multi-Head Attention
        h1 = self.attention(norm_x, mask, freqs_cos, freqs_sin)
        z = x + h1

        # RMSNorm
        norm_z = self.post_attention_layernorm(z)
        # Feed Forward + SwiGLU
        h2 = self.feed_forward(norm_z)
        out = z + h2
        return out
