"""Helpers shared by the benchmark scripts (bench/baseline.py, bench/peers.py): the seeded
inputs every example is timed on, the loose agreement check made before timing, reading the
dims order from an emitted <entry>.ollie.h, and numpy's BLAS thread count. Importing this
module does not import numpy: the scripts must set their thread variables first."""
import ctypes
import os
import re
import sys

# Loose agreement with numpy, relative to the largest |numpy| of the output (so sums that
# cancel to near zero do not fail on rounding): a sanity check before timing, not the
# verifier (`ollie run-kernel` checks against derived bounds).
RTOL = {"f16": 1e-2, "bf16": 2e-2, "f32": 1e-3, "f64": 1e-9, "i32": 0, "bool": 0}

# Weights drawn as a trained model's would be, normal / sqrt(fan-in), as each spec's own
# __main__ block draws them: unscaled, these products overflow exp (swiglu) or push
# softmax scores into the hundreds (mha); every other input is plain normal(0, 1).
FAN_IN = {
    "mha_causal": {"w_q": ("DM",), "w_k": ("DM",), "w_v": ("DM",), "w_o": ("H", "HD")},
    "mla_decode": {"w_uk": ("L",), "w_uv": ("L",)},
    "mla_decode_bf16": {"w_uk": ("L",), "w_uv": ("L",)},
    "swiglu_mlp": {"w_gate": ("D",), "w_up": ("D",), "w_down": ("F",)},
}

HEADER_DIM = re.compile(r"^\s*constexpr int64_t (\w+) = (-?\d+);\s*// dims\[(\d+)\]", re.M)
HEADER_COUNT = re.compile(r"^\s*constexpr int64_t count = (\d+);", re.M)


class BenchError(Exception):
    """One example could not be benchmarked; its FAIL row says why."""


def header_dims(header):
    """The dims in ABI order with the sizes bound for this kernel, from <entry>.ollie.h."""
    found = sorted((int(i), name, int(value)) for name, value, i in HEADER_DIM.findall(header))
    count = HEADER_COUNT.search(header)
    if count is None or [i for i, _, _ in found] != list(range(int(count.group(1)))):
        raise BenchError("cannot read the dims order from the header (expected `constexpr int64_t "
                         "count = N;` and one `constexpr int64_t NAME = SIZE;  // dims[i]` per dim)")
    return {name: value for _, name, value in found}


def example_inputs(spec, dims, seed=0):
    """Seeded float inputs at `dims`: normal(0, 1), weights scaled by 1/sqrt(fan-in) (FAN_IN)."""
    import numpy as np
    inputs = spec.inputs(dims, np.random.default_rng(seed), "normal")
    for name, fan_in in FAN_IN.get(spec.name, {}).items():
        scale = np.sqrt(np.prod([dims[d] for d in fan_in]))
        inputs[name] = inputs[name] / inputs[name].dtype.type(scale)
    return inputs


def disagreement(spec, got, want, who="kernel"):
    """None if every output in `got` matches numpy's `want`; else what differs."""
    import numpy as np
    for i, (t, g, w) in enumerate(zip(spec.returns, got, want)):
        g = np.asarray(g)
        w = np.asarray(w)
        if w.shape != g.shape:
            return f"out{i}: numpy's shape is {w.shape}, {who}'s {g.shape}"
        w = w.astype(t.np_dtype)
        g = g.astype(t.np_dtype)
        scale = float(np.max(np.abs(w))) if w.size else 0.0
        if not np.allclose(g, w, rtol=RTOL[t.dtype], atol=RTOL[t.dtype] * scale):
            err = np.abs(g.astype(np.float64) - w)
            idx = np.unravel_index(np.argmax(np.where(np.isnan(err), np.inf, err)), err.shape)
            return (f"out{i}: {who} {float(g[idx]):.6g} vs numpy {float(w[idx]):.6g} at {tuple(map(int, idx))} "
                    f"(max |numpy| {scale:.3g}, rtol {RTOL[t.dtype]})")
    return None


def blas_threads():
    """The thread count numpy's OpenBLAS reports, or '?' where it cannot be asked."""
    with open("/proc/self/maps") as maps:
        libs = {line.split()[-1] for line in maps if "openblas" in line.lower() and ".so" in line}
    for lib in sorted(libs):
        handle = ctypes.CDLL(lib)
        for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                     "openblas_get_num_threads"):
            if hasattr(handle, name):
                return str(getattr(handle, name)())
    return "?"


def select_examples(root, only, ollie):
    """The example specs to run (all of root/examples, or those named by --only), after
    checking that the ollie binary exists; exits with a message otherwise."""
    paths = sorted((root / "examples").glob("*.py"))
    if only:
        unknown = set(only) - {p.stem for p in paths}
        if unknown:
            sys.exit(f"no example named {', '.join(sorted(unknown))} in examples/")
        paths = [p for p in paths if p.stem in only]
    if not os.access(ollie, os.X_OK):
        sys.exit(f"no ollie binary at {ollie} (build it, or pass --ollie)")
    return paths
