"""An embedding gather as GPT-2 starts: token rows of wte by id (negative ids wrap as
numpy wraps them) plus the first T rows of wpe, then a layernorm; np.take along axis 1,
the .take method, i32 indices, and np.take_along_axis picking one element per row (a
cross-entropy's target logit)."""
import numpy as np

DIMS = dict(T=6, V=7, D=8, P=9)


def gather_embedding(ids: "i64[T]", wte: "f32[V, D]", wpe: "f32[P, D]", g: "f32[D]",
                     cols: "i32[T]", pick: "i64[T]") -> ("f32[T, D]", "f32[D, T]", "f32[T, D]", "f32[T, 1]"):
    x = wte[ids] + wpe[:len(ids)]
    mean = x.mean(axis=-1, keepdims=True)
    c = x - mean
    y = c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + 1e-5) * g
    z = np.take(wte, ids, axis=0).take(cols, axis=0) * 2.0
    return y, np.take(wte.T, cols, axis=1), z, np.take_along_axis(y, pick[:, None], axis=-1)
