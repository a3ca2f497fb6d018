#!/usr/bin/env python3
"""ollie's kernel against its peers, numpy and jax.jit (XLA on CPU), per example at its
default DIMS, on the same seeded float32 inputs, with one thread count for all three, and
each time also as GFLOP/s and as a fraction of this machine's roofline.

For each example: `ollie check --json` gives the FLOPs and compulsory bytes, `ollie
calibrate --json --threads N` the peaks (measured once per machine, cached). The jax version
of the spec is the spec's own entry function with `jnp` in place of `np` (a hand-written
one only where that fails, see JAX_BY_HAND); jax's and ollie's outputs are checked against
numpy's (loosely) before anything is timed. Then the three are timed side by side in
rounds, the order rotating each round (numpy jax ollie, jax ollie numpy, ...), for
--seconds per example; the table shows medians of the per-call times. By default each
method runs a block of calls per round (--block-ms) followed by a quiet gap (--gap-ms):
all three libraries keep thread pools in this one process, and a pool that spin-waits
after its call (OpenBLAS, libgomp) takes the CPUs the next method needs; one call per
method and round (--interleave calls) is measurably unfair at threads = CPUs.

ollie's time comes from one of two places (--ollie-timing):
  ctypes  `ollie emit` writes the default-schedule kernel, it is compiled with the default
          flags of docs/design.md section 3 and called in this process through ctypes, in the
          same rounds as numpy and jax (as bench/baseline.py does);
  bench   `ollie bench SPEC KERNEL --json` times it in ollie's sandboxed runner, in blocks
          between blocks of numpy/jax rounds; its median_seconds is used.

Thread control: OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and MKL_NUM_THREADS are set before
numpy loads; XLA has no supported thread-count setting, but sizes its intra-op pool from
the CPUs the process may run on, so with --threads below the CPU count the whole process
is pinned to that many CPUs (sched_setaffinity, as `taskset` would), and with one thread
XLA_FLAGS also gets --xla_cpu_multi_thread_eigen=false. The CPU time each library used per
second of its calls is reported ("busy threads") so the effect can be seen.

Caches: hot by default (each call finds what the previous one left in cache). --cold
writes a buffer of twice the last-level cache (at least 64 MiB; one byte per cache line,
as ollie's runner does) before every timed call of every method alike, outside the
timed interval, so each call reads its inputs from DRAM, as a decode step does in a
model; `ollie bench` gets --cold too. The roofline's memory ceiling follows: DRAM's triad
bandwidth when cold (or when the working set exceeds the last-level cache), the
last-level cache's when hot (docs/measurement.md).

usage: .venv/bin/python bench/peers.py [--ollie build/ollie] [--threads N] [--seconds 2]
           [--only NAME]... [--dims NAME=V,...] [--cold] [--interleave blocks|calls]
           [--ollie-timing ctypes|bench] [--kernels DIR] [--json FILE] [--markdown FILE]
"""
import argparse
import ctypes
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
FLAGS = ["-std=c++20", "-O3", "-march=native", "-fopenmp", "-shared", "-fPIC"]
WARMUP_ROUNDS = 3
MIN_ROUNDS = 5
MIN_BLOCK_ROUNDS = 2
MIN_BLOCK_CALLS = 2
MAX_ROUNDS = 10_000
BENCH_BLOCKS = 3        # --ollie-timing bench: alternations of peer blocks and `ollie bench` runs
METHODS = ("numpy", "jax", "ollie")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_ollie = ROOT / "build" / "ollie"
    parser.add_argument("--ollie", default=str(default_ollie), help="the ollie binary (default: build/ollie)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="threads for numpy's BLAS, XLA and the kernel's OpenMP (default: all CPUs)")
    parser.add_argument("--seconds", type=float, default=2.0, help="time budget of the rounds of one example")
    parser.add_argument("--only", action="append", metavar="NAME", help="run only this example; repeatable")
    parser.add_argument("--dims", metavar="NAME=V,...",
                        help="override dim sizes of the examples (as ollie's --dims; every selected example "
                             "must have these dims, so use it with --only)")
    parser.add_argument("--cold", action="store_true",
                        help="flush the caches before every timed call of every method (default: hot)")
    parser.add_argument("--compiler", default="g++", help="C++ compiler for --ollie-timing ctypes")
    parser.add_argument("--ollie-timing", choices=("ctypes", "bench"), default="ctypes",
                        help="where ollie's time comes from (see above; default ctypes)")
    parser.add_argument("--interleave", choices=("blocks", "calls"), default="blocks",
                        help="blocks (default): per round, each method runs calls for --block-ms, then "
                             "sleeps --gap-ms so its thread pool stops spinning; calls: one call per "
                             "method and round (pools spinning after a call slow the next method)")
    parser.add_argument("--block-ms", type=float, default=150.0, help="length of one block (default 150)")
    parser.add_argument("--gap-ms", type=float, default=100.0,
                        help="quiet gap after each block (default 100: OpenBLAS spins ~2^28 cycles, "
                             "libgomp 300000 pauses, before sleeping)")
    parser.add_argument("--no-x64", action="store_true",
                        help="leave jax in its default 32-bit mode (default: jax_enable_x64, so the "
                             "specs' float64 pieces, e.g. rope's angle tables, stay float64 as in numpy)")
    parser.add_argument("--kernels", metavar="DIR",
                        help="time the kernel in DIR/<example>/<entry>.cpp (with its <entry>.ollie.h), e.g. "
                             "what `ollie optimize -o DIR/<example>` wrote, instead of the default-schedule one")
    parser.add_argument("--json", metavar="FILE", help="write the table and its context as JSON")
    parser.add_argument("--markdown", metavar="FILE", help="write the table and its context as Markdown")
    return parser.parse_args()


# Thread settings must be in place before numpy loads OpenBLAS, jax creates its CPU client
# and the first kernel loads libgomp: each reads them once.
ARGS = parse_args()
if ARGS.threads < 1:
    sys.exit("--threads must be at least 1")
for var in THREAD_VARS:
    os.environ[var] = str(ARGS.threads)
ALLOWED_CPUS = sorted(os.sched_getaffinity(0))
PINNED = None
if ARGS.threads < len(ALLOWED_CPUS):
    PINNED = ALLOWED_CPUS[:ARGS.threads]
    os.sched_setaffinity(0, PINNED)
if ARGS.threads == 1:
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jaxlib  # noqa: E402

if not ARGS.no_x64:
    jax.config.update("jax_enable_x64", True)

sys.path.insert(0, str(ROOT / "tests" / "numpy"))
sys.path.insert(0, str(ROOT / "bench"))
from spec_harness import load_spec  # noqa: E402
from kernel_io import BenchError, blas_threads, disagreement, example_inputs, header_dims, select_examples  # noqa: E402

# Hand-written jax versions for specs whose numpy code does not run under jnp. Empty while
# every example runs unchanged; an entry is fn(**inputs) -> jax array(s).
JAX_BY_HAND = {}


def ollie(*args, timeout=600, unpinned=False):
    """Runs the ollie binary; `unpinned`: on every CPU this script was allowed, not only the
    ones it pinned itself to (calibration measures the whole machine)."""
    restore = (lambda: os.sched_setaffinity(0, ALLOWED_CPUS)) if unpinned and PINNED else None
    proc = subprocess.run([ARGS.ollie, *args], capture_output=True, text=True, timeout=timeout,
                          preexec_fn=restore)
    if proc.returncode != 0:
        raise BenchError(f"`ollie {' '.join(args)}` exited {proc.returncode}: "
                         f"{(proc.stderr or proc.stdout).strip()}")
    return proc.stdout


# ---------------------------------------------------------------------------- the peers

def jax_entry(spec):
    """The spec's entry with `np` bound to jax.numpy, helpers included, under jax.jit."""
    if spec.name in JAX_BY_HAND:
        return jax.jit(JAX_BY_HAND[spec.name]), "by hand"
    ns = dict(spec.fn.__globals__)
    ns["np"] = jnp
    for name, value in list(ns.items()):
        if isinstance(value, types.FunctionType) and value.__code__.co_filename == str(spec.path):
            ns[name] = types.FunctionType(value.__code__, ns, value.__name__, value.__defaults__, value.__closure__)
    return jax.jit(ns[spec.fn.__name__]), "spec with np = jax.numpy"


def as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


# ---------------------------------------------------------------------------- ollie's kernel

def kernel_files(spec, path, workdir):
    """(source, header) of the kernel to time: from --kernels DIR/<example>/, or the
    default-schedule kernel that `ollie emit` writes now."""
    if ARGS.kernels:
        out_dir = Path(ARGS.kernels) / path.stem
    else:
        out_dir = workdir / path.stem
        ollie("emit", str(path), "-o", str(out_dir), *dims_flag())
    source, header = out_dir / f"{spec.entry}.cpp", out_dir / f"{spec.entry}.ollie.h"
    for f in (source, header):
        if not f.is_file():
            raise BenchError(f"no kernel file {f} (--kernels DIR wants DIR/<example>/<entry>.cpp and .ollie.h, "
                             f"as `ollie optimize -o DIR/<example>` writes them)")
    return source, header


class CtypesKernel:
    """The kernel, compiled here and called in this process."""
    how = "ctypes"

    def __init__(self, spec, path, workdir, inputs):
        source, header = kernel_files(spec, path, workdir)
        out_dir = workdir / path.stem
        out_dir.mkdir(parents=True, exist_ok=True)
        self.dims = header_dims(header.read_text())
        so = out_dir / "kernel.so"
        cmd = [ARGS.compiler, *FLAGS, str(source), "-o", str(so)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BenchError(f"`{' '.join(cmd)}` failed:\n{proc.stderr.strip()}")
        fn = ctypes.CDLL(str(so)).ollie_kernel
        fn.restype = None
        self.outputs = [np.empty(spec.shape(t, self.dims), dtype=t.np_dtype) for t in spec.returns]
        for out in self.outputs:          # poisoned: an element the kernel never writes cannot agree
            out.fill(np.nan if out.dtype.kind == "f" else -1)
        self._dims_arr = np.array(list(self.dims.values()), dtype=np.int64)
        self._inputs = inputs             # keeps the arrays alive
        pointers = [a.ctypes.data for a in (*inputs.values(), *self.outputs, self._dims_arr)]
        fn.argtypes = [ctypes.c_void_p] * len(pointers)
        self.call = lambda: fn(*pointers)

    def run_once(self):
        self.call()
        return self.outputs


class BenchVerbKernel:
    """The kernel timed by `ollie bench` in the runner, between peer blocks."""
    how = "ollie bench"

    def __init__(self, spec, path, workdir, inputs):
        self.source, header = kernel_files(spec, path, workdir)
        self.path = path
        self.dims = header_dims(header.read_text())
        self.call = None                  # not callable here
        self.blocks = []

    def run_once(self):
        return None                       # `ollie bench` checks its own outputs against the reference

    def time_block(self, seconds):
        out = json.loads(ollie("bench", str(self.path), str(self.source), "--json", *dims_flag(),
                               *(["--cold"] if ARGS.cold else []),
                               "--threads", str(ARGS.threads), "--seconds", f"{seconds:g}"))
        if out.get("status") != "ok":
            raise BenchError(f"`ollie bench` says {out.get('status')}: {out.get('message', '')}")
        k = out["kernels"][0]
        self.blocks.append({key: k[key] for key in ("median_seconds", "min_seconds", "mad_seconds", "n")})


# ---------------------------------------------------------------------------- timing

def cpu_clock():
    """(seconds of wall clock, CPU seconds used by the whole machine, CPU seconds used by this
    process) now; differences between two readings say how much CPU other processes took."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)       # idle + iowait
    machine = (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")  # user..steal, without guest
    t = os.times()
    return time.perf_counter(), machine, t.user + t.system


def others_cpus(before, after):
    """CPUs' worth of work other processes did between two cpu_clock() readings."""
    wall = after[0] - before[0]
    return max(0.0, ((after[1] - before[1]) - (after[2] - before[2])) / wall) if wall > 0 else 0.0


# --cold: the buffer written before every timed call, one byte per 64-byte line (set in main).
FLUSH = None


def flush_caches():
    """Writes every cache line of FLUSH (twice the last-level cache): what the next call
    reads comes from DRAM."""
    FLUSH[:, 0] += 1


def timed(call):
    """(wall nanoseconds, process CPU seconds) of one call; with --cold, the caches are
    flushed first, outside the timed interval."""
    if FLUSH is not None:
        flush_caches()
    c0 = time.process_time()
    t0 = time.perf_counter_ns()
    call()
    t1 = time.perf_counter_ns()
    return t1 - t0, time.process_time() - c0


def rounds(calls, seconds):
    """Per-call nanoseconds and CPU seconds of each named call, in rounds whose order
    rotates: one call per method and round (--interleave calls), or one block of calls per
    method and round, each block's first call dropped and a quiet gap after it (blocks)."""
    names = list(calls)
    for _ in range(WARMUP_ROUNDS):
        for n in names:
            calls[n]()
    ns = {n: [] for n in names}
    cpu = {n: 0.0 for n in names}
    deadline = time.perf_counter_ns() + seconds * 1e9
    r = 0
    min_rounds = MIN_ROUNDS if ARGS.interleave == "calls" else MIN_BLOCK_ROUNDS
    while r < min_rounds or (r < MAX_ROUNDS and time.perf_counter_ns() < deadline):
        k = r % len(names)
        for n in names[k:] + names[:k]:
            if ARGS.interleave == "calls":
                t, c = timed(calls[n])
                ns[n].append(t)
                cpu[n] += c
                continue
            timed(calls[n])           # wakes this library's pool; not counted
            block_end = time.perf_counter_ns() + ARGS.block_ms * 1e6
            kept = 0
            while kept < MIN_BLOCK_CALLS or time.perf_counter_ns() < block_end:
                t, c = timed(calls[n])
                ns[n].append(t)
                cpu[n] += c
                kept += 1
            time.sleep(ARGS.gap_ms / 1e3)  # its threads stop spinning before the next library runs
        r += 1
    return ns, cpu


def summary(ns, cpu_seconds):
    q1, q2, q3 = statistics.quantiles(ns, n=4)
    return {"median_seconds": q2 / 1e9, "iqr_seconds": (q3 - q1) / 1e9, "rounds": len(ns),
            "busy_threads": cpu_seconds / (sum(ns) / 1e9)}


def dims_flag():
    return ["--dims", ARGS.dims] if ARGS.dims else []


def memory_ceiling(nbytes, peaks, calibration):
    """(bytes/s, name) of the roofline's memory ceiling: DRAM's triad when cold or when the
    working set exceeds the last-level cache, the last-level cache's triad when hot."""
    llc, llc_bw = calibration.get("llc_bytes", 0), peaks.get("llc_bytes_per_s", 0)
    if ARGS.cold:
        return peaks["bytes_per_s"], "DRAM (cold)"
    if llc and nbytes > llc:
        return peaks["bytes_per_s"], "DRAM (hot, larger than the LLC)"
    if not llc_bw:
        return peaks["bytes_per_s"], "DRAM (hot; no LLC bandwidth cached: ollie calibrate --recalibrate)"
    return llc_bw, "LLC (hot)"


def bench_example(path, workdir, peaks, row, calibration):
    spec = load_spec(path)
    check = json.loads(ollie("check", str(path), "--json", *dims_flag()))
    if check["entry"] != spec.entry:
        raise BenchError(f"`ollie check` names entry {check['entry']!r}, the spec's is {spec.entry!r}")
    dims = {name: check["dims"][name] for name in check["dims_order"]}
    row["dims"] = dims
    flops, nbytes = check["flops"], check["compulsory_bytes"]
    # Products of two bf16 values at the bf16 dot-product peak, as ollie's roofline counts
    # them (src/measure/roofline.cpp); the rest at the float32 FMA peak.
    bf16 = check.get("bf16_product_flops", 0)
    bf16_peak = peaks.get("bf16_dot_flops_per_s", 0)
    if bf16_peak > peaks["flops_per_s"] and bf16 > 0:
        compute_s = (flops - bf16) / peaks["flops_per_s"] + bf16 / bf16_peak
    else:
        compute_s = flops / peaks["flops_per_s"]
    bandwidth, row["memory_ceiling"] = memory_ceiling(nbytes, peaks, calibration)
    memory_s = nbytes / bandwidth
    row.update(flops=flops, bytes=nbytes, intensity=flops / nbytes if nbytes else 0.0,
               bound_seconds=max(compute_s, memory_s), bound="memory" if memory_s > compute_s else "compute")

    inputs = example_inputs(spec, dims)
    want = as_tuple(spec.fn(**inputs))

    jfn, row["jax_source"] = jax_entry(spec)
    jinputs = {k: jax.device_put(v) for k, v in inputs.items()}
    try:
        got = as_tuple(jax.block_until_ready(jfn(**jinputs)))
    except Exception as e:  # noqa: BLE001 - any failure to trace is reported, not fatal
        raise BenchError(f"jax could not run the spec with np = jax.numpy ({type(e).__name__}: {e}); "
                         f"add a hand-written version to JAX_BY_HAND") from None
    why = disagreement(spec, [np.asarray(g) for g in got], want, "jax")
    if why is not None:
        raise BenchError(f"jax disagrees with numpy: {why}")

    kernel = (CtypesKernel if ARGS.ollie_timing == "ctypes" else BenchVerbKernel)(spec, path, workdir, inputs)
    if kernel.dims != dims:
        raise BenchError(f"the kernel is bound to {kernel.dims}, `ollie check` to {dims}")
    out = kernel.run_once()
    if out is not None:
        why = disagreement(spec, out, want, "ollie")
        if why is not None:
            raise BenchError(f"ollie's kernel disagrees with numpy: {why}")
    row["check"] = "OK"

    calls = {"numpy": lambda: spec.fn(**inputs), "jax": lambda: jax.block_until_ready(jfn(**jinputs))}
    clock_start = cpu_clock()
    if kernel.call is not None:
        calls["ollie"] = kernel.call
        ns, cpu = rounds(calls, ARGS.seconds)
    else:
        ns = {n: [] for n in calls}
        cpu = {n: 0.0 for n in calls}
        for _ in range(BENCH_BLOCKS):
            block_ns, block_cpu = rounds(calls, ARGS.seconds / (2 * BENCH_BLOCKS))
            for n in calls:
                ns[n] += block_ns[n]
                cpu[n] += block_cpu[n]
            kernel.time_block(ARGS.seconds / (2 * BENCH_BLOCKS))
    row["others_cpus"] = others_cpus(clock_start, cpu_clock())
    for n in calls:
        row[n] = summary(ns[n], cpu[n])
    if kernel.call is None:
        medians = [b["median_seconds"] for b in kernel.blocks]
        row["ollie"] = {"median_seconds": statistics.median(medians), "blocks": kernel.blocks}
    for n in METHODS:
        t = row[n]["median_seconds"]
        row[n]["gflops_per_s"] = flops / t / 1e9
        row[n]["gbytes_per_s"] = nbytes / t / 1e9
        row[n]["roofline_fraction"] = row["bound_seconds"] / t
    best = min(("numpy", "jax"), key=lambda n: row[n]["median_seconds"])
    row["best_peer"] = best
    row["ollie_over_best_peer"] = row["ollie"]["median_seconds"] / row[best]["median_seconds"]


# ---------------------------------------------------------------------------- output

def cells(row):
    """The table's cells for a row ('-' where a FAIL row has no value)."""
    def get(method, key, fmt):
        return format(row[method][key], fmt) if method in row and key in row[method] else "-"
    dims = ",".join(f"{k}={v}" for k, v in row.get("dims", {}).items())
    out = [row["example"], dims]
    out += [f"{row[m]['median_seconds'] * 1e3:.3f}" if m in row else "-" for m in METHODS]
    out += [get(m, "gflops_per_s", ".1f") for m in METHODS]
    out += [get(m, "roofline_fraction", ".2f") for m in METHODS]
    out += [row.get("bound", "-"), f"{row['others_cpus']:.2f}" if "others_cpus" in row else "-",
            f"{row['ollie_over_best_peer']:.2f} ({row['best_peer']})" if "ollie_over_best_peer" in row else "-",
            row.get("check", "-")]
    return out


HEADINGS = ["example", "dims", "numpy ms", "jax ms", "ollie ms", "numpy GF/s", "jax GF/s", "ollie GF/s",
            "numpy roof", "jax roof", "ollie roof", "bound", "others", "ollie/best peer", "check"]


def text_table(rows):
    table = [HEADINGS] + [cells(r) for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADINGS))]
    lines = []
    for j, line in enumerate(table):
        lines.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))))
        if j == 0:
            lines.append("-" * len(lines[0]))
    return "\n".join(lines)


