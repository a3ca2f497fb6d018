# The Python package (python/ollie/): check/eval/emit against numpy, a function object as
# the spec, load and call of a verified kernel (dtype, shape, alignment, contiguity,
# DLPack), and kernels refused when their certificate does not match.
import hashlib
import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import kernels_for_tests as k
import ollie

ROOT = Path(__file__).resolve().parents[2]
SOFTMAX = ROOT / "examples" / "softmax.py"


def test_function_spec_carries_helpers_constants_and_dims():
    text = ollie.function_spec_text(k.relu_scale)
    for line in ("import numpy as np", "SCALE = 0.5", "OFFSET = 1.0",
                 "DIMS = {'M': 8, 'N': 16}", "def _act(x):", "def relu_scale(x"):
        assert line in text
    assert "relu_scale_numpy" not in text  # not used by the entry
    assert text == ollie.function_spec_text(k.relu_scale)  # deterministic: same hash


def test_function_spec_carries_closure_constants_and_refuses_other_objects():
    scale = 3.0

    def scaled(x: "f32[M, N]") -> "f32[M, N]":
        return x * scale

    assert "scale = 3.0" in ollie.function_spec_text(scaled)
    table = np.ones(3)

    def uses_array(x: "f32[M, N]") -> "f32[M, N]":
        return x * table[0]

    with pytest.raises(ollie.OllieError, match="'table', a ndarray, which cannot be written"):
        ollie.check(uses_array)


def test_check_of_a_path_and_a_function():
    info = ollie.check(SOFTMAX, dims={"M": 4, "N": 8})
    assert info["entry"] == "softmax" and info["dims"] == {"M": 4, "N": 8}
    assert info["params"][0]["bound_shape"] == [4, 8] and info["params"][0]["axes"] == ["M", "N"]
    assert "exp" in info["ir"] and info["flops"] > 0
    info = ollie.check(k.relu_scale)
    assert info["entry"] == "relu_scale" and info["dims"] == {"M": 8, "N": 16}


def test_bad_spec_path_names_the_file():
    with pytest.raises(ollie.OllieError, match="no_such_spec.py"):
        ollie.check("no_such_spec.py")


def test_eval_agrees_with_numpy_within_the_bound():
    ref = ollie.eval(SOFTMAX, dims="M=4,N=8", seed=3)
    (x,) = ref.inputs
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    want = e / e.sum(axis=-1, keepdims=True)
    assert ref.values[0].shape == (4, 8) and ref.names == ["x"]
    assert np.all(np.abs(ref.values[0] - want) <= ref.bounds[0] + 1e-15)
    assert sum(ref.criteria[0].values()) == 32


def test_eval_of_a_function_on_given_inputs():
    x = np.linspace(-2, 2, 8 * 16, dtype=np.float32).reshape(8, 16)
    ref = ollie.eval(k.relu_scale, {"x": x})
    np.testing.assert_allclose(ref.values[0], k.relu_scale_numpy(x), rtol=1e-12)
    with pytest.raises(ollie.OllieError, match="input 'x': shape \\(8, 15\\)"):
        ollie.eval(k.relu_scale, [x[:, :15]])


def test_emit_returns_source_header_and_schedule(tmp_path):
    out = ollie.emit(k.relu_scale, symbol="relu_f32", out_dir=tmp_path)
    assert 'extern "C" void relu_f32(' in out["source"]
    assert "relu_f32" in out["header"] and out["schedule"]
    assert (tmp_path / "relu_scale.cpp").read_text() == out["source"]
    with pytest.raises(ollie.OllieError, match="symbol"):
        ollie.emit(k.relu_scale, symbol="not a name")


def test_loaded_kernel_agrees_with_numpy(verified):
    fast = ollie.load(verified, k.relu_scale)
    x = ollie.aligned(np.random.default_rng(0).standard_normal((8, 16), dtype=np.float32))
    y = fast(x)
    assert y.dtype == np.float32 and y.shape == (8, 16) and fast.copies == 0
    np.testing.assert_allclose(y, k.relu_scale_numpy(x), rtol=1e-6)
    # A generic kernel takes other dims, bound from the inputs' shapes.
    x2 = ollie.aligned(np.random.default_rng(1).standard_normal((3, 5), dtype=np.float32))
    np.testing.assert_allclose(fast(x2), k.relu_scale_numpy(x2), rtol=1e-6)
    # Outputs into arrays of the caller's.
    out = ollie.empty((8, 16), np.float32)
    assert fast(x, out=out) is out
    np.testing.assert_allclose(out, k.relu_scale_numpy(x), rtol=1e-6)


