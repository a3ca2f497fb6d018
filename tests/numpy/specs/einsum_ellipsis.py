"""einsum with '...': leading batch axes of a linear layer, trailing axes kept, operands of
different ranks right-aligned (as numpy broadcasts them), and a full contraction."""
import numpy as np

DIMS = dict(B=2, T=3, C=4, N=5)


def einsum_ellipsis(x: "f32[B, T, C]", w: "f32[C, N]", y: "f32[C, B, T]", z: "f32[T, C]") -> (
        "f32[B, T, N]", "f32[B, T]", "f32[B, T]", "f32[B, T, N]"):
    lin = np.einsum('...c,cn->...n', x, w)
    lead = np.einsum('c...,c->...', y, np.ones(4, dtype=np.float32)[:y.shape[0]])
    dots = np.einsum('...c,...c->...', x, z)
    both = np.einsum('b...c,cn->b...n', x, w)
    return lin, lead, dots, both