def markdown(meta, rows):
    out = ["# ollie vs numpy vs jax.jit", ""]
    out += [f"- {line}" for line in meta["context"]]
    out += ["", "| " + " | ".join(HEADINGS) + " |", "|" + "|".join("---" if i < 2 else "---:" for i in range(len(HEADINGS))) + "|"]
    for r in rows:
        out.append("| " + " | ".join(c.replace("|", "/") for c in cells(r)) + " |")
    fails = [r for r in rows if r.get("check") == "FAIL"]
    if fails:
        out += [""] + [f"- FAIL {r['example']}: {r['error']}" for r in fails]
    out += ["", "Times are medians over the rounds; GF/s = the IR's FLOPs / time; roof = the roofline's "
            "bound time / time (1.00 = at the roofline); bound = which roof binds at these dims; "
            "others = CPUs' worth of work other processes did while the row was timed (on a shared "
            "machine, anything but ~0 makes that row's multi-threaded times unreliable); "
            "ollie/best peer < 1 means ollie is faster."]
    return "\n".join(out) + "\n"


def main():
    paths = select_examples(ROOT, ARGS.only, ARGS.ollie)

    print("peaks from `ollie calibrate` (measured now if this machine has no cached figures: "
          "10-20 s)", file=sys.stderr, flush=True)
    calibration = json.loads(ollie("calibrate", "--json", "--threads", str(ARGS.threads), unpinned=True))
    peaks = calibration["at_threads"]
    load_start = os.getloadavg()[0]
    global FLUSH
    flush_bytes = max(2 * calibration.get("llc_bytes", 0), 64 << 20)
    if ARGS.cold:
        FLUSH = np.ones((flush_bytes // 64, 64), dtype=np.uint8)
    busy = "" if load_start < 0.5 else " (busy: other processes share the CPUs, times are noisier and slower)"
    context = [
        f"machine: {calibration['cpu_model']}, {calibration['cores']} cores, {calibration['isa']}",
        f"roofline at {peaks['threads']} threads: {peaks['flops_per_s'] / 1e9:.1f} GFLOP/s (FMA loop), "
        f"{peaks['bytes_per_s'] / 1e9:.1f} GB/s (triad), "
        + (f"{peaks['llc_bytes_per_s'] / 1e9:.1f} GB/s (last-level-cache triad), " if peaks.get("llc_bytes_per_s") else "")
        + f"from `ollie calibrate` of {calibration['date']} ({calibration['cache']['path']})",
        ("caches: cold, " + f"{flush_bytes >> 20} MiB written before every timed call of every method "
         "(outside the timed interval); the roofline's memory ceiling is DRAM's" if ARGS.cold else
         "caches: hot (each call finds what the previous one left); the roofline's memory ceiling is "
         "the last-level cache's where the working set fits it")
        + (f"; dims {ARGS.dims}" if ARGS.dims else ""),
        f"threads: {ARGS.threads} (OMP/OPENBLAS/MKL_NUM_THREADS; numpy's OpenBLAS reports {blas_threads()}; "
        f"XLA: " + (f"process pinned to CPUs {PINNED}" if PINNED else "all allowed CPUs, no pinning needed")
        + (", --xla_cpu_multi_thread_eigen=false" if ARGS.threads == 1 else "") + ")",
        f"versions: python {platform.python_version()}, numpy {np.__version__}, jax {jax.__version__}, "
        f"jaxlib {jaxlib.__version__}; jax_enable_x64 "
        f"{not ARGS.no_x64}",
        f"ollie: " + (f"the kernels in {ARGS.kernels}" if ARGS.kernels else "default-schedule kernel")
        + f", timed via {ARGS.ollie_timing}"
        + (f" ({ARGS.compiler} {' '.join(FLAGS)})" if ARGS.ollie_timing == "ctypes" else ""),
        f"{ARGS.seconds:g} s of rounds per example, order rotating, "
        + (f"blocks of {ARGS.block_ms:g} ms per method (first call dropped) and {ARGS.gap_ms:g} ms gaps"
           if ARGS.interleave == "blocks" else "one call per method and round")
        + f"; load average {load_start:.2f} at the start{busy}",
    ]
    print("\n".join(context) + "\n", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="ollie-peers-") as tmp:
        for path in paths:
            row = {"example": path.stem}
            try:
                bench_example(path, Path(tmp), peaks, row, calibration)
            except BenchError as e:
                row.update(check="FAIL", error=str(e))
            rows.append(row)
            print(f"{path.stem}: {row['check']}", file=sys.stderr, flush=True)
    load_end = os.getloadavg()[0]
    context.append(f"load average {load_end:.2f} at the end")
    print(text_table(rows))
    for r in rows:
        if r["check"] == "FAIL":
            print(f"FAIL {r['example']}: {r['error']}")
    print("busy threads (CPU seconds per second of calls): " + "; ".join(
        f"{r['example']} " + "/".join(f"{r[m]['busy_threads']:.1f}" for m in METHODS if "busy_threads" in r.get(m, {}))
        for r in rows if r["check"] == "OK") + "  (numpy/jax/ollie)")
    print(context[-1])
    print("others = CPUs' worth of work other processes did while the row was timed")
    meta = {"schema": "ollie-peers/1", "threads": ARGS.threads, "seconds": ARGS.seconds,
            "cold": ARGS.cold, "flush_bytes": flush_bytes if ARGS.cold else 0, "dims": ARGS.dims,
            "interleave": ARGS.interleave, "block_ms": ARGS.block_ms, "gap_ms": ARGS.gap_ms,
            "ollie_timing": ARGS.ollie_timing, "flags": FLAGS, "compiler": ARGS.compiler,
            "pinned_cpus": PINNED, "kernels": ARGS.kernels, "xla_flags": os.environ.get("XLA_FLAGS", ""), "jax_enable_x64": not ARGS.no_x64,
            "numpy": np.__version__, "jax": jax.__version__, "jaxlib": jaxlib.__version__, "load_average_start": load_start,
            "load_average_end": load_end, "calibration": calibration, "context": context}
    if ARGS.json:
        Path(ARGS.json).write_text(json.dumps({**meta, "rows": rows}, indent=2) + "\n")
    if ARGS.markdown:
        Path(ARGS.markdown).write_text(markdown(meta, rows))


if __name__ == "__main__":
    main()
