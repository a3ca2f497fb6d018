#!/usr/bin/env python3
"""Register-tiled schedules against their baselines, side by side in ollie's runner.

For every examples/schedules/NAME.schedule (a hand-found schedule for examples/NAME.py),
`ollie emit` writes the kernel under it and under NAME.baseline.schedule beside it (the
default schedule when there is none), and `ollie bench SPEC TILED --vs BASELINE` times
the two interleaved; this prints both medians, the tiled one's GFLOP/s and share of the
roofline, and the ratio tiled / baseline (below 1: the tile is faster). A measurement,
not a test: compare only numbers from one run, and mind the load average it prints.

usage: python3 bench/register_tiles.py [--ollie build/ollie] [--threads 2] [--seconds 3]
           [--only NAME]...
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def emit(ollie, spec, schedule, out_dir):
    cmd = [ollie, "emit", str(spec), "-o", str(out_dir)]
    if schedule is not None:
        cmd += ["--schedule", str(schedule)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return out_dir / (spec.stem + ".cpp")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ollie", default=str(ROOT / "build" / "ollie"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--only", action="append", default=[])
    args = parser.parse_args()
    # NAME.VARIANT.schedule files go with a rewrite chain (bench/flash.py times those).
    schedules = sorted(p for p in (ROOT / "examples" / "schedules").glob("*.schedule")
                       if "." not in p.stem)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores, {args.threads} threads")
    for tiled in schedules:
        name = tiled.stem
        if args.only and name not in args.only:
            continue
        spec = ROOT / "examples" / (name + ".py")
        baseline = tiled.with_name(name + ".baseline.schedule")
        with tempfile.TemporaryDirectory() as tmp:
            a = emit(args.ollie, spec, tiled, Path(tmp) / "tiled")
            b = emit(args.ollie, spec, baseline if baseline.exists() else None, Path(tmp) / "baseline")
            out = subprocess.run([args.ollie, "bench", str(spec), str(a), "--vs", str(b), "--threads",
                                  str(args.threads), "--seconds", str(args.seconds)],
                                 capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{name}: bench failed\n{out.stdout}{out.stderr}", file=sys.stderr)
            continue
        text = out.stdout
        medians = re.findall(r"median\s+([\d.]+) (m?s)", text)
        gflops = re.findall(r"([\d.]+) GFLOP/s, [\d.]+ GB/s, ([\d.]+)% of the roofline", text)
        ratio = re.search(r"ratio .*?: ([\d.]+)", text)
        which = "baseline schedule" if baseline.exists() else "default schedule"
        print(f"{name}: tiled median {medians[0][0]} {medians[0][1]} ({gflops[0][0]} GFLOP/s, "
              f"{gflops[0][1]}% of the roofline); {which} {medians[1][0]} {medians[1][1]}; "
              f"ratio tiled/baseline {ratio.group(1) if ratio else '?'}")


if __name__ == "__main__":
    main()
