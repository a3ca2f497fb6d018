"""scipy.special as numpy model code imports it: the exact GELU with erf, a sigmoid gate
with expit, softmax and log_softmax over an axis and over everything, logsumexp with and
without keepdims; -inf scores (masked entries, rows masked whole at some seeds), and an expit
whose exp(-x) overflows to inf."""
import math

import numpy as np
import scipy.special
from scipy.special import erf, expit, log_softmax, logsumexp, softmax

DIMS = dict(M=3, N=7)


def scipy_special(x: "f32[M, N]") -> ("f32[M, N]", "f32[M, N]", "f32[M, N]", "f32[M, N]",
                                       "f32[M, N]", "f32[M]", "f32[M, 1]", "f32[M, N]"):
    gelu = 0.5 * x * (1 + erf(x / math.sqrt(2)))
    gate = x * expit(x)
    masked = np.where(x > 1.5, -np.inf, x)
    probs = softmax(masked, axis=-1)
    logp = log_softmax(masked, axis=1)
    everything = scipy.special.softmax(x)
    lse = logsumexp(masked, axis=-1)
    lse_kept = logsumexp(x, axis=1, keepdims=True)
    overflow = scipy.special.expit(np.where(x > 0, -100.0 * x, x))  # exp(-x) overflows to inf
    return gelu, gate, probs, logp, everything, lse, lse_kept, overflow
