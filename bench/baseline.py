#!/usr/bin/env python3
"""The default-schedule kernel against numpy, per example at its default DIMS: `ollie emit`
writes the kernel, this script compiles it with the default flags of docs/design.md section 3
(timing the compile at -O2 and at -O3), loads the -O3 shared object in this process,
checks its outputs against numpy's on the same seeded inputs, then times numpy and the
kernel side by side (A B A B ...) with the same thread count for both. A measurement, not
a test: the issue 3 goal is the kernel within 2x of numpy on every example except the
BLAS-bound matmuls, and faster than numpy on the fused ones.

usage: .venv/bin/python bench/baseline.py [--ollie build/ollie] [--threads N] [--seconds 2]
           [--only NAME]... [--compiler g++] [--emit-arg=ARG]... [--json FILE]
"""
import argparse
import ctypes
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_ollie = ROOT / "build" / "ollie"
    if not default_ollie.is_file():
        default_ollie = ROOT / "build-bench" / "ollie"
    parser.add_argument("--ollie", default=str(default_ollie),
                        help="the ollie binary (default: build/ollie, else build-bench/ollie)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="threads for numpy's BLAS and the kernel's OpenMP (default: all CPUs)")
    parser.add_argument("--seconds", type=float, default=2.0,
                        help="time budget for the side-by-side rounds of one example")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run only this example (file stem); repeatable")
    parser.add_argument("--compiler", default="g++", help="C++ compiler, e.g. clang++")
    parser.add_argument("--emit-arg", action="append", default=[], metavar="ARG",
                        help="extra argument for `ollie emit` (write --emit-arg=--schedule); repeatable")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    return parser.parse_args()


# The thread count must be in the environment before numpy loads OpenBLAS and before the
# first kernel loads libgomp: both read it once, at load time.
ARGS = parse_args()
for var in THREAD_VARS:
    os.environ[var] = str(ARGS.threads)

import numpy as np  # noqa: E402

sys.path.insert(0, str(ROOT / "tests" / "numpy"))
sys.path.insert(0, str(ROOT / "bench"))
from spec_harness import load_spec  # noqa: E402
from kernel_io import BenchError, blas_threads, disagreement, example_inputs, header_dims, select_examples  # noqa: E402

# Default candidate flags (docs/design.md section 3); the -O3 build is the one timed.
FLAGS = ["-std=c++20", "-O3", "-march=native", "-fopenmp", "-shared", "-fPIC"]
WARMUP_ROUNDS = 3
MIN_ROUNDS = 5
MAX_ROUNDS = 10_000

def ollie(*args):
    proc = subprocess.run([ARGS.ollie, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BenchError(f"`ollie {' '.join(args)}` exited {proc.returncode}: "
                         f"{(proc.stderr or proc.stdout).strip()}")
    return proc.stdout


def compile_seconds(source, opt, so_path):
    flags = [opt if f == "-O3" else f for f in FLAGS]
    cmd = [ARGS.compiler, *flags, str(source), "-o", str(so_path)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise BenchError(f"`{' '.join(cmd)}` failed:\n{proc.stderr.strip()}")
    return seconds


def side_by_side(numpy_call, kernel_call):
    """Per-call nanoseconds of each, alternating numpy, kernel, numpy, kernel, ..."""
    for _ in range(WARMUP_ROUNDS):
        numpy_call()
        kernel_call()
    numpy_ns, kernel_ns = [], []
    deadline = time.perf_counter_ns() + ARGS.seconds * 1e9
    while len(numpy_ns) < MIN_ROUNDS or (len(numpy_ns) < MAX_ROUNDS and time.perf_counter_ns() < deadline):
        t0 = time.perf_counter_ns()
        numpy_call()
        t1 = time.perf_counter_ns()
        kernel_call()
        t2 = time.perf_counter_ns()
        numpy_ns.append(t1 - t0)
        kernel_ns.append(t2 - t1)
    return numpy_ns, kernel_ns


def median_iqr_ms(ns):
    q1, q2, q3 = statistics.quantiles(ns, n=4)
    return q2 / 1e6, (q3 - q1) / 1e6


def bench_example(path, workdir, row):
    """Fills `row` as it goes, so that a FAIL row keeps what was measured before."""
    spec = load_spec(path)
    entry = re.match(r"entry (\w+)\(", ollie("check", str(path)))
    if entry is None or entry.group(1) != spec.entry:
        raise BenchError(f"`ollie check` names entry {entry and entry.group(1)!r}, the spec's "
                         f"annotated function is {spec.entry!r}")

    out_dir = workdir / path.stem
    ollie("emit", str(path), "-o", str(out_dir), *ARGS.emit_arg)
    source = out_dir / f"{spec.entry}.cpp"
    dims = header_dims((out_dir / f"{spec.entry}.ollie.h").read_text())
    row["dims"] = dims
    if dims != {k: spec.default_dims[k] for k in dims if k in spec.default_dims}:
        row["note"] = f"kernel bound to {dims}, not the spec's DIMS {spec.default_dims}"

    row["compile_O2_s"] = compile_seconds(source, "-O2", out_dir / "kernel_O2.so")
    row["compile_O3_s"] = compile_seconds(source, "-O3", out_dir / "kernel_O3.so")
    kernel = ctypes.CDLL(str(out_dir / "kernel_O3.so")).ollie_kernel
    kernel.restype = None

    inputs = example_inputs(spec, dims)
    outputs = [np.empty(spec.shape(t, dims), dtype=t.np_dtype) for t in spec.returns]
    for out in outputs:               # poisoned: an element the kernel never writes cannot agree
        out.fill(np.nan if out.dtype.kind == "f" else -1)
    dims_arr = np.array(list(dims.values()), dtype=np.int64)
    pointers = [a.ctypes.data for a in (*inputs.values(), *outputs, dims_arr)]
    kernel.argtypes = [ctypes.c_void_p] * len(pointers)

    def kernel_call():
        kernel(*pointers)

    def numpy_call():
        return spec.fn(**inputs)

    kernel_call()
    want = numpy_call()
    why = disagreement(spec, outputs, want if isinstance(want, tuple) else (want,))
    if why is not None:
        raise BenchError(f"kernel disagrees with numpy: {why}")
    row["check"] = "OK"

    numpy_ns, kernel_ns = side_by_side(numpy_call, kernel_call)
    row["rounds"] = len(numpy_ns)
    row["numpy_ms"], row["numpy_iqr_ms"] = median_iqr_ms(numpy_ns)
    row["ollie_ms"], row["ollie_iqr_ms"] = median_iqr_ms(kernel_ns)
    row["ollie_over_numpy"] = row["ollie_ms"] / row["numpy_ms"]
    row["numpy_over_ollie"] = row["numpy_ms"] / row["ollie_ms"]


# The table: (heading, row key, width, format); "-" where a FAIL row has no value.
COLUMNS = [("numpy ms", "numpy_ms", 9, ".3f"), ("iqr", "numpy_iqr_ms", 7, ".3f"),
           ("ollie ms", "ollie_ms", 9, ".3f"), ("iqr", "ollie_iqr_ms", 7, ".3f"),
           ("ollie/np", "ollie_over_numpy", 8, ".2f"), ("np/ollie", "numpy_over_ollie", 8, ".2f"),
           ("-O2 s", "compile_O2_s", 6, ".2f"), ("-O3 s", "compile_O3_s", 6, ".2f"),
           ("rounds", "rounds", 6, "d")]


def table_line(example, dims, cells, check):
    return f"{example:<17} {dims:<40} {' '.join(cells)}  {check}"


def main():
    paths = select_examples(ROOT, ARGS.only, ARGS.ollie)

    # Spin barriers of both thread pools stall whenever other processes hold the CPUs: on
    # a busy machine, times with several threads say more about the load than the code.
    print(f"threads: {ARGS.threads} (kernel OpenMP via OMP_NUM_THREADS; numpy OpenBLAS reports "
          f"{blas_threads()}); machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    print(f"kernel: `{' '.join(['ollie emit SPEC', *ARGS.emit_arg])}`, built with {ARGS.compiler} "
          f"{' '.join(FLAGS)} (compile also timed at -O2); {ARGS.seconds:g} s of A B rounds per example")
    print("times are medians over the rounds, with their interquartile range\n")
    head = table_line("example", "dims", [f"{h:>{w}}" for h, _, w, _ in COLUMNS], "check")
    print(head)
    print("-" * len(head))
    rows, failures = [], []
    with tempfile.TemporaryDirectory(prefix="ollie-bench-") as tmp:
        for path in paths:
            row = {"example": path.stem}
            try:
                bench_example(path, Path(tmp), row)
            except BenchError as e:
                row.update(check="FAIL", error=str(e))
                failures.append(row)
            rows.append(row)
            dims = ",".join(f"{k}={v}" for k, v in row.get("dims", {}).items())
            cells = [f"{row[key]:{w}{spec}}" if key in row else f"{'-':>{w}}" for _, key, w, spec in COLUMNS]
            print(table_line(row["example"], dims, cells, row["check"]), flush=True)
    for row in rows:
        if "note" in row:
            print(f"note {row['example']}: {row['note']}")
    for row in failures:
        print(f"FAIL {row['example']}: {row['error']}")
    if ARGS.json:
        meta = {"threads": ARGS.threads, "compiler": ARGS.compiler, "flags": FLAGS,
                "emit_args": ARGS.emit_arg, "seconds": ARGS.seconds}
        Path(ARGS.json).write_text(json.dumps({**meta, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
