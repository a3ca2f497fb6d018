# support/half.h (the float16/bfloat16 conversions of the reference, the runner, .npy files
# and every kernel) against numpy (float16) and ml_dtypes (bfloat16), bit for bit: all 2^16
# patterns of each type to float32, and float32 and float64 sweeps (every 2^10th float32
# pattern, ties, overflow, subnormals, NaN payloads) to each type. Through ctypes on the
# build's libollie_half_check.so (tests/numpy/half_check.cpp). About a second of CPU.
import ctypes
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from spec_harness import ollie_bin

BF16 = ml_dtypes.bfloat16


# The plain build (the integer forms), the -march=native one (F16C's and AVX512_BF16's
# instructions in the vector forms, where the machine has them) and the same without
# AVX-512 (16 lanes as two halves of 8).
@pytest.fixture(scope="module",
                params=["ollie_half_check", "ollie_half_check_native", "ollie_half_check_avx2"])
def lib(request):
    path = Path(ollie_bin()).parent / f"lib{request.param}.so"
    if not path.exists():
        pytest.fail(f"{path} is missing: build it with `cmake --build build --target {request.param}`")
    return ctypes.CDLL(str(path))


def call(lib, name, values, out_dtype):
    values = np.ascontiguousarray(values)
    out = np.empty(values.shape, out_dtype)
    getattr(lib, name)(ctypes.c_void_p(values.ctypes.data), ctypes.c_void_p(out.ctypes.data),
                       ctypes.c_size_t(values.size))
    return out


