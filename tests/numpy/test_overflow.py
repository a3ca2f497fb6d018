# Float32 overflow in the reference's bounds: specs whose exp overflows for some inputs
# (tests/numpy/specs_overflow/) must have numpy's float32 answer inside ollie's bound,
# with infinite bounds only where float32 really returns inf or a huge value.
import re
from pathlib import Path

import numpy as np
import pytest

from spec_harness import EXAMPLES_DIR, load_spec, ollie_eval, run_ollie

SPECS = Path(__file__).resolve().parent / "specs_overflow"
F32_EXP_LIMIT = 88.72  # np.exp overflows float32 above this


def eval_with_bounds(spec, dims, inputs, workdir):
    """(reference, bound) per result of `ollie eval`; infinite bounds are allowed here (the
    tests say where)."""
    return ollie_eval(spec, dims, inputs, workdir, allow_infinite_bounds=True)


def numpy_f32(spec, inputs):
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return spec.run_f32(inputs)


def assert_inside(name, got, ref, bound):
    assert not np.isnan(bound).any() and (bound >= 0).all(), f"{name}: bad bound"
    err = np.abs(got.astype(np.float64) - ref)
    ok = np.isinf(bound) | (got == ref) | (err <= bound)
    if not ok.all():
        i = int(np.argwhere(~ok)[0][0])
        pytest.fail(f"{name}: numpy f32 {got.flat[i]!r} outside ref {ref.flat[i]!r} +- {bound.flat[i]!r}")


def wide_inputs(spec, dims, seed, scale):
    rng = np.random.default_rng(seed)
    return {p: np.asarray(rng.standard_normal(spec.shape(t, dims)) * scale, dtype=np.float32) for p, t in spec.params}


@pytest.mark.parametrize("name", ["silu", "sigmoid"])
@pytest.mark.parametrize("seed", [0, 1])
def test_silu_and_sigmoid_bounds_are_finite_and_hold_past_overflow(name, seed, tmp_path):
    spec = load_spec(SPECS / f"{name}.py")
    inputs = wide_inputs(spec, spec.default_dims, seed, 60.0)
    x = next(iter(inputs.values()))
    assert (x < -F32_EXP_LIMIT).sum() >= 5, "the inputs must make exp(-x) overflow somewhere"
    (ref, bound), = eval_with_bounds(spec, spec.default_dims, inputs, tmp_path)
    got, = numpy_f32(spec, inputs)
    assert np.isfinite(bound).all(), f"{name}: {np.isinf(bound).sum()} unbounded elements"
    assert_inside(name, got, ref, bound)
    # Where exp overflowed the answer is ~0 and its bound tiny, so a wrong value is caught.
    assert (bound[x < -F32_EXP_LIMIT] < 1e-30).all()


def test_swiglu_small_with_overflowing_gates(tmp_path):
    spec = load_spec(SPECS / "swiglu_small.py")
    dims = spec.default_dims
    for seed in range(3):
        inputs = wide_inputs(spec, dims, seed, 1.0)
        inputs["w_gate"] = inputs["w_gate"] * np.float32(12.0)
        gates = inputs["x"].astype(np.float64) @ inputs["w_gate"].astype(np.float64)
        assert (gates < -F32_EXP_LIMIT).any(), "some gate must overflow exp(-g)"
        (ref, bound), = eval_with_bounds(spec, dims, inputs, tmp_path / str(seed))
        got, = numpy_f32(spec, inputs)
        assert np.isfinite(bound).all()
        assert_inside("swiglu_small", got, ref, bound)


def test_softplus_is_unbounded_exactly_where_float32_overflows(tmp_path):
    spec = load_spec(SPECS / "softplus.py")
    inputs = wide_inputs(spec, spec.default_dims, 3, 60.0)
    x = inputs["x"]
    (ref, bound), = eval_with_bounds(spec, spec.default_dims, inputs, tmp_path)
    got, = numpy_f32(spec, inputs)
    overflow = x > F32_EXP_LIMIT
    assert overflow.sum() >= 5
    assert np.isinf(got[overflow]).all()
    np.testing.assert_array_equal(np.isinf(bound), overflow)
    assert_inside("softplus", got, ref, bound)


def test_swiglu_example_has_no_unbounded_elements():
    proc = run_ollie(["eval", str(EXAMPLES_DIR / "swiglu_mlp.py"), "--seed", "1"])
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^out0:", proc.stdout, re.M), proc.stdout
    assert "no finite bound" not in proc.stdout, proc.stdout
