# float16 and bfloat16 end to end (issue 20): emitted kernels convert exactly as numpy and
# ml_dtypes do (a float32 sweep through `ollie run-kernel`, compared bit for bit), a
# bf16-in, f32-compute, bf16-out spec and examples/layernorm_f16.py pass `ollie verify` and
# agree with numpy, and a kernel that rounds toward zero is rejected. About 20 s of CPU
# (five kernel compiles).
import warnings

import ml_dtypes
import numpy as np
import pytest

from spec_harness import REPO, run_ollie

BF16 = ml_dtypes.bfloat16

CONVERT = '''import numpy as np
import ml_dtypes

DIMS = dict(N=8)


def cvt(x: "f32[N]", d: "f64[N]") -> ("bf16[N]", "f16[N]", "bf16[N]", "f16[N]"):
    return (x.astype(ml_dtypes.bfloat16), x.astype(np.float16), d.astype(ml_dtypes.bfloat16),
            d.astype(np.float16))
'''

RMSNORM_BF16 = '''import numpy as np
import ml_dtypes

DIMS = dict(T=8, D=64)


def rmsnorm_bf16(x: "bf16[T, D]", w: "bf16[D]") -> "bf16[T, D]":
    x32 = x.astype(np.float32)
    ms = (x32 * x32).mean(axis=-1, keepdims=True)
    y = x32 / np.sqrt(ms + 1e-6) * w.astype(np.float32)
    return y.astype(ml_dtypes.bfloat16)
'''


def ollie_ok(args, timeout=300):
    proc = run_ollie(args, timeout=timeout)
    assert proc.returncode == 0, f"ollie {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def emit(spec, dims, out_dir):
    ollie_ok(["emit", str(spec), "--dims", dims, "-o", str(out_dir)])
    (kernel,) = out_dir.glob("*.cpp")
    return kernel


def sweep():
    """float32 values at and around every rounding decision of both 16-bit types: ties,
    their neighbours, overflow, subnormals, zeros, infinities and NaN."""
    top = np.arange(0, 1 << 32, 1 << 20, dtype=np.uint64)
    bits = [top + d for d in (0, 0x7FFF, 0x8000, 0x8001, 0x18000, 0xFFF, 0x1000, 0x1001, 0x3000)]
    bits = (np.concatenate(bits) & 0xFFFFFFFF).astype(np.uint32)
    x = bits.view(np.float32)
    extra = np.array([65504, 65519.996, 65520, 65536, -65520, 2.0**-24, 2.0**-25, 1.5 * 2.0**-24,
                      2.0**-133, 3.4028235e38, np.inf, -np.inf, np.nan, 0.0, -0.0], np.float32)
    return np.concatenate([x, extra])


def cast(values, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return values.astype(dtype)


def same_bits(got, want, what):
    g, w = got.view(np.uint16), want.view(np.uint16)
    nan = np.isnan(want.astype(np.float32))
    assert np.all(np.isnan(got.astype(np.float32))[nan]), f"{what}: a NaN was lost"
    bad = np.flatnonzero((g != w) & ~nan)
    assert bad.size == 0, f"{what}: {bad.size} differ; first {w[bad[0]]:#06x} wanted, {g[bad[0]]:#06x} got"


def test_emitted_conversions_round_as_numpy_and_ml_dtypes(tmp_path):
    spec = tmp_path / "cvt.py"
    spec.write_text(CONVERT)
    x = sweep()
    with np.errstate(invalid="ignore"):  # the signalling NaNs among x
        d = x.astype(np.float64) * (1 + 2.0**-30)  # float64 values float32 would round first
    n = x.size
    kernel = emit(spec, f"N={n}", tmp_path / "k")
    np.savez(tmp_path / "in.npz", x=x, d=d)
    ollie_ok(["run-kernel", str(spec), str(kernel), "--dims", f"N={n}", "--inputs",
              str(tmp_path / "in.npz"), "--out", str(tmp_path / "out.npz")])
    with np.load(tmp_path / "out.npz") as out:
        got = [out[f"out{i}"] for i in range(4)]
    same_bits(got[0].view(BF16), cast(x, BF16), "float32 -> bfloat16")
    same_bits(got[1], cast(x, np.float16), "float32 -> float16")
    same_bits(got[2].view(BF16), cast(d, BF16), "float64 -> bfloat16")
    same_bits(got[3], cast(d, np.float16), "float64 -> float16")


def test_bf16_spec_passes_verify_and_agrees_with_ml_dtypes(tmp_path):
    spec = tmp_path / "rmsnorm_bf16.py"
    spec.write_text(RMSNORM_BF16)
    kernel = emit(spec, "T=8,D=64", tmp_path / "k")
    proc = ollie_ok(["verify", str(spec), str(kernel), "--dims", "T=8,D=64", "--seed", "3"])
    assert f"{kernel}: pass (" in proc.stdout, proc.stdout
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 64)).astype(BF16)
    w = rng.standard_normal(64).astype(BF16)
    np.savez(tmp_path / "in.npz", x=x, w=w)
    ollie_ok(["run-kernel", str(spec), str(kernel), "--dims", "T=8,D=64", "--inputs",
              str(tmp_path / "in.npz"), "--out", str(tmp_path / "out.npz")])
    with np.load(tmp_path / "out.npz") as out:
        got = out["out0"].view(BF16).astype(np.float64)
    ns = {}
    exec(RMSNORM_BF16, ns)
    want = ns["rmsnorm_bf16"](x, w).astype(np.float64)
    # Both round float32 results to bfloat16: equal but where float32 sums in another order
    # land on the other side of a tie (one bfloat16 spacing).
    diff = np.abs(got - want)
    assert np.all(diff <= 2.0**-7 * np.abs(want)), np.max(diff / np.abs(want))
    assert np.mean(diff == 0) > 0.95


def test_layernorm_f16_example_passes_verify(tmp_path):
    spec = REPO / "examples" / "layernorm_f16.py"
    kernel = emit(spec, "T=4,D=48", tmp_path / "k")
    proc = ollie_ok(["verify", str(spec), str(kernel), "--dims", "T=4,D=48", "--seed", "1"])
    assert f"{kernel}: pass (" in proc.stdout, proc.stdout


def test_rounding_toward_zero_is_rejected():
    spec = REPO / "examples" / "layernorm_f16.py"
    kernel = REPO / "tests" / "redteam" / "layernorm_f16__rounds_toward_zero.cpp"
    proc = run_ollie(["verify", str(spec), str(kernel), "--dims", "T=4,D=48", "--seed", "1"],
                     timeout=300)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert f"{kernel}: wrong (" in proc.stdout, proc.stdout
