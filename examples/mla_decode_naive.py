"""DeepSeek-V3 Multi-head Latent Attention (MLA), one decode step, in its NON-absorbed
form: the latent cache is expanded into per-head keys and values first.

The same shapes and inputs as mla_decode.py (DeepSeek-V3: 128 heads, kv_lora_rank 512 =
L, qk_rope_head_dim 64 = DR, qk_nope_head_dim 128 = DN, v_head_dim 128 = DV; here 16
heads and a 4096-token cache). This is how DeepSeek's reference model computes it before
absorption (inference/model.py, attn_impl "naive": kv = wkv_b(kv_norm(kv)) split into
k_nope and v per head, k = [k_nope, k_pe broadcast to every head]): every cached latent
c_kv[s] goes through w_uk [H, DN, L] and w_uv [H, L, DV], S x H x (DN + DV) values per
step. mla_decode.py folds w_uk into the query and w_uv into the output instead, so
attention runs against the L-wide latent cache directly; the two are equal in exact
arithmetic, and finding that rewrite is the search's job here."""
import math

import numpy as np

DIMS = dict(B=1, H=16, S=4096, L=512, DR=64, DN=128, DV=128)

# As mla_decode.py: 1/sqrt(DN + DR) times the YaRN mscale squared (rope factor 40).
SCALE = (128 + 64) ** -0.5 * (0.1 * math.log(40) + 1) ** 2


def mla_decode_naive(q_nope: "f32[B, H, DN]", q_pe: "f32[B, H, DR]", c_kv: "f32[B, S, L]",
                     k_pe: "f32[B, S, DR]", w_uk: "f32[H, DN, L]",
                     w_uv: "f32[H, L, DV]") -> "f32[B, H, DV]":
    k_nope = np.einsum('bsl,hdl->bshd', c_kv, w_uk)                 # keys, per head
    v = np.einsum('bsl,hlv->bshv', c_kv, w_uv)                      # values, per head
    scores = (np.einsum('bhd,bshd->bhs', q_nope, k_nope)
              + np.einsum('bhr,bsr->bhs', q_pe, k_pe)) * SCALE
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    return np.einsum('bhs,bshv->bhv', p, v)


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
    out = mla_decode_naive(q_nope, q_pe, c_kv, k_pe, w_uk, w_uv)
    print("mla_decode_naive", out.shape, out.dtype)
