"""What a call of a kernel loaded with ollie.load costs beyond the kernel: the time of
`fast(x)` (dtype, shape and alignment checks, output allocation, GIL release) against a
bare ctypes call of the same shared object's kernel on preallocated buffers, for a tiny
relu_scale (8x16 floats, so the kernel itself is negligible). Min over repeats, one
thread. Run: PYTHONPATH=build/python .venv/bin/python bench/python_call_overhead.py"""
import ctypes
import sys
import tempfile
import timeit
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
import kernels_for_tests as k  # noqa: E402

import ollie  # noqa: E402


def best_per_call(fn, number=20000, repeat=7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main():
    out = Path(tempfile.mkdtemp())
    emitted = ollie.emit(k.relu_scale, out_dir=out)
    ollie.verify(k.relu_scale, emitted, seed=1, cert=out / "certificate.json")
    fast = ollie.load(out, k.relu_scale)
    x = ollie.empty((8, 16), np.float32)
    x[...] = 1
    y = ollie.empty((8, 16), np.float32)
    lib = ctypes.CDLL(fast._native.so_path)
    kernel = lib.ollie_kernel
    kernel.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    dims = (ctypes.c_int64 * 2)(8, 16)
    xp, yp = x.ctypes.data, y.ctypes.data
    t_load = best_per_call(lambda: fast(x))
    t_out = best_per_call(lambda: fast(x, out=y))
    t_ctypes = best_per_call(lambda: kernel(xp, yp, dims))
    print(f"ollie.load call, outputs allocated: {t_load * 1e6:.2f} us")
    print(f"ollie.load call, out= given:        {t_out * 1e6:.2f} us")
    print(f"ctypes call of the same kernel:     {t_ctypes * 1e6:.2f} us")
    print(f"overhead beyond ctypes: {(t_load - t_ctypes) * 1e6:.2f} us "
          f"(out=: {(t_out - t_ctypes) * 1e6:.2f} us)")


if __name__ == "__main__":
    main()