def numpy_cast(values, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "invalid value encountered in cast" for NaNs
        return values.astype(dtype)


def float32_sweep():
    """Every 2^10th float32 bit pattern, and the patterns near each 16-bit rounding
    boundary: for every 2^16th pattern, the bf16 tie (+0x8000) and its neighbours, and the
    f16 ties (+0x1000 above each 2^13 step) across f16's range, subnormals included."""
    bits = [np.arange(0, 1 << 32, 1 << 10, dtype=np.uint64)]
    top = np.arange(0, 1 << 32, 1 << 16, dtype=np.uint64)
    for d in (0x7FFF, 0x8000, 0x8001, 0x17FFF, 0x18000, 0x18001):
        bits.append(top + d)
    step = np.arange(0x33000000 - (1 << 16), 0x47800000 + (1 << 16), 1 << 13, dtype=np.uint64)
    for d in (0xFFF, 0x1000, 0x1001):
        bits += [step + d, step + d + 0x80000000]
    bits = np.concatenate(bits) & 0xFFFFFFFF
    return bits.astype(np.uint32).view(np.float32)


def float64_sweep():
    """float64 values around every f16 and bf16 rounding boundary, where a conversion through
    float32 would round twice, plus specials."""
    f16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    base = f16[np.isfinite(f16)].astype(np.float64)
    with np.errstate(over="ignore"):
        spacing = np.spacing(np.abs(f16[np.isfinite(f16)])).astype(np.float64)
    spacing[np.isinf(spacing)] = 32.0  # at 65504, float16's largest finite value
    values = [base + spacing / 2, base + spacing / 2 * (1 + 2.0 ** -40),
              base + spacing / 2 * (1 - 2.0 ** -40), base + spacing * 0.3]
    bf = np.arange(0, 1 << 32, 1 << 16, dtype=np.uint64).astype(np.uint32).view(np.float32)
    bf = bf[np.isfinite(bf)].astype(np.float64)
    for eps in (2.0 ** -9, 2.0 ** -9 + 2.0 ** -40, 2.0 ** -9 - 2.0 ** -40, 2.0 ** -9 + 2.0 ** -30):
        values.append(bf * (1 + eps))
    specials = np.array([0x7FF0000000000001, 0x7FF8000000000000, 0xFFF4000000000000,
                         0x7FF0000000000000, 0x0000000000000001, 0x8000000000000000],
                        dtype=np.uint64).view(np.float64)
    values += [specials, np.array([65504.0, 65519.99, 65520.0, 65536.0, 1e300, 2.0 ** -25,
                                   2.0 ** -25 * (1 + 2.0 ** -50), 2.0 ** -24 * 1.5])]
    return np.concatenate(values)


def assert_same_bits(got, want, inputs, what):
    """Bit for bit, NaN payloads included."""
    got = got.view(np.uint16)
    want = want.view(np.uint16)
    differ = got != want
    bad = np.flatnonzero(differ)
    assert bad.size == 0, (f"{what}: {bad.size} of {got.size} differ; first: input "
                           f"{inputs[bad[0]]!r} gives {got[bad[0]]:#06x}, numpy {want[bad[0]]:#06x}")


def test_every_16_bit_pattern_converts_to_float32_exactly(lib):
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    for name, dtype in (("ollie_f16_to_float", np.float16), ("ollie_bf16_to_float", BF16)):
        got = call(lib, name, bits, np.float32).view(np.uint32)
        want = numpy_cast(bits.view(dtype), np.float32).view(np.uint32)
        nan = np.isnan(bits.view(dtype).astype(np.float32))
        bad = np.flatnonzero((got != want) & ~nan)
        assert bad.size == 0, f"{name}: pattern {bits[bad[0]]:#06x} gives {got[bad[0]]:#010x}"
        assert np.isnan(got.view(np.float32)[nan]).all()


def test_float32_to_f16_and_bf16_round_as_numpy_and_ml_dtypes(lib):
    x = float32_sweep()
    assert_same_bits(call(lib, "ollie_float_to_f16", x, np.uint16), numpy_cast(x, np.float16), x,
                     "float32 -> float16")
    assert_same_bits(call(lib, "ollie_float_to_bf16", x, np.uint16), numpy_cast(x, BF16), x,
                     "float32 -> bfloat16")


def test_float64_to_f16_rounds_once_and_to_bf16_through_float32(lib):
    x = float64_sweep()
    assert_same_bits(call(lib, "ollie_double_to_f16", x, np.uint16), numpy_cast(x, np.float16), x,
                     "float64 -> float16")
    assert_same_bits(call(lib, "ollie_double_to_bf16", x, np.uint16), numpy_cast(x, BF16), x,
                     "float64 -> bfloat16")
    # The sweep does reach the cases where rounding through float32 differs from rounding once.
    once = numpy_cast(x, np.float16).view(np.uint16)
    twice = numpy_cast(numpy_cast(x, np.float32), np.float16).view(np.uint16)
    assert (once != twice).sum() > 100


def test_vector_conversions_agree_with_numpy_and_ml_dtypes(lib):
    # ollie_vload / ollie_vstore: bit for bit, NaN payloads included (vcvtph2ps and
    # vcvtps2ph quiet a signalling NaN, vcvtneps2bf16 keeps a payload ml_dtypes drops and
    # flushes subnormals: a vector holding such a lane takes the integer formulas). The
    # sweep holds float32 subnormals and signalling NaNs of every payload width.
    lib.ollie_vec_isa.restype = ctypes.c_char_p
    isa = lib.ollie_vec_isa().decode()
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    for name, dtype in (("ollie_vec_f16_to_float", np.float16), ("ollie_vec_bf16_to_float", BF16)):
        got = call(lib, name, bits, np.float32).view(np.uint32)
        want = numpy_cast(bits.view(dtype), np.float32).view(np.uint32)
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, f"{name} ({isa}): pattern {bits[bad[0]]:#06x} gives {got[bad[0]]:#010x}"
    x = float32_sweep()
    subnormal = np.arange(1, 1 << 23, 97, dtype=np.uint32).view(np.float32)
    snan = (np.uint32(0x7F800000) | (np.uint32(1) << np.arange(22, dtype=np.uint32))).view(np.float32)
    x = np.concatenate([x, subnormal, -subnormal, snan, -snan])
    assert_same_bits(call(lib, "ollie_vec_float_to_f16", x, np.uint16), numpy_cast(x, np.float16),
                     x, f"float32 -> float16 ({isa})")
    assert_same_bits(call(lib, "ollie_vec_float_to_bf16", x, np.uint16), numpy_cast(x, BF16), x,
                     f"float32 -> bfloat16 ({isa})")
