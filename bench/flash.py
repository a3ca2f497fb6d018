#!/usr/bin/env python3
"""Flash (blocked softmax) schedules against the default kernels, side by side.

For every examples/schedules/NAME.flash.rewrites with its NAME.flash.schedule, `ollie emit`
writes three kernels of examples/NAME.py: `flash` (the chain and the hand schedule),
`flash-default` (the chain under its default schedule) and `default` (the spec's default,
no rewrites). `ollie bench` times flash and flash-default each against default, interleaved,
--repeat times; this prints the median of the runs' median times and ratios (below 1:
faster than the default) and the load average around them. A measurement, not a test.

usage: python3 bench/flash.py [--ollie build/ollie] [--threads 2] [--seconds 2] [--repeat 3]
           [--only NAME]...
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def emit(ollie, spec, out_dir, rewrites=None, schedule=None):
    cmd = [ollie, "emit", str(spec), "-o", str(out_dir)]
    if rewrites is not None:
        cmd += ["--rewrites", str(rewrites)]
    if schedule is not None:
        cmd += ["--schedule", str(schedule)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return out_dir / (spec.stem + ".cpp")


def bench(ollie, spec, a, b, threads, seconds):
    out = subprocess.run([ollie, "bench", str(spec), str(a), "--vs", str(b), "--threads", str(threads),
                          "--seconds", str(seconds)], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench failed\n{out.stdout}{out.stderr}")
    times = []
    for value, unit in re.findall(r"median\s+([\d.]+) (m?s)", out.stdout)[:2]:
        times.append(float(value) * (1.0 if unit == "ms" else 1000.0))
    ratio = re.search(r"ratio .*?: ([\d.]+)", out.stdout)
    return times[0], times[1], float(ratio.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ollie", default=str(ROOT / "build" / "ollie"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", action="append", default=[])
    args = parser.parse_args()
    for chain in sorted((ROOT / "examples" / "schedules").glob("*.flash.rewrites")):
        name = chain.name[: -len(".flash.rewrites")]
        if args.only and name not in args.only:
            continue
        spec = ROOT / "examples" / (name + ".py")
        schedule = chain.with_name(name + ".flash.schedule")
        with tempfile.TemporaryDirectory() as tmp:
            flash = emit(args.ollie, spec, Path(tmp) / "flash", chain, schedule)
            flash_default = emit(args.ollie, spec, Path(tmp) / "flash-default", chain)
            default = emit(args.ollie, spec, Path(tmp) / "default")
            load_before = os.getloadavg()[0]
            rows = {"flash": [], "flash-default": []}
            for _ in range(args.repeat):
                rows["flash"].append(bench(args.ollie, spec, flash, default, args.threads, args.seconds))
                rows["flash-default"].append(bench(args.ollie, spec, flash_default, default, args.threads,
                                                   args.seconds))
            load_after = os.getloadavg()[0]
        print(f"{name} ({args.threads} threads, {args.repeat} runs, load average {load_before:.1f} -> "
              f"{load_after:.1f} on {os.cpu_count()} cores):")
        for kind, runs in rows.items():
            a = statistics.median(r[0] for r in runs)
            b = statistics.median(r[1] for r in runs)
            ratio = statistics.median(r[2] for r in runs)
            print(f"  {kind:14s} {a:9.3f} ms   default {b:9.3f} ms   ratio {ratio:.3f}  "
                  f"(per run: {', '.join(f'{r[2]:.3f}' for r in runs)})")


if __name__ == "__main__":
    main()
