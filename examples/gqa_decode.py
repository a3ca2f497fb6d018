"""Grouped-query attention (GQA), one decode step: one new query token per head attends
to a KV cache of S past positions, each KV head shared by a group of query heads.

Llama-3-8B shapes: 32 query heads and 8 KV heads (groups of 4) of head dim 128, context
up to 8192 tokens; the cache is laid out as Llama's reference model keeps it, [B, S,
n_kv_heads, head_dim] (llama/model.py: cache_k[:bsz, start_pos : start_pos + seqlen] =
xk). Here the heads are Llama-3-8B's and the cache holds 4096 positions: 32 MiB of keys
and values read once per step, a memory-bound sweep like MLA decode (run cold: in a model
the cache comes from DRAM). The grouping is the reshape of the query heads into (KV,
GROUP) instead of repeat_kv's copy of the cache."""
import math

import numpy as np

DIMS = dict(B=1, S=4096, KV=8, HD=128)
GROUP = 4                      # query heads per KV head (32 / 8 in Llama-3-8B)
RELATIONS = ["H = GROUP * KV"]


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def gqa_decode(q: "f32[B, H, HD]", cache_k: "f32[B, S, KV, HD]",
               cache_v: "f32[B, S, KV, HD]") -> "f32[B, H, HD]":
    b, s, kv, hd = cache_k.shape
    qg = q.reshape(b, kv, GROUP, hd)                              # query heads by KV head
    scores = np.einsum('bkgd,bskd->bkgs', qg, cache_k) / math.sqrt(hd)
    out = np.einsum('bkgs,bskd->bkgd', softmax(scores), cache_v)
    return out.reshape(b, kv * GROUP, hd)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    B, S, KV, HD = DIMS["B"], DIMS["S"], DIMS["KV"], DIMS["HD"]
    q = rng.standard_normal((B, GROUP * KV, HD), dtype=np.float32)
    cache_k = rng.standard_normal((B, S, KV, HD), dtype=np.float32)
    cache_v = rng.standard_normal((B, S, KV, HD), dtype=np.float32)
    out = gqa_decode(q, cache_k, cache_v)
    print("gqa_decode", out.shape, out.dtype)
