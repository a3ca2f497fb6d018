# Differential test on random specs (randspec.py): for each seed, `ollie eval` agrees with
# numpy in float64, and numpy's own float32 result lies inside ollie's per-element bound.
# OLLIE_RANDSPEC_N sets the number of seeds (default 150), OLLIE_RANDSPEC_START the first.
import os

import numpy as np
import pytest

from compare import F64_FROM_F32, bound_violation, float64_mismatch
from randspec import generate
from spec_harness import load_spec, ollie_eval

N_SEEDS = int(os.environ.get("OLLIE_RANDSPEC_N", "150"))
FIRST_SEED = int(os.environ.get("OLLIE_RANDSPEC_START", "0"))
_NP_DTYPE = {"f32": np.float32, "f64": np.float64}


def _fail(rs, what: str):
    pytest.fail(f"random spec seed {rs.seed} (regenerate with `python tests/numpy/randspec.py "
                f"{rs.seed}`): {what}\n--- spec ---\n{rs.text}", pytrace=False)


@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + N_SEEDS))
def test_random_spec(seed, tmp_path):
    rs = generate(seed)
    path = tmp_path / f"rand_{seed}.py"
    path.write_text(rs.text)
    spec = load_spec(path)

    rng = np.random.default_rng(seed)
    inputs = {name: np.asarray(rng.uniform(-2.0, 2.0, t.shape(rs.dims)), t.np_dtype)
              for name, t in spec.params}

    # numpy with the annotated dtypes: the generator's shapes and NEP 50 dtypes must hold.
    with np.errstate(all="raise", under="ignore"):
        try:
            got32 = spec.run_f32(inputs)
            want64 = spec.run_f64(inputs)
        except Exception as e:  # the generator must only write valid, finite programs
            _fail(rs, f"numpy raised {type(e).__name__}: {e}")
    for i, (r, (dt, shape)) in enumerate(zip(got32, rs.returns)):
        if r.shape != shape or r.dtype != _NP_DTYPE[dt]:
            _fail(rs, f"generator bug: out{i} annotated {dt}{list(shape)} but numpy gives "
                      f"{r.dtype}{list(r.shape)}")

    try:
        results = ollie_eval(spec, rs.used_dims, inputs, tmp_path / "eval")
    except pytest.fail.Exception as e:
        _fail(rs, str(e))

    for i, ((ref, bound), want, r32) in enumerate(zip(results, want64, got32)):
        # Random programs hit ill-conditioned elements (near-constant variances, cancelling
        # sums): there the tolerance is ollie's own bound scaled to double precision.
        scale = F64_FROM_F32 if r32.dtype == np.float32 else 1.0
        why = float64_mismatch(ref, want, f64_bound=bound * scale)
        if why:
            _fail(rs, f"out{i}: {why}")
        why = bound_violation(ref, bound, r32)
        if why:
            _fail(rs, f"out{i}, numpy float32: {why}")
