"""DeepSeek-V3 MLA decode (mla_decode.py's absorbed form and shapes) on bfloat16, as deployed.

FlashMLA and DeepSeek-V3 inference keep the latent cache, the weights and the queries in
bfloat16 (ml_dtypes.bfloat16, the type jax uses): half the bytes of float32, so half the
time of the memory-bound sweep over c_kv. The arithmetic runs in float32 after an
explicit astype (every product of two bfloat16 values is exact in float32; the scores,
the softmax and every sum accumulate in float32), and the output is rounded to bfloat16
once, to nearest even, as ml_dtypes rounds."""
import math

import ml_dtypes
import numpy as np

DIMS = dict(B=1, H=16, S=4096, L=512, DR=64, DN=128, DV=128)

# Softmax scale as in mla_decode.py: 1/sqrt(192) times the YaRN mscale squared.
SCALE = (128 + 64) ** -0.5 * (0.1 * math.log(40) + 1) ** 2


def mla_decode_bf16(q_nope: "bf16[B, H, DN]", q_pe: "bf16[B, H, DR]", c_kv: "bf16[B, S, L]",
                    k_pe: "bf16[B, S, DR]", w_uk: "bf16[H, DN, L]",
                    w_uv: "bf16[H, L, DV]") -> "bf16[B, H, DV]":
    c = c_kv.astype(np.float32)
    q_lat = np.einsum('bhd,hdl->bhl', q_nope.astype(np.float32), w_uk.astype(np.float32))
    scores = (np.einsum('bhl,bsl->bhs', q_lat, c)
              + np.einsum('bhr,bsr->bhs', q_pe.astype(np.float32),
                          k_pe.astype(np.float32))) * SCALE
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    o_lat = np.einsum('bhs,bsl->bhl', p, c)
    out = np.einsum('bhl,hlv->bhv', o_lat, w_uv.astype(np.float32))
    return out.astype(ml_dtypes.bfloat16)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    B, H, S, L = DIMS["B"], DIMS["H"], DIMS["S"], DIMS["L"]
    DR, DN, DV = DIMS["DR"], DIMS["DN"], DIMS["DV"]
    bf16 = ml_dtypes.bfloat16
    q_nope = rng.standard_normal((B, H, DN), dtype=np.float32).astype(bf16)
    q_pe = rng.standard_normal((B, H, DR), dtype=np.float32).astype(bf16)
    c_kv = rng.standard_normal((B, S, L), dtype=np.float32).astype(bf16)  # normalized latents
    k_pe = rng.standard_normal((B, S, DR), dtype=np.float32).astype(bf16)
    w_uk = (rng.standard_normal((H, DN, L), dtype=np.float32) / np.float32(np.sqrt(L))).astype(bf16)
    w_uv = (rng.standard_normal((H, L, DV), dtype=np.float32) / np.float32(np.sqrt(L))).astype(bf16)
    out = mla_decode_bf16(q_nope, q_pe, c_kv, k_pe, w_uk, w_uv)
    print("mla_decode_bf16", out.shape, out.dtype)
