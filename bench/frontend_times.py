#!/usr/bin/env python3
"""Times `ollie check` and `ollie eval` on every example at its default DIMS, side by side
with numpy running the same spec in float64 on the same inputs (the work `eval` replaces),
and prints the medians and the ratio. The goal is well under a second for both verbs.

usage: .venv/bin/python bench/frontend_times.py [--ollie build/ollie] [--repeat 5]
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "numpy"))
import spec_harness  # noqa: E402


def median_seconds(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ollie", default=str(ROOT / "build" / "ollie"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    print(f"{'example':<20} {'check ms':>9} {'eval ms':>9} {'numpy f64 ms':>13} {'eval/numpy':>11}")
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted((ROOT / "examples").glob("*.py")):
            spec = spec_harness.load_spec(path)
            inputs = spec.inputs(spec.default_dims, np.random.default_rng(0), "normal")
            in_npz = Path(tmp) / f"{path.stem}.in.npz"
            np.savez(in_npz, **inputs)
            run = lambda *a: subprocess.run([args.ollie, *a], check=True, capture_output=True)  # noqa: E731
            check_s = median_seconds(lambda: run("check", str(path)), args.repeat)
            eval_s = median_seconds(
                lambda: run("eval", str(path), "--inputs", str(in_npz), "--out", str(Path(tmp) / "o.npz")),
                args.repeat)
            f64 = {k: v.astype(np.float64) for k, v in inputs.items()}
            numpy_s = median_seconds(lambda: spec.fn(**f64), args.repeat)
            worst = max(worst, check_s, eval_s)
            print(f"{path.stem:<20} {check_s * 1e3:9.1f} {eval_s * 1e3:9.1f} {numpy_s * 1e3:13.1f} "
                  f"{eval_s / numpy_s:11.2f}")
    print(f"slowest check or eval: {worst * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
