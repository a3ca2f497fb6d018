# Cross-checks `ollie eval` against numpy on every example: the float64 reference agrees
# with numpy in double, numpy's own float32 result always lies inside ollie's error bound
# (never too tight), and wrong results (scaled by 1 + 1e-4, or one term of a 4096-long
# reduction dropped) fall outside it (never too loose). Needs the `ollie` binary.
import re

import numpy as np
import pytest

from cases import (NO_REDUCTION, REDUCTION_CASES, SMALL_DIMS, make_inputs, output_roundoff,
                   run_f64)
from compare import bound_violation, float64_mismatch, rounded_mismatch
from spec_harness import EXAMPLES_DIR, load_spec, ollie_eval, run_ollie, dims_flag


def test_check_prints_ir(spec):
    proc = run_ollie(["check", str(spec.path), "--entry", spec.entry,
                      "--dims", dims_flag(SMALL_DIMS[spec.name])])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip(), "ollie check printed nothing"


@pytest.mark.parametrize("seed", [0, 1])
def test_reference_agrees_with_numpy_float64(spec, seed, tmp_path):
    dims = SMALL_DIMS[spec.name]
    inputs = make_inputs(spec, dims, np.random.default_rng(seed), "normal")
    expected = run_f64(spec, inputs)
    for i, ((ref, _), want) in enumerate(zip(ollie_eval(spec, dims, inputs, tmp_path), expected)):
        low = output_roundoff(spec, i)
        # A float16/bfloat16 output: numpy rounds its float32 statistics, the reference the
        # exact ones; they agree but where a value lies within float32's error of a tie.
        why = rounded_mismatch(ref, want, low) if low else float64_mismatch(ref, want)
        if why:
            pytest.fail(f"{spec.name} out{i}: {why}")


@pytest.mark.parametrize("dist", ["normal", "uniform", "positive"])
def test_bound_contains_numpy_float32(spec, dist, tmp_path):
    dims = SMALL_DIMS[spec.name]
    for seed in (0, 1, 2):
        inputs = make_inputs(spec, dims, np.random.default_rng(100 + seed), dist)
        got = spec.run_f32(inputs)
        results = ollie_eval(spec, dims, inputs, tmp_path / f"s{seed}")
        for i, ((ref, bound), r32) in enumerate(zip(results, got)):
            why = bound_violation(ref, bound, r32)
            if why:
                pytest.fail(f"{spec.name} out{i} ({dist}, seed {100 + seed}), numpy float32: {why}")


def test_bound_rejects_scaled_reference(spec, tmp_path):
    # Inputs bounded away from 0 so no sum cancels and a relative change shows everywhere.
    dims = SMALL_DIMS[spec.name]
    inputs = make_inputs(spec, dims, np.random.default_rng(7), "positive_away")
    for i, (ref, bound) in enumerate(ollie_eval(spec, dims, inputs, tmp_path)):
        # 1e-4 for float32 and float64 outputs; past half a spacing of a 16-bit float output
        # (1e-3 for float16, 1e-2 for bfloat16), which a correct rounding may be off by.
        scale = {2.0 ** -11: 1e-3, 2.0 ** -8: 1e-2}.get(output_roundoff(spec, i), 1e-4)
        wrong = ref * (1 + scale)
        excess = np.abs(wrong - ref) / np.maximum(bound, 1e-300)
        assert np.any(np.abs(wrong - ref) > bound), \
            f"{spec.name} out{i}: the reference scaled by 1 + {scale:g} passes the bound everywhere " \
            f"(largest |change| / bound = {excess.max():.3g}); the bound is too loose"


@pytest.mark.parametrize("name", sorted(REDUCTION_CASES))
def test_bound_rejects_dropped_reduction_term(name, tmp_path):
    spec = load_spec(EXAMPLES_DIR / f"{name}.py")
    overrides, make_variant = REDUCTION_CASES[name]
    dims = spec.full_dims(overrides)
    inputs = make_inputs(spec, dims, np.random.default_rng(0), "normal")
    (ref, bound), *_ = ollie_eval(spec, dims, inputs, tmp_path)  # the first result

    # At this size the bound must still contain a correct float32 result ...
    r32 = spec.run_f32(inputs)[0].astype(np.float64)
    err = np.abs(r32 - ref)
    assert np.all(err <= bound), f"{name}: numpy float32 outside the bound at the long reduction " \
                                 f"(worst err/bound {np.max(err / np.maximum(bound, 1e-300)):.3g})"
    # ... and exclude one that lost a single term of the 4096 summed.
    variant, mask = make_variant(spec, {k: v.astype(np.float64) for k, v in inputs.items()})
    mask = np.ones(ref.shape, bool) if mask is None else mask
    change = np.abs(variant - ref)[mask]
    assert np.any(change > bound[mask]), \
        f"{name}: dropping one of {max(overrides.values())} reduction terms stays inside the bound " \
        f"(largest |change| / bound = {np.max(change / np.maximum(bound[mask], 1e-300)):.3g})"


def test_every_reduction_case_is_an_example():
    names = {p.stem for p in EXAMPLES_DIR.glob("*.py")}
    assert set(REDUCTION_CASES) | NO_REDUCTION <= names


def test_eval_generates_inputs_from_seed(tmp_path):
    spec = load_spec(EXAMPLES_DIR / "softmax.py")
    dims = SMALL_DIMS["softmax"]

    def run(seed, out):
        proc = run_ollie(["eval", str(spec.path), "--dims", dims_flag(dims),
                          "--seed", str(seed), "--out", str(out)])
        assert proc.returncode == 0, proc.stderr
        with np.load(out) as npz:
            return npz["out0"]

    a, b, c = run(3, tmp_path / "a.npz"), run(3, tmp_path / "b.npz"), run(4, tmp_path / "c.npz")
    assert a.shape == (dims["M"], dims["N"])
    np.testing.assert_allclose(a.sum(axis=-1), 1.0, rtol=1e-12)   # it is a softmax
    assert np.array_equal(a, b), "the same --seed must give the same inputs"
    assert not np.array_equal(a, c), "different seeds gave identical results"


@pytest.mark.parametrize("problem", ["wrong_shape", "missing_input"])
def test_eval_rejects_bad_inputs(problem, tmp_path):
    spec = load_spec(EXAMPLES_DIR / "matmul.py")
    dims = SMALL_DIMS["matmul"]
    inputs = spec.inputs(dims, np.random.default_rng(0), "normal")
    if problem == "wrong_shape":
        inputs["b"] = inputs["b"][:-1]
    else:
        del inputs["b"]
    np.savez(tmp_path / "in.npz", **inputs)
    proc = run_ollie(["eval", str(spec.path), "--dims", dims_flag(dims), "--inputs",
                      str(tmp_path / "in.npz"), "--out", str(tmp_path / "out.npz")])
    assert proc.returncode == 1, f"exit {proc.returncode}, stderr: {proc.stderr}"
    # The message must name the offending parameter so the user knows what to fix.
    assert re.search(r"(?<![\w])b(?![\w])", proc.stderr), f"stderr does not name input b: {proc.stderr}"
    assert "Traceback" not in proc.stderr and "terminate called" not in proc.stderr
