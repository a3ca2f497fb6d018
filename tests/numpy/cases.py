# Per-example settings of the cross-check: small dims for fast runs, and for each example
# with a reduction, dims making one reduction 4096 long plus a variant dropping one term.
from __future__ import annotations

import ml_dtypes
import numpy as np

# Small enough that a whole `ollie eval` is milliseconds; big enough that reductions are
# real sums (several terms) and no axis is a degenerate 1.
SMALL_DIMS = {
    "matmul": dict(M=8, K=16, N=8),
    "matmul_bias_relu": dict(M=8, K=16, N=8),
    "softmax": dict(M=4, N=16),
    "layernorm": dict(T=4, D=16),
    "layernorm_f16": dict(T=4, D=16),
    "rmsnorm": dict(T=4, D=16),
    "gelu": dict(M=4, N=16),
    "swiglu_mlp": dict(T=4, D=16, F=32),
    "attention_causal": dict(S=16, D=8),
    "mha_causal": dict(S=8, DM=16, H=2, HD=4),
    "rope": dict(S=8, H=2, HD=8),
    "mla_decode": dict(B=1, H=2, S=16, L=8, DR=4, DN=8, DV=8),
    "gpt2_block": dict(T=8, D=16, F=32),
    "llama_block": dict(B=1, L=8, HD=4, F=24),
    "llama_decode": dict(B=1, P=8, F=24, HD=4),
    "gemm": dict(M=8, K=16, N=8),
    "attention_prefill": dict(H=2, S=16, D=8),
    "gqa_decode": dict(B=1, S=16, KV=2, HD=8),
    "mla_decode_naive": dict(B=1, H=2, S=16, L=8, DR=4, DN=8, DV=8),
    "mla_decode_bf16": dict(B=1, H=2, S=16, L=8, DR=4, DN=8, DV=8),
    "matmul_bf16": dict(M=8, K=16, N=8),
    "embedding": dict(T=4, V=8, D=16, P=6),
}

# Purely elementwise (or data movement): no reduction that could lose a term.
NO_REDUCTION = {"gelu", "rope"}

LONG = 4096

# The unit roundoff of a 16-bit float output (float16 2^-11, bfloat16 2^-8), None for the
# others. Such an output is rounded in every run, numpy's "float64" one too: runs agree to
# within its spacing, not to float64's.
LOW_PRECISION_ROUNDOFF = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8}


def output_roundoff(spec, i=0):
    return LOW_PRECISION_ROUNDOFF.get(spec.returns[i].dtype)

# Weights that a real model scales by about 1/sqrt(fan_in); here by the nearest power of
# two, so scaled values stay exactly representable in f32. Unscaled, positive or
# 4096-long inputs push mha's attention scores into the hundreds or thousands, where
# softmax is so ill-conditioned that a sound float32 bound is necessarily wide (or
# infinite) and no test of its tightness means anything.
FAN_IN_SCALED = {"mha_causal": {"w_q": "DM", "w_k": "DM", "w_v": "DM"}}

# Index arrays of gathers and the dim of the axis they index: numpy accepts indices in
# [-V, V) only, so they are drawn there, -V, -1, 0 and V - 1 first (where they fit).
INDEX_INPUTS = {"embedding": {"ids": "V"}}


# The spec's exact value where numpy's run of the spec on float64 arrays is not computed in
# double: matmul_bf16's astype(np.float32) of its bfloat16 inputs (exact) makes numpy
# multiply in float32 even when the arrays come as float64.
FLOAT64_FORMS = {"matmul_bf16": lambda x: [np.asarray(x["a"], np.float64) @ np.asarray(x["b"], np.float64)]}


def run_f64(spec, inputs):
    """spec.run_f64, or the example's FLOAT64_FORMS where that run is not in double."""
    form = FLOAT64_FORMS.get(spec.name)
    return form(inputs) if form else spec.run_f64(inputs)


def make_inputs(spec, dims, rng, dist):
    """spec.inputs, with the FAN_IN_SCALED weights scaled as a trained model's would be."""
    inputs = spec.inputs(dims, rng, dist)
    for pname, dim in FAN_IN_SCALED.get(spec.name, {}).items():
        factor = 2.0 ** -round(np.log2(np.sqrt(dims[dim])))
        inputs[pname] = inputs[pname] * np.float32(factor)
    for pname, dim in INDEX_INPUTS.get(spec.name, {}).items():
        rows = dims[dim]
        ids = rng.integers(-rows, rows, inputs[pname].shape)
        ids.flat[:min(ids.size, 4)] = [-rows, -1, 0, rows - 1][:ids.size]
        inputs[pname] = ids.astype(inputs[pname].dtype)
    return inputs


