"""DeepSeek-V3 Multi-head Latent Attention (MLA), one decode step, in absorbed form.

DeepSeek-V3 full size: 128 heads, kv_lora_rank 512 (the latent width L), qk_rope_head_dim
64 (DR), qk_nope_head_dim 128 (DN), v_head_dim 128 (DV), context up to 163840 tokens (S).
The KV cache holds, per token, only the normalized latent c_kv [L] and the shared rope
key k_pe [DR]; the per-head keys and values are the latent times kv_b_proj, split here
into its key half w_uk [H, DN, L] and value half w_uv [H, L, DV].

Absorbed form: instead of expanding every cached token into per-head keys
(k_nope = w_uk @ c_kv, S x H x DN) and values, fold w_uk into the query
(q_lat = q_nope @ w_uk, one small product per head) and w_uv into the output
(out = o_lat @ w_uv), so attention runs directly against the L-wide latent cache:
    q_nope . (w_uk c)  ==  (q_nope w_uk) . c        and
    sum_s p_s (c_s w_uv) == (sum_s p_s c_s) w_uv.
Decode is then a memory-bound sweep over c_kv and k_pe, shared by all heads.

DIMS default to 16 heads (a tensor-parallel shard of 128) and a 4096-token cache."""
import math

import numpy as np

DIMS = dict(B=1, H=16, S=4096, L=512, DR=64, DN=128, DV=128)

# Softmax scale: 1/sqrt(qk head dim = DN + DR = 192), times the YaRN mscale squared
# (mscale = 0.1 * ln(factor) + 1 with rope scaling factor 40, applied to q and k).
SCALE = (128 + 64) ** -0.5 * (0.1 * math.log(40) + 1) ** 2


def mla_decode(q_nope: "f32[B, H, DN]", q_pe: "f32[B, H, DR]", c_kv: "f32[B, S, L]",
               k_pe: "f32[B, S, DR]", w_uk: "f32[H, DN, L]",
               w_uv: "f32[H, L, DV]") -> "f32[B, H, DV]":
    q_lat = np.einsum('bhd,hdl->bhl', q_nope, w_uk)                  # W_UK absorbed
    scores = (np.einsum('bhl,bsl->bhs', q_lat, c_kv)
              + np.einsum('bhr,bsr->bhs', q_pe, k_pe)) * SCALE
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    o_lat = np.einsum('bhs,bsl->bhl', p, c_kv)
    return np.einsum('bhl,hlv->bhv', o_lat, w_uv)                    # W_UV absorbed


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    B, H, S, L = DIMS["B"], DIMS["H"], DIMS["S"], DIMS["L"]
    DR, DN, DV = DIMS["DR"], DIMS["DN"], DIMS["DV"]
    q_nope = rng.standard_normal((B, H, DN), dtype=np.float32)
    q_pe = rng.standard_normal((B, H, DR), dtype=np.float32)
    c_kv = rng.standard_normal((B, S, L), dtype=np.float32)    # RMS-normalized latents
    k_pe = rng.standard_normal((B, S, DR), dtype=np.float32)
    w_uk = rng.standard_normal((H, DN, L), dtype=np.float32) / np.float32(np.sqrt(L))
    w_uv = rng.standard_normal((H, L, DV), dtype=np.float32) / np.float32(np.sqrt(L))
    out = mla_decode(q_nope, q_pe, c_kv, k_pe, w_uk, w_uv)
    print("mla_decode", out.shape, out.dtype)
