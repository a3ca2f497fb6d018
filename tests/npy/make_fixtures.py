#!/usr/bin/env python3
# Writes the real-numpy fixtures under tests/npy/data/ that npy_test.cpp reads, and
# (with --check) verifies that numpy reads the files ollie wrote (data/ollie_written*).
# Usage: python3 make_fixtures.py            # regenerate numpy-written fixtures
#        python3 make_fixtures.py --check    # numpy must load ollie's files exactly
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

DATA = Path(__file__).resolve().parent / "data"


def write_fixtures():
    DATA.mkdir(exist_ok=True)
    np.save(DATA / "f4.npy", np.array([[0.1, -2.5, 3.0], [1e-7, 65504.0, -0.0]], dtype="<f4"))
    np.save(DATA / "f8.npy", np.array([0.1, -2.5, 1e300, np.inf, -np.inf, np.nan], dtype="<f8"))
    np.save(DATA / "i4.npy", np.array([[1, -2], [2147483647, -2147483648]], dtype="<i4"))
    np.save(DATA / "i8.npy", np.array([0, -1, 2**40, -(2**53)], dtype="<i8"))
    np.save(DATA / "b1.npy", np.array([True, False, True, True], dtype=bool))
    np.save(DATA / "scalar.npy", np.array(3.5, dtype="<f8"))
    np.save(DATA / "empty.npy", np.zeros((0,), dtype="<f4"))
    np.save(DATA / "zeros_2x0x3.npy", np.zeros((2, 0, 3), dtype="<i4"))
    np.save(DATA / "fortran.npy",
            np.asfortranarray(np.arange(24, dtype="<f8").reshape(2, 3, 4)))
    np.save(DATA / "big_f4.npy", np.array([1.5, -2.0, 0.1], dtype=">f4"))
    np.save(DATA / "big_i8.npy", np.array([[1, -2], [3, 2**40]], dtype=">i8"))
    np.save(DATA / "f2.npy", np.array([1.0], dtype="<f2"))
    # float16 and bfloat16 (ml_dtypes saves it as '<V2'): normal, subnormal, largest
    # finite, signed zero, inf and NaN.
    halves = [1.0, -2.5, 65504.0, 2.0**-24, -0.0, np.inf, np.nan, 0.1]
    np.save(DATA / "f2_values.npy", np.array(halves, dtype="<f2").reshape(2, 4))
    np.save(DATA / "big_f2.npy", np.array([1.5, -2.0, 0.1], dtype=">f2"))
    bf16 = np.dtype(ml_dtypes.bfloat16)
    np.save(DATA / "bf16.npy", np.array(halves[:3] + [2.0**-133, 3e38] + halves[4:],
                                         dtype=bf16).reshape(3, 3))
    # '>V2' with little-endian bytes (ml_dtypes does not swap here, astype would): refused.
    np.save(DATA / "big_bf16.npy", np.array([1.5, -2.0, 0.1], dtype=bf16.newbyteorder(">")))
    np.save(DATA / "void2.npy", np.zeros(2, dtype="V2"))
    np.save(DATA / "u1.npy", np.array([1, 2], dtype="u1"))
    np.save(DATA / "object.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    np.save(DATA / "i8_too_big.npy", np.array([2**53 + 1], dtype="<i8"))
    for version in [(2, 0), (3, 0)]:
        with open(DATA / f"v{version[0]}.npy", "wb") as f:
            np.lib.format.write_array(f, np.arange(6, dtype="<f4").reshape(3, 2), version)
    a = np.arange(6, dtype="<f4").reshape(2, 3)
    b = np.array([1, 2, 3], dtype="<i8")
    c = np.array(True)
    # Keyword order is file order; "zeta" first checks that order is not sorted.
    np.savez(DATA / "savez.npz", zeta=a, alpha=b, mid=c)
    np.savez_compressed(DATA / "savez_compressed.npz", x=a, y=b.astype("<f8"), z=c)
    np.savez(DATA / "empty.npz")


# What npy_test.cpp's golden test writes (keep the two in sync).
def ollie_expected():
    return {
        "f4": np.array([[0.5, -1.25, 3.0], [0.1, 1e30, -0.0]], dtype="<f4"),
        "f8": np.array([0.1, -2.5, 1e300], dtype="<f8"),
        "i4": np.array([[7], [-8]], dtype="<i4"),
        "i8": np.array([2**40, -3], dtype="<i8"),
        "b1": np.array([True, False, True], dtype=bool),
        "scalar": np.array(2.25, dtype="<f8"),
        "empty": np.zeros((0,), dtype="<f4"),
        "f2": np.array([[0.5, -65504.0], [2.0**-24, np.inf]], dtype="<f2"),
        "bf16": np.array([0.5, -3e38, 2.0**-133, -np.inf], dtype=ml_dtypes.bfloat16),
        "cube": np.arange(24, dtype="<f4").reshape(2, 3, 4),
    }


def check_ollie_written():
    expected = ollie_expected()
    for key, want in expected.items():
        got = np.load(DATA / f"ollie_written_{key}.npy")
        if want.dtype == ml_dtypes.bfloat16:
            got = got.view(ml_dtypes.bfloat16)  # numpy loads ml_dtypes' '<V2' as raw bytes
        assert got.dtype == want.dtype and got.shape == want.shape, key
        assert np.array_equal(got, want), key
        # ollie's npy bytes must be exactly what numpy itself writes.
        with open(DATA / f"ollie_written_{key}.npy", "rb") as f:
            import io
            buf = io.BytesIO()
            np.save(buf, want)
            assert f.read() == buf.getvalue(), f"{key}: bytes differ from np.save"
    with np.load(DATA / "ollie_written.npz") as z:
        assert list(z.keys()) == list(expected.keys())
        for key, want in expected.items():
            got = z[key].view(want.dtype) if want.dtype == ml_dtypes.bfloat16 else z[key]
            assert got.dtype == want.dtype and np.array_equal(got, want), key
    print("numpy reads ollie's files: ok")


if __name__ == "__main__":
    if "--check" in sys.argv:
        check_ollie_written()
    else:
        write_fixtures()