def test_wrong_dtype_shape_and_arity_are_refused(verified):
    fast = ollie.load(verified, k.relu_scale)
    x = ollie.empty((8, 16), np.float64)
    with pytest.raises(TypeError, match="input 'x' is float64 but relu_scale takes f32"):
        fast(x)
    with pytest.raises(ValueError, match="input 'x' has 3 axes"):
        fast(ollie.empty((2, 8, 16), np.float32))
    with pytest.raises(TypeError, match="takes 1 inputs"):
        fast()
    with pytest.raises(TypeError, match="a numpy array or an array that speaks DLPack"):
        fast([[1.0]])
    x32 = ollie.empty((8, 16), np.float32)
    with pytest.raises(ValueError, match="out\\[0\\]: a numpy float32 array of shape"):
        fast(x32, out=np.empty((8, 15), np.float32))
    raw = ollie.empty(8 * 16 + 1, np.float32)
    with pytest.raises(ValueError, match="out\\[0\\] must be C-contiguous and 64-byte aligned"):
        fast(x32, out=raw[1:].reshape(8, 16))
    with pytest.raises(ValueError, match="overlaps an input"):
        fast(x32, out=x32)


def test_unaligned_and_strided_inputs_are_copied_with_one_warning(verified):
    fast = ollie.load(verified, k.relu_scale)
    base = np.arange(8 * 16 + 1, dtype=np.float32)
    start = 1 if base.ctypes.data % 64 == 0 else 0
    unaligned = base[start:start + 128].reshape(8, 16)
    assert unaligned.ctypes.data % 64 != 0
    strided = np.arange(8 * 32, dtype=np.float32).reshape(8, 32)[:, ::2]
    with pytest.warns(ollie.OllieCopyWarning, match="not 64-byte aligned"):
        y = fast(unaligned)
    np.testing.assert_allclose(y, k.relu_scale_numpy(unaligned), rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once per kernel: no second warning
        np.testing.assert_allclose(fast(strided), k.relu_scale_numpy(strided), rtol=1e-6)
    assert fast.copies == 2


def test_dlpack_arrays_are_passed_without_a_copy(verified):
    jnp = pytest.importorskip("jax.numpy", reason="jax is not installed: no DLPack producer")
    fast = ollie.load(verified, k.relu_scale)
    x = jnp.asarray(np.random.default_rng(2).standard_normal((8, 16), dtype=np.float32))
    y = fast(x)
    np.testing.assert_allclose(y, k.relu_scale_numpy(np.asarray(x)), rtol=1e-6)
    if np.from_dlpack(x).ctypes.data % 64 == 0:
        assert fast.copies == 0


def test_torch_tensors_through_dlpack(verified):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed in the test environment")
    fast = ollie.load(verified, k.relu_scale)
    x = torch.randn(8, 16, dtype=torch.float32)
    np.testing.assert_allclose(fast(x), k.relu_scale_numpy(x.numpy()), rtol=1e-6)


def test_a_kernel_for_another_spec_is_refused(verified, tmp_path):
    changed = tmp_path / "relu_scale.py"
    changed.write_text(ollie.function_spec_text(k.relu_scale).replace("OFFSET = 1.0",
                                                                      "OFFSET = 2.0"))
    with pytest.raises(ollie.OllieError, match="the spec changed since the kernel was verified"):
        ollie.load(verified, changed)


def test_an_edited_kernel_or_a_failed_verdict_is_refused(verified, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(verified, run)
    kernel = run / "relu_scale.cpp"
    kernel.write_text(kernel.read_text() + "\n// edited\n")
    with pytest.raises(ollie.OllieError, match="not the one the certificate was made for"):
        ollie.load(run, k.relu_scale)
    cert = json.loads((run / "certificate.json").read_text())
    cert["kernel"]["sha256"] = hashlib.sha256(kernel.read_bytes()).hexdigest()
    cert["verdict"] = "wrong"
    (run / "certificate.json").write_text(json.dumps(cert))
    with pytest.raises(ollie.OllieError, match="verdict is 'wrong'"):
        ollie.load(run, k.relu_scale)
    with pytest.raises(ollie.OllieError, match="cannot read the certificate"):
        ollie.load(kernel, k.relu_scale, certificate=tmp_path / "none.json")
