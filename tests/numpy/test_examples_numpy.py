# Checks of the examples that need only numpy: each runs as a script, follows the spec
# conventions, returns the dtypes its annotations promise, and its cross-check variants
# are detectable in principle. These pass before the `ollie` binary exists.
import subprocess
import sys

import numpy as np
import pytest

from cases import (NO_REDUCTION, REDUCTION_CASES, SMALL_DIMS, make_inputs, output_roundoff,
                   run_f64)
from spec_harness import REPO, example_paths


def test_all_required_examples_exist():
    names = {p.stem for p in example_paths()}
    required = {"matmul", "matmul_bias_relu", "softmax", "layernorm", "rmsnorm", "gelu",
                "swiglu_mlp", "attention_causal", "mha_causal", "rope", "mla_decode"}
    assert required <= names, f"missing examples: {sorted(required - names)}"


def test_runs_as_script(spec):
    proc = subprocess.run([sys.executable, str(spec.path)], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert spec.name in proc.stdout


def test_signature_and_dims_are_consistent(spec):
    assert spec.default_dims, f"{spec.name}: DIMS is empty"
    for name, value in spec.default_dims.items():
        assert isinstance(value, int) and value > 0, f"{spec.name}: DIMS[{name!r}] = {value!r}"
    for _, t in [*spec.params, *[("return", r) for r in spec.returns]]:
        for d in t.dims:
            assert isinstance(d, int) or d in spec.default_dims or d in dict(spec.relations), \
                f"{spec.name}: annotation dim {d!r} is not in DIMS or RELATIONS"
    # Every example must say how it is cross-checked, so a new one cannot slip through.
    assert set(SMALL_DIMS.get(spec.name, {})) == set(spec.default_dims), \
        f"{spec.name}: cases.SMALL_DIMS must bind exactly the DIMS keys"
    assert (spec.name in REDUCTION_CASES) != (spec.name in NO_REDUCTION), \
        f"{spec.name}: list it in exactly one of cases.REDUCTION_CASES / cases.NO_REDUCTION"
    if spec.name in REDUCTION_CASES:
        assert set(REDUCTION_CASES[spec.name][0]) == set(spec.default_dims)


@pytest.mark.parametrize("dims_kind", ["small", "default"])
def test_numpy_result_matches_annotation(spec, dims_kind):
    # NEP 50 promotion: a float64 table that is not cast back would turn an f32 result f64.
    dims = SMALL_DIMS[spec.name] if dims_kind == "small" else spec.default_dims
    inputs = make_inputs(spec, dims, np.random.default_rng(0), "normal")
    # At DIMS, unscaled normal weights push swiglu's exp(-g) past float32's range; inf
    # there is the correct limit (silu -> 0), so the overflow warning is expected.
    with np.errstate(over="ignore"):
        results = spec.run_f32(inputs)
    assert len(results) == len(spec.returns)
    for r, t in zip(results, spec.returns):
        assert r.dtype == t.np_dtype, f"{spec.name}: numpy returns {r.dtype}, annotation says {t.dtype}"
        assert r.shape == spec.shape(t, dims)
        assert np.all(np.isfinite(r))


def test_float64_run_is_double_and_close_to_float32(spec):
    dims = SMALL_DIMS[spec.name]
    inputs = make_inputs(spec, dims, np.random.default_rng(1), "normal")
    r64, r32 = run_f64(spec, inputs)[0], spec.run_f32(inputs)[0]
    low = output_roundoff(spec)
    if low:  # a float16/bfloat16 output is rounded in both runs
        assert r64.dtype == spec.returns[0].np_dtype
        r64, r32 = r64.astype(np.float64), r32.astype(np.float64)
    else:
        assert r64.dtype == np.float64
    scale = np.abs(r64).max()
    err = np.abs(r32 - r64).max()
    tol = 4 * low if low else 1e-4
    assert err <= tol * scale, f"{spec.name}: float32 and float64 runs differ by {err} (scale {scale})"
    assert err > 0 or low or spec.name in {"matmul", "matmul_bias_relu"} or scale == 0, \
        f"{spec.name}: float64 run identical to float32; is it really computed in double?"


def test_scaled_reference_is_distinguishable_from_float32_error(spec):
    # Precondition of the "bound not too loose" test: numpy's own float32 error must be
    # far below a 1e-4 relative change somewhere, or no sound bound could catch it.
    inputs = make_inputs(spec, SMALL_DIMS[spec.name], np.random.default_rng(0), "positive_away")
    ref, r32 = run_f64(spec, inputs)[0], spec.run_f32(inputs)[0]
    shift = np.abs(ref) * 1e-4
    err = np.abs(r32.astype(np.float64) - ref)
    assert np.any(shift > 100 * err), f"{spec.name}: max shift/err ratio {np.max(shift / (err + 1e-300))}"


@pytest.mark.parametrize("name", sorted(REDUCTION_CASES))
def test_dropped_term_is_distinguishable_from_float32_error(name):
    # Precondition of the dropped-term test, at the 4096-long reduction.
    from spec_harness import EXAMPLES_DIR, load_spec
    spec = load_spec(EXAMPLES_DIR / f"{name}.py")
    overrides, make_variant = REDUCTION_CASES[name]
    dims = spec.full_dims(overrides)
    inputs = make_inputs(spec, dims, np.random.default_rng(0), "normal")
    x64 = {k: v.astype(np.float64) for k, v in inputs.items()}
    ref, r32 = run_f64(spec, inputs)[0].astype(np.float64), spec.run_f32(inputs)[0]
    variant, mask = make_variant(spec, x64)
    mask = np.ones(ref.shape, bool) if mask is None else mask
    change = np.abs(variant - ref)[mask].max()
    err = np.abs(r32.astype(np.float64) - ref)[mask].max()
    # A float16/bfloat16 output: both runs round it, so they agree or differ by one spacing.
    factor = 1 if output_roundoff(spec) else 4
    assert change > factor * err, f"{name}: dropping one term changes the result by {change}, " \
                                  f"numpy float32 is already off by {err}"