def _softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# Each variant gets the spec and float64 copies of the inputs and returns (variant
# result, mask of the output elements whose reduction is the full 4096 long, or None for
# all). The dropped term is the one with the largest magnitude: a kernel that drops some
# term is caught when the verifier's random inputs make that term large; picking it here
# keeps the test deterministic rather than luck-dependent.

def _drop_matmul_k(spec, x):
    a, b = x["a"], x["b"]
    k = int(np.argmax(np.abs(a).max(axis=0) * np.abs(b).max(axis=1)))
    a = a.copy()
    a[:, k] = 0.0
    return run_f64(spec, {**x, "a": a})[0], None


def _drop_softmax_denominator(spec, x):
    s = x["x"]
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    # The max term (exp(0) = 1) is the largest one in the denominator.
    return e / (e.sum(axis=-1, keepdims=True) - e.max(axis=-1, keepdims=True)), None


def _drop_layernorm_mean(spec, x):
    v, gamma, beta = x["x"], x["gamma"], x["beta"]
    d = v.shape[-1]
    k = int(np.argmax(np.abs(v).max(axis=0)))
    mean = (v.sum(axis=-1, keepdims=True) - v[:, k:k + 1]) / d   # term k missing, same divisor
    centred = v - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    eps = spec.constant("EPS")
    return centred / np.sqrt(var + eps) * gamma + beta, None


def _drop_embedding_mean(spec, x):
    ids, wte, wpe = x["ids"].astype(np.int64), x["wte"], x["wpe"]  # the f64 run widens all
    v = wte[ids] + wpe[:len(ids)]
    return _drop_layernorm_mean(spec, {"x": v, "gamma": x["gamma"], "beta": x["beta"]})


def _drop_layernorm_f16_mean(spec, x):
    # What a kernel that dropped the term stores: the result rounded to float16.
    out, mask = _drop_layernorm_mean(spec, x)
    return out.astype(np.float16).astype(np.float64), mask


def _drop_rmsnorm_mean_square(spec, x):
    v, w = x["x"], x["weight"]
    d = v.shape[-1]
    k = int(np.argmax(np.abs(v).max(axis=0)))
    ms = ((v * v).sum(axis=-1, keepdims=True) - v[:, k:k + 1] ** 2) / d
    return v / np.sqrt(ms + spec.constant("EPS")) * w, None


def _drop_swiglu_hidden(spec, x):
    g = x["x"] @ x["w_gate"]
    h = g / (1.0 + np.exp(-g)) * (x["x"] @ x["w_up"])
    f = int(np.argmax(np.abs(h).max(axis=0) * np.abs(x["w_down"]).max(axis=1)))
    w_up = x["w_up"].copy()
    w_up[:, f] = 0.0          # hidden unit f becomes 0: its term leaves the down-projection sum
    return spec.run_f64({**x, "w_up": w_up})[0], None


def _drop_attention_key(spec, x):
    q, k, v = x["q"], x["k"], x["v"]
    s = q.shape[0]
    p_last = _softmax(q[-1] @ k.T / np.sqrt(q.shape[1]))      # the last query sees all keys
    j = int(np.argmax(p_last * np.abs(v).max(axis=1)))
    v = v.copy()
    v[j] = 0.0                # key j's term leaves every P @ V sum
    mask = np.zeros((s, q.shape[1]), dtype=bool)
    mask[-1] = True           # only the last row sums over all 4096 keys
    return spec.run_f64({**x, "v": v})[0], mask


def _drop_prefill_feature(spec, x):
    q, k = x["q"], x["k"]
    d = int(np.argmax(np.abs(q).max(axis=(0, 1)) * np.abs(k).max(axis=(0, 1))))
    k = k.copy()
    k[:, :, d] = 0.0          # feature d's term leaves every q . k score (a D-long sum)
    return spec.run_f64({**x, "k": k})[0], None


def _drop_gqa_position(spec, x):
    q, k, v = x["q"], x["cache_k"], x["cache_v"]
    b, s, kv, hd = k.shape
    qg = q.reshape(b, kv, -1, hd)
    p = _softmax(np.einsum("bkgd,bskd->bkgs", qg, k) / np.sqrt(hd))
    j = int(np.argmax(p.max(axis=(0, 1, 2)) * np.abs(v).max(axis=(0, 2, 3))))
    v = v.copy()
    v[:, j] = 0.0             # cached position j leaves every head's P @ V sum
    return spec.run_f64({**x, "cache_v": v})[0], None


