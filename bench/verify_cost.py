#!/usr/bin/env python3
"""What verification costs, per example at its default DIMS: `ollie emit` writes the
default-schedule kernel, then `ollie verify` runs on it at `quick` and at `full`. Each
level is run twice with a fresh cache directory the first time: the first run includes
compiling the kernel, the second finds it in the build cache, so its duration is the cost
of verification beyond compile time (issue 4's goal: quick under 300 ms beyond compile
time for every example on this machine).

With --blue N, each blue-team kernel (tests/blueteam/, all correct) is verified N times in
a row with fresh seeds at `quick`, and once at `full`; every run must pass (issue 4: no
flaky false rejections). A measurement, not a test.

usage: .venv/bin/python bench/verify_cost.py [--ollie build/ollie] [--only NAME]...
           [--levels quick,full] [--blue N] [--threads N] [--json FILE]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ollie", default=str(ROOT / "build" / "ollie"), help="the ollie binary")
    parser.add_argument("--only", action="append", metavar="NAME", help="only this example; repeatable")
    parser.add_argument("--levels", default="quick,full", help="comma-separated levels to measure")
    parser.add_argument("--blue", type=int, default=0, metavar="N",
                        help="also verify every blue-team kernel N times at quick (and once at full)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="OMP threads for the kernels")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    return parser.parse_args()


def run(cmd, env=None):
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return proc, time.perf_counter() - t0


def verify(args, spec, kernel, level, cache):
    """(exit code, certificate or None, wall seconds) of one `ollie verify --json`."""
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    proc, wall = run([args.ollie, "verify", str(spec), str(kernel), "--level", level, "--json",
                      "--threads", str(args.threads)], env)
    try:
        cert = json.loads(proc.stdout)
    except json.JSONDecodeError:
        cert = None
    return proc.returncode, cert, wall, proc.stderr.strip()


def example_costs(args, levels):
    rows = []
    examples = sorted(p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))
    for spec in examples:
        if args.only and spec.stem not in args.only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            proc, _ = run([args.ollie, "emit", str(spec), "-o", tmp])
            if proc.returncode != 0:
                rows.append({"example": spec.stem, "error": proc.stderr.strip()})
                continue
            kernel = next(Path(tmp).glob("*.cpp"))
            row = {"example": spec.stem}
            for level in levels:
                cache = os.path.join(tmp, "cache-" + level)
                code1, cert1, wall1, err1 = verify(args, spec, kernel, level, cache)
                code2, cert2, wall2, err2 = verify(args, spec, kernel, level, cache)
                row[level] = {
                    "verdict": (cert2 or {}).get("verdict", "error: " + (err2 or err1)[:200]),
                    "cold_wall_seconds": wall1, "warm_wall_seconds": wall2,
                    "cold_duration_seconds": (cert1 or {}).get("duration_seconds"),
                    "warm_duration_seconds": (cert2 or {}).get("duration_seconds"),
                    "suites": len((cert2 or {}).get("suites", [])),
                }
            rows.append(row)
            print(format_row(row, levels), flush=True)
    return rows


def format_row(row, levels):
    if "error" in row:
        return f"{row['example']:<18} FAIL {row['error'][:100]}"
    cells = []
    for level in levels:
        r = row[level]
        cold, warm = r["cold_duration_seconds"], r["warm_duration_seconds"]
        cells.append(f"{level}: {r['verdict']:<6} {r['suites']:>2} suites, with compile "
                     f"{fmt(cold)}, cached {fmt(warm)} (wall {r['warm_wall_seconds']:.2f} s)")
    return f"{row['example']:<18} " + " | ".join(cells)


def fmt(seconds):
    return "   ?   " if seconds is None else f"{seconds * 1000:6.0f} ms"


def blue_runs(args, n):
    results = []
    blue = ROOT / "tests" / "blueteam"
    for kernel in sorted(blue.glob("*.cpp")):
        spec = ROOT / "examples" / (kernel.name.split("__")[0] + ".py")
        with tempfile.TemporaryDirectory() as cache:
            verdicts, worst = [], 0.0
            for level in ["quick"] * n + ["full"]:
                code, cert, _, err = verify(args, spec, kernel, level, cache)
                verdict = (cert or {}).get("verdict", "error")
                verdicts.append(verdict)
                worst = max(worst, (cert or {}).get("worst_fraction_of_bound") or 0.0)
                if code != 0:
                    print(f"  {kernel.stem} {level}: {verdict}: {(cert or {}).get('message', err)[:300]}")
            passes = sum(v == "pass" for v in verdicts)
            results.append({"kernel": kernel.stem, "runs": len(verdicts), "passes": passes, "worst": worst})
            print(f"{kernel.stem:<48} {passes}/{len(verdicts)} pass (quick x{n}, full x1), "
                  f"worst error {worst:.3f} of its bound", flush=True)
    return results


def main():
    args = parse_args()
    levels = [level for level in args.levels.split(",") if level]
    print(f"ollie verify cost, {args.threads} threads, load average {os.getloadavg()[0]:.2f}")
    out = {"examples": example_costs(args, levels)}
    if args.blue:
        out["blue"] = blue_runs(args, args.blue)
        if any(r["passes"] != r["runs"] for r in out["blue"]):
            print("some blue-team run was rejected")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
