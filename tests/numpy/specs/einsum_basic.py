"""einsum: transpose, outer product, batched matmul, sum-out-only labels, full reduction,
elementwise product, and implicit broadcast of a label through repeated use."""
import numpy as np

DIMS = dict(B=2, I=3, J=4, K=5)


def einsum_basic(x: "f32[I, J]", y: "f32[J, K]", u: "f32[I]", v: "f32[J]", bx: "f32[B, I, J]",
                 by: "f32[B, J, K]") -> ("f32[J, I]", "f32[I, J]", "f32[B, I, K]", "f32[I]", "f32[]", "f32[I, J]", "f32[K, I]", "f32[B]"):
    t = np.einsum('ij->ji', x)
    o = np.einsum('i,j->ij', u, v)
    bm = np.einsum('bij,bjk->bik', bx, by)
    s = np.einsum('ij->i', x)
    full = np.einsum('ij->', x)
    had = np.einsum('ij,ij->ij', x, x)
    mt = np.einsum('ij,jk->ki', x, y)
    bs = np.einsum('bij,j->b', bx, v)      # i and j summed out
    return t, o, bm, s, full, had, mt, bs
