"""einsum with three operands (a chain and a batched bilinear form), with spaces and
labels that only appear in one operand."""
import numpy as np

DIMS = dict(B=2, I=3, J=4, K=3, L=2)


def einsum_three(x: "f32[I, J]", y: "f32[J, K]", z: "f32[K, L]", bq: "f32[B, I]", w: "f32[I, J]",
                 bk: "f32[B, J]") -> ("f32[I, L]", "f32[B]", "f32[L, I]"):
    chain = np.einsum('ij,jk,kl->il', x, y, z)
    bil = np.einsum('bi, ij, bj -> b', bq, w, bk)
    lone = np.einsum('ij,jk,kl->li', x, y, z) + np.einsum('ij,kl->li', x, z)  # j, k summed out alone
    return chain, bil, lone
