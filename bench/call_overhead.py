"""What calling a kernel loaded with ollie.load costs beyond the kernel itself (issue 19's
goal: under 5 us). `fast(x)` (the arity, dtype, shape and alignment checks, the output's
allocation, the GIL's release) is timed against a bare ctypes call of the same shared
object's entry point on preallocated buffers, side by side in one process: the two are
interleaved, round after round, and each keeps its best round (min per call, the least
disturbed by other processes). The kernel is a tiny relu_scale (8x16 floats) whose own
time is tens of nanoseconds, so the difference is the overhead. One OpenMP thread.

Run: PYTHONPATH=build/python .venv/bin/python bench/call_overhead.py [--rounds 15]
Exit status 1 when the overhead is 5 us or more."""
import argparse
import ctypes
import os
import sys
import tempfile
import timeit
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
import kernels_for_tests as k  # noqa: E402

# One thread: an OpenMP kernel's parallel region would time the machine's other load (its
# threads wait to be scheduled), not the call. Read when the kernel's .so is loaded.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import ollie  # noqa: E402

GOAL_SECONDS = 5e-6


def loaded_kernel():
    out = Path(tempfile.mkdtemp(prefix="ollie-call-overhead-"))
    emitted = ollie.emit(k.relu_scale, out_dir=out)
    cert = ollie.verify(k.relu_scale, emitted, seed=1, cert=out / "certificate.json")
    assert cert["verdict"] == "pass", cert["message"]
    return ollie.load(out, k.relu_scale)


def ctypes_kernel(fast):
    """The kernel's own symbol (the C ABI: inputs, outputs, dims) in the same shared object,
    through ctypes (which also releases the GIL)."""
    kernel = ctypes.CDLL(fast._native.so_path).ollie_kernel
    kernel.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    kernel.restype = None
    return kernel


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2000, help="interleaved rounds (default 2000)")
    parser.add_argument("--number", type=int, default=200, help="calls per round (default 200: a round fits in one time slice of a busy machine)")
    args = parser.parse_args()

    fast = loaded_kernel()
    x = ollie.empty((8, 16), np.float32)
    x[...] = np.linspace(-1, 1, x.size, dtype=np.float32).reshape(x.shape)
    y = ollie.empty((8, 16), np.float32)
    kernel = ctypes_kernel(fast)
    xp, yp, dims = x.ctypes.data, y.ctypes.data, (ctypes.c_int64 * 2)(8, 16)
    kernel(xp, yp, dims)
    np.testing.assert_allclose(y, k.relu_scale_numpy(x), rtol=1e-6)  # the same kernel
    np.testing.assert_array_equal(fast(x), y)

    calls = {
        "ollie, outputs allocated": lambda: fast(x),
        "ollie, out= given": lambda: fast(x, out=y),
        "ctypes, same .so": lambda: kernel(xp, yp, dims),
    }
    best = {name: float("inf") for name in calls}
    for _ in range(args.rounds):  # interleaved: each round times every call once
        for name, call in calls.items():
            best[name] = min(best[name], timeit.timeit(call, number=args.number) / args.number)

    base = best["ctypes, same .so"]
    print(f"per call, best of {args.rounds} interleaved rounds of {args.number} calls:")
    for name, t in best.items():
        extra = "" if t is base else f"   {(t - base) * 1e6:+.2f} us, x{t / base:.2f} of ctypes"
        print(f"  {name:26s} {t * 1e6:6.2f} us{extra}")
    overhead = best["ollie, outputs allocated"] - base
    verdict = "under" if overhead < GOAL_SECONDS else "NOT under"
    print(f"overhead beyond ctypes: {overhead * 1e6:.2f} us, {verdict} the 5 us goal")
    return 0 if overhead < GOAL_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
