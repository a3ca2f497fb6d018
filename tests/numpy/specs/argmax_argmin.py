"""np.argmax / np.argmin and their methods: along an axis, with keepdims, over the
flattened array (axis None), on an int array, and of a computed value (greedy decoding's
argmax of logits)."""
import numpy as np

DIMS = dict(T=3, V=7)


def argmax_argmin(logits: "f32[T, V]", k: "i32[T, V]", w: "f32[V, V]") -> (
        "i64[T]", "i64[T, 1]", "i64[]", "i64[V]", "i64[T]", "i64[T]"):
    return (np.argmax(logits, axis=-1), logits.argmin(axis=1, keepdims=True), np.argmax(logits),
            np.argmin(logits, axis=0), k.argmax(-1), np.argmax(logits @ w, axis=-1))
