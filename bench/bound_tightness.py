#!/usr/bin/env python3
"""How tight ollie's derived error bounds are, per example, measured side by side in one
run: the largest |numpy float32 - reference| / bound (a correct implementation: must stay
below 1, and the closer to 1 the tighter the bound), and the smallest-over-variants
largest |wrong - reference| / bound for the two wrong variants of the cross-check suite
(the reference scaled by 1 + 1e-4, and one term dropped from a 4096-long reduction): must
exceed 1, and the larger the better the bound separates right from wrong.

usage: OLLIE_BIN=build/ollie .venv/bin/python bench/bound_tightness.py
"""
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "numpy"))
from cases import REDUCTION_CASES, SMALL_DIMS, make_inputs  # noqa: E402
from spec_harness import load_spec, ollie_eval  # noqa: E402


def ratio(diff, bound):
    return float(np.max(diff / np.maximum(bound, 1e-300)))


def main():
    print(f"{'example':<18} {'f32 err/bound':>14} {'x(1+1e-4)':>10} {'drop 1 of 4096':>15}")
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted((ROOT / "examples").glob("*.py")):
            spec = load_spec(path)
            dims = spec.full_dims(SMALL_DIMS[spec.name])
            worst_ok = 0.0
            for dist in ("normal", "uniform", "positive"):
                for seed in range(3):
                    inputs = make_inputs(spec, dims, np.random.default_rng(seed), dist)
                    (ref, bound), *_ = ollie_eval(spec, dims, inputs, Path(tmp) / f"{spec.name}{dist}{seed}")
                    r32 = spec.run_f32(inputs)[0].astype(np.float64)
                    worst_ok = max(worst_ok, ratio(np.abs(r32 - ref), bound))
            inputs = make_inputs(spec, dims, np.random.default_rng(7), "positive_away")
            (ref, bound), *_ = ollie_eval(spec, dims, inputs, Path(tmp) / f"{spec.name}scaled")
            scaled = ratio(np.abs(ref * 1e-4), bound)
            dropped = "-"
            if spec.name in REDUCTION_CASES:
                overrides, make_variant = REDUCTION_CASES[spec.name]
                long_dims = spec.full_dims(overrides)
                inputs = make_inputs(spec, long_dims, np.random.default_rng(0), "normal")
                (ref, bound), *_ = ollie_eval(spec, long_dims, inputs, Path(tmp) / f"{spec.name}long")
                variant, mask = make_variant(spec, {k: v.astype(np.float64) for k, v in inputs.items()})
                mask = np.ones(ref.shape, bool) if mask is None else mask
                dropped = f"{ratio(np.abs(variant - ref)[mask], bound[mask]):.3g}"
            print(f"{spec.name:<18} {worst_ok:14.3g} {scaled:10.3g} {dropped:>15}")


if __name__ == "__main__":
    main()
