"""numpy functions a spec composes from others, as model code writes them: np.sign (of
NaN, +-inf and -0.0 too), np.exp2, np.log2, np.log10, np.isnan/isinf/isfinite, np.average,
np.tensordot (an int and axis pairs), np.moveaxis, np.broadcast_to (a GQA expand), np.eye,
np.identity, np.copy, the methods .dot and .repeat, np.dot of 3-D arrays (numpy's rule:
a's last axis with b's second-to-last) and np.inner of 2-D and 3-D arrays, and np.einsum in implicit mode (numpy's
output order: the labels that appear once, upper case first), and np.pad in constant mode
(a causal convolution's left padding, a border of -1.5, a dim as a width); np.finfo's min
as a mask value (a strong float32 scalar, as numpy's) and its eps, np.nan_to_num (defaults
and given values), np.logaddexp (equal and infinite arguments too) and np.heaviside."""
import numpy as np

DIMS = dict(M=3, N=7)


def derived_funcs(x: "f32[M, N]", w: "f32[N, N]", g: "f32[2, M, N]") -> (
    "f32[M, N]", "f32[M, N]", "f32[M, N]", "f32[M, N]", "f32[M]", "f32[M, N]", "f32[M, M]",
    "f32[N, 2, M]", "f32[2, 2, M, N]", "f32[M, N]", "f32[M, N]", "f32[M, N]", "f32[M, N]",
    "f32[M, 2*N]", "f32[M, N]", "f32[N, M]", "f32[2, M, N]", "f32[M, N]", "f32[M+2, N+2]",
    "f32[2, M, 2*N]", "f32[M, N]", "f32[M, N]", "f32[M, N]", "f32[M, N]", "f32[M, N]",
    "f32[2, M, N]", "f32[2, M, M, 2]", "f32[M, 2, M]"):
    special = np.where(x > 0.8, np.inf, np.where(x < -0.8, -np.inf, x))
    special = np.where(np.abs(x) < 0.1, np.nan, special)
    special = np.where((x > 0.3) & (x < 0.4), -0.0, special).astype(np.float32)
    sign = np.sign(special)
    flags = np.isnan(special) * 1.0 + np.isinf(special) * 2.0 + np.isfinite(special) * 4.0
    powers = np.exp2(x) + np.log2(np.abs(x) + 1) + np.log10(np.abs(x) + 2)
    avg = np.average(x, axis=-1, keepdims=True) - x
    rows = np.average(x, axis=1)
    td = np.tensordot(x, w, axes=1)
    gram = np.tensordot(x, x, axes=([1], [1]))
    moved = np.moveaxis(g, [0, 1], [1, 2])
    expanded = np.broadcast_to(g[:, None], (2, 2) + x.shape)
    eye = np.eye(x.shape[0], dtype=np.float32) @ x + np.identity(x.shape[0], np.float32) @ x
    shifted = x @ np.eye(x.shape[1], x.shape[1], 1, dtype=np.float32)
    copied = np.copy(x) * 2
    dotted = x.dot(w)
    repeated = x.repeat(2, axis=1)
    implicit = np.einsum('ij,jk', x, w)
    upper_first = np.einsum('bA,AC', x, w)
    broadcast = np.einsum('...j,jk', g, w)
    padded = np.pad(x, ((2, 0), (0, 0)))                # a causal conv over M, kernel 3
    conv = padded[:-2] * w[0] + padded[1:-1] * w[1] + padded[2:] * w[2]
    border = np.pad(x, 1, constant_values=-1.5)
    wide = np.pad(g, ((0, 0), (0, 0), (0, x.shape[1])))
    masked_min = np.where(x > 0.5, np.finfo(x.dtype).min, x * np.finfo(np.float32).eps)
    cleaned = np.nan_to_num(special)
    cleaned_given = np.nan_to_num(special, nan=-1.0, posinf=9.0, neginf=-9.0)
    lae = np.logaddexp(special, np.where(x > 0.5, special, x))
    step = np.heaviside(np.where(x > 0.7, 0.0, special), 0.25)
    return (sign, flags.astype(np.float32), powers, avg, rows, td, gram, moved, expanded, eye,
            shifted, copied, dotted, repeated, implicit, upper_first, broadcast, conv, border, wide,
            masked_min, cleaned, cleaned_given, lae, step, np.dot(g, w),
            np.dot(g, np.transpose(g, (1, 2, 0))), np.inner(x, g))
