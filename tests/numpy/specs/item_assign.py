"""Item and slice assignment into a local array, read as a functional update: the KV-cache
write of a decode step (cache[:, start:end] = xk), an integer row, `...` and negative
bounds, an augmented item assignment, and assignment into a list item and a dict key; an alias sees the writes, a copy does not."""
import numpy as np

DIMS = dict(B=2, S=8, D=4)

START = 2


def item_assign(cache: "f32[B, S, D]", xk: "f32[B, 3, D]", row: "f32[D]") -> ("f32[B, S, D]", "f32[B, S, D]"):
    cache_k = cache * 1.0
    alias = cache_k            # the same array: it sees every write below, as in numpy
    kept = cache_k.copy()      # a copy: it does not
    cache_k[:, START:START + 3] = xk
    cache_k[0, -1] = row
    cache_k[..., 0] = 0.5
    cache_k[1, :2] += 1.0
    parts = [cache, cache]
    parts[1] = cache * 2.0
    d = {"k": cache}
    d["k"] = parts[1] + parts[0]
    return alias, d["k"] + kept
