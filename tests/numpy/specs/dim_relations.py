"""Relations among dims as model code states them: D = H * HD derived from the heads, a
fused [D, 3*D] projection split into q, k, v, heads reshaped with D // H and merged back,
broadcasting of [D] and an annotation that is a product of dims."""
import numpy as np

DIMS = dict(T=4, H=3, HD=4, D=12)
RELATIONS = ["D = H * HD"]


def dim_relations(x: "f32[T, D]", w: "f32[D, 3*D]", g: "f32[H, HD]",
                  b: "f32[D]") -> ("f32[T, D]", "f32[T, 3 * D]"):
    T, D = x.shape
    H = g.shape[0]
    qkv = x @ w
    q, k, v = np.split(qkv, 3, axis=-1)
    qh = q.reshape(T, H, D // H).transpose(1, 0, 2)     # [H, T, HD]
    kh = k.reshape(T, H, D // H).transpose(1, 0, 2)
    vh = v.reshape(T, H, D // H).transpose(1, 0, 2)
    att = (qh @ kh.swapaxes(-1, -2)) @ vh * 0.25         # [H, T, HD]
    y = att.transpose(1, 0, 2).reshape(T, D) + x * g.reshape(-1) + b
    return y, qkv