def _drop_mha_projection_term(spec, x):
    xs, w_v = x["x"], x["w_v"]
    k = int(np.argmax(np.abs(xs).max(axis=0) * np.abs(w_v).reshape(w_v.shape[0], -1).max(axis=1)))
    w_v = w_v.copy()
    w_v[k] = 0.0              # x[:, k] * w_v[k] leaves the value projection (a DM-long sum)
    return spec.run_f64({**x, "w_v": w_v})[0], None


def _drop_mla_key(spec, x):
    scale = spec.constant("SCALE")
    q_lat = np.einsum("bhd,hdl->bhl", x["q_nope"], x["w_uk"])
    scores = (np.einsum("bhl,bsl->bhs", q_lat, x["c_kv"])
              + np.einsum("bhr,bsr->bhs", x["q_pe"], x["k_pe"])) * scale
    p = _softmax(scores)
    j = int(np.argmax((p.max(axis=1) * np.abs(x["c_kv"]).max(axis=2))[0]))
    p = p.copy()
    p[:, :, j] = 0.0          # key position j leaves the P @ c_kv sum (not the denominator)
    o_lat = np.einsum("bhs,bsl->bhl", p, x["c_kv"])
    return np.einsum("bhl,hlv->bhv", o_lat, x["w_uv"]), None


def _drop_mla_bf16_key(spec, x):
    # What a kernel that dropped the key stores: the result rounded to bfloat16.
    out, mask = _drop_mla_key(spec, x)
    return out.astype(ml_dtypes.bfloat16).astype(np.float64), mask


def _drop_gpt2_hidden(spec, x):
    fc_w, fc_b = x["fc_w"].copy(), x["fc_b"].copy()
    f = int(np.argmax(np.abs(x["fc_proj_w"]).max(axis=1)))
    fc_w[:, f] = 0.0
    fc_b[f] = 0.0             # hidden unit f is gelu(0) = 0: its term leaves the F-long sum
    return spec.run_f64({**x, "fc_w": fc_w, "fc_b": fc_b})[0], None


def _drop_llama_hidden(spec, x):
    f = int(np.argmax(np.abs(x["down_weight"]).max(axis=1)))
    up = x["up_weight"].copy()
    up[:, f] = 0.0            # hidden unit f becomes 0: its term leaves the F-long sum
    return spec.run_f64({**x, "up_weight": up})[0], None


REDUCTION_CASES = {
    "matmul": (dict(M=4, K=LONG, N=4), _drop_matmul_k),
    "matmul_bias_relu": (dict(M=4, K=LONG, N=4), _drop_matmul_k),
    "softmax": (dict(M=4, N=LONG), _drop_softmax_denominator),
    "layernorm": (dict(T=4, D=LONG), _drop_layernorm_mean),
    "layernorm_f16": (dict(T=4, D=LONG), _drop_layernorm_f16_mean),
    "rmsnorm": (dict(T=4, D=LONG), _drop_rmsnorm_mean_square),
    "swiglu_mlp": (dict(T=2, D=8, F=LONG), _drop_swiglu_hidden),
    "attention_causal": (dict(S=LONG, D=4), _drop_attention_key),
    "mha_causal": (dict(S=4, DM=LONG, H=2, HD=4), _drop_mha_projection_term),
    "mla_decode": (dict(B=1, H=2, S=LONG, L=8, DR=4, DN=8, DV=8), _drop_mla_key),
    "gpt2_block": (dict(T=2, D=8, F=LONG), _drop_gpt2_hidden),
    "llama_block": (dict(B=1, L=2, HD=4, F=LONG), _drop_llama_hidden),
    "llama_decode": (dict(B=1, P=4, F=LONG, HD=4), _drop_llama_hidden),
    "gemm": (dict(M=4, K=LONG, N=4), _drop_matmul_k),
    # The 4096-long reduction is the score's over D (S x S keys at S = 4096 would take the
    # reference minutes); attention_causal covers the one over keys.
    "attention_prefill": (dict(H=1, S=4, D=LONG), _drop_prefill_feature),
    "gqa_decode": (dict(B=1, S=LONG, KV=2, HD=4), _drop_gqa_position),
    # The naive form equals the absorbed one in exact arithmetic: the same variant.
    "mla_decode_naive": (dict(B=1, H=2, S=LONG, L=8, DR=4, DN=8, DV=8), _drop_mla_key),
    "mla_decode_bf16": (dict(B=1, H=2, S=LONG, L=8, DR=4, DN=8, DV=8), _drop_mla_bf16_key),
    "matmul_bf16": (dict(M=4, K=LONG, N=4), _drop_matmul_k),
    "embedding": (dict(T=4, V=8, D=LONG, P=4), _drop_embedding_mean),
}
