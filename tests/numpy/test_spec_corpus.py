# Semantic coverage corpus: every spec in tests/numpy/specs/ (one area of the numpy subset
# each) is run through `ollie eval` and through real numpy, at two small dims settings.
import re
from pathlib import Path

import numpy as np
import pytest

from compare import bound_violation, float64_mismatch
from spec_harness import load_spec, ollie_eval, run_ollie, dims_flag

SPECS_DIR = Path(__file__).resolve().parent / "specs"

# The agreement criterion and the bound check are those of every cross-check (compare.py).

SEEDS = (0, 1, 2)

# Per spec: two small dims settings (sizes 1, 3, 7 where the spec allows them; a spec
# that splits an axis in halves needs it even), and the two input distributions. Inputs
# of log/sqrt/** specs are built so arguments stay positive whatever the distribution.
CORPUS = {
    "bcast_ranks": ([dict(B=1, M=3, N=7), dict(B=3, M=1, N=1)], ("normal", "uniform")),
    "bcast_size1": ([dict(B=1, M=1, N=7), dict(B=3, M=7, N=1)], ("normal", "uniform")),
    "promo_pyscalar": ([dict(M=1, N=7), dict(M=3, N=2)], ("normal", "uniform")),
    "promo_f32_f64": ([dict(M=1, N=3), dict(M=7, N=2)], ("normal", "uniform")),
    "promo_int_arange": ([dict(M=1, N=7), dict(M=3, N=1)], ("normal", "uniform")),
    "promo_bool": ([dict(M=1, N=7), dict(M=3, N=3)], ("normal", "uniform")),
    "elementwise_arith": ([dict(M=1, N=7), dict(M=3, N=3)], ("normal", "uniform")),
    "math_funcs": ([dict(M=1, N=7), dict(M=3, N=3)], ("normal", "uniform")),
    "power_int": ([dict(M=1, N=7), dict(M=3, N=3)], ("normal", "uniform")),
    "power_float": ([dict(M=1, N=7), dict(M=3, N=3)], ("normal", "uniform")),
    "compare_where": ([dict(M=1, N=7), dict(M=3, N=1)], ("normal", "uniform")),
    "logic_ops": ([dict(M=1, N=7), dict(M=3, N=3)], ("normal", "uniform")),
    "reduce_sum": ([dict(A=1, B=3, C=7), dict(A=3, B=1, C=2)], ("normal", "uniform")),
    "reduce_maxmin": ([dict(A=1, B=3, C=7), dict(A=7, B=1, C=1)], ("normal", "uniform")),
    "reduce_mean_var": ([dict(A=1, B=3, C=7), dict(A=3, B=7, C=2)], ("normal", "uniform")),
    "matmul_1d": ([dict(B=1, M=3, K=7), dict(B=3, M=1, K=1)], ("normal", "uniform")),
    "matmul_batched": ([dict(B=1, H=3, M=7, K=1, N=3), dict(B=3, H=1, M=1, K=7, N=1)], ("normal", "uniform")),
    "einsum_basic": ([dict(B=1, I=3, J=7, K=1), dict(B=3, I=1, J=2, K=7)], ("normal", "uniform")),
    "einsum_ellipsis": ([dict(B=1, T=3, C=4, N=1), dict(B=3, T=1, C=4, N=7)], ("normal", "uniform")),
    "norm_log1p_expm1": ([dict(M=1, N=7), dict(M=3, N=2)], ("normal", "uniform")),
    "argmax_argmin": ([dict(T=1, V=7), dict(T=3, V=2)], ("normal", "uniform")),
    "einsum_three": ([dict(B=1, I=3, J=7, K=1, L=3), dict(B=3, I=1, J=2, K=7, L=1)], ("normal", "uniform")),
    "outer_inner": ([dict(M=1, N=7), dict(M=3, N=1)], ("normal", "uniform")),
    "reshape_ops": ([dict(A=1, B=3, C=2), dict(A=3, B=7, C=6)], ("normal", "uniform")),
    "transpose_ops": ([dict(A=1, B=3, C=7), dict(A=3, B=1, C=2)], ("normal", "uniform")),
    "expand_squeeze": ([dict(M=1, N=7), dict(M=3, N=1)], ("normal", "uniform")),
    "slicing": ([dict(M=3, HD=2), dict(M=7, HD=6)], ("normal", "uniform")),
    "int_index": ([dict(A=3, B=3, C=5), dict(A=7, B=4, C=7)], ("normal", "uniform")),
    "concat_stack": ([dict(M=1, N=7, P=3), dict(M=3, N=1, P=1)], ("normal", "uniform")),
    "split_ops": ([dict(M=2, N=2), dict(M=6, N=6)], ("normal", "uniform")),
    "repeat_tile": ([dict(M=1, N=7), dict(M=3, N=1)], ("normal", "uniform")),
    "create_full": ([dict(M=1, N=7), dict(M=3, N=1)], ("normal", "uniform")),
    "create_like": ([dict(M=1, N=7), dict(M=3, N=1)], ("normal", "uniform")),
    "tri_masks": ([dict(S=1, T=3), dict(S=7, T=1)], ("normal", "uniform")),
    "arange_ops": ([dict(N=1), dict(N=7)], ("normal", "uniform")),
    "astype_ops": ([dict(M=1, N=7), dict(M=3, N=3)], ("normal", "uniform")),
    "helpers": ([dict(M=1, N=7), dict(M=3, N=2)], ("normal", "uniform")),
    "constants": ([dict(M=1, D=7), dict(M=3, D=1)], ("normal", "uniform")),
    "multi_output": ([dict(M=1, N=7), dict(M=3, N=1)], ("normal", "uniform")),
    "derived_funcs": ([dict(M=1, N=7), dict(M=3, N=3)], ("normal", "uniform")),
    "list_literals": ([dict(M=1, N=4), dict(M=3, N=4)], ("normal", "uniform")),
    "list_index": ([dict(M=3, N=4), dict(M=4, N=5)], ("normal", "uniform")),
    "reversal": ([dict(M=1, N=7), dict(M=4, N=3)], ("normal", "uniform")),
    "scipy_special": ([dict(M=1, N=7), dict(M=4, N=3)], ("normal", "uniform")),
    "masked_assign": ([dict(T=1, D=6), dict(T=4, D=3)], ("normal", "uniform")),
    "bert_layer": ([dict(T=1, D=4, F=3), dict(T=6, D=12, F=5)], ("normal", "uniform")),
    "rounding": ([dict(M=1, N=8), dict(M=4, N=3)], ("normal", "uniform")),
    "f64_spec": ([dict(M=1, K=7, N=3), dict(M=3, K=1, N=1)], ("normal", "uniform")),
    "int_compute": ([dict(M=1, N=7), dict(M=3, N=1)], ("normal", "uniform")),
    "masks_neg_inf": ([dict(S=1, D=3), dict(S=7, D=1)], ("normal", "uniform")),
    "minmax_clip": ([dict(M=1, N=7), dict(M=3, N=1)], ("normal", "uniform")),
    "scalar_shape_math": ([dict(M=1, N=2), dict(M=3, N=6)], ("normal", "uniform")),
    "float_mod": ([dict(M=1, N=7), dict(M=3, N=3)], ("normal", "uniform")),
    "slicing_odd": ([dict(M=1, N=7), dict(M=3, N=1)], ("normal", "uniform")),
    "reduce_dtype": ([dict(M=1, N=7), dict(M=3, N=1)], ("normal", "uniform")),
    "scalar_outputs": ([dict(N=1), dict(N=7)], ("normal", "uniform")),
    "mixed_edges": ([dict(M=1, N=7), dict(M=3, N=2)], ("normal", "uniform")),
    "dim_relations": ([dict(T=1, H=3, HD=2), dict(T=3, H=1, HD=5)], ("normal", "uniform")),
    "dim_const_heads": ([dict(T=1, HD=3, KVH=1), dict(T=4, HD=1, KVH=3)], ("normal", "uniform")),
    "hvstack_array_split": ([dict(M=1, N=7, K=3), dict(M=3, N=5, K=1)], ("normal", "uniform")),
    "class_rmsnorm": ([dict(T=1, D=7), dict(T=3, D=2)], ("normal", "uniform")),
    "class_llama": ([dict(B=1, L=1, D=8, KV=4, F=3), dict(B=2, L=5, D=16, KV=8, F=7)], ("normal", "uniform")),
    "static_loops": ([dict(M=1, N=7), dict(M=3, N=2)], ("normal", "uniform")),
    "static_lists": ([dict(M=4, N=4), dict(M=5, N=8)], ("normal", "uniform")),
    "kwargs_dicts": ([dict(M=1, N=7), dict(M=3, N=2)], ("normal", "uniform")),
    "scalar_params": ([dict(T=1, D=2), dict(T=5, D=6)], ("normal", "uniform")),
    "item_assign": ([dict(B=2, S=5, D=1), dict(B=3, S=9, D=3)], ("normal", "uniform")),
    "picogpt_block": ([dict(T=1, HD=1, F=3), dict(T=5, HD=3, F=8)], ("normal", "uniform")),
    "gather_embedding": ([dict(T=1, V=7, D=3, P=2), dict(T=5, V=2, D=8, P=5)], ("normal", "uniform")),
}

# Index arrays of gathers: per spec, each index parameter and the dims of the axes it
# indexes. numpy accepts indices in [-V, V) only (V the smallest of those sizes), so they
# are drawn there, with -V, -1, 0 and V - 1 first (the wrap and both ends) where they fit.
GATHER_INDICES = {
    "gather_embedding": {"ids": ("V",), "cols": ("T", "V"), "pick": ("D",)},
}

_CACHE = {}


def _spec(name):
    if name not in _CACHE:
        _CACHE[name] = load_spec(SPECS_DIR / f"{name}.py")
    return _CACHE[name]


def _inputs(spec, dims, rng, dist):
    """Float params from spec.inputs (f32-representable); int params small integers
    (so products and powers stay exact), bool params fair coins."""
    out = spec.inputs(dims, rng, dist)
    for pname, t in spec.params:
        shape = t.shape(dims)
        if t.dtype == "i32":
            out[pname] = rng.integers(-6, 7, shape).astype(np.int32)
        elif t.dtype == "bool":
            out[pname] = rng.random(shape) < 0.5
    for pname, axes in GATHER_INDICES.get(spec.name, {}).items():
        t = dict(spec.params)[pname]
        rows = min(dims[a] for a in axes)
        idx = rng.integers(-rows, rows, t.shape(dims))
        edges = [-rows, -1, 0, rows - 1]
        idx.flat[:min(idx.size, 4)] = edges[:idx.size]
        out[pname] = idx.astype(t.np_dtype)
    return out


def _as_f64(spec, inputs):
    return {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in inputs.items()}


def test_every_spec_is_configured():
    names = {p.stem for p in SPECS_DIR.glob("*.py")}
    assert names == set(CORPUS), f"unconfigured: {sorted(names - set(CORPUS))}, " \
                                 f"missing files: {sorted(set(CORPUS) - names)}"
    assert len(names) >= 40


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_output_dtypes_match_annotation(name):
    """numpy's own result has the annotated dtypes, and ollie's IR says the same."""
    spec = _spec(name)
    dims = CORPUS[name][0][0]
    got = spec.run_f32(_inputs(spec, spec.full_dims(dims), np.random.default_rng(0), "normal"))
    want = [np.dtype(t.np_dtype) for t in spec.returns]
    assert [g.dtype for g in got] == want, f"{name}: numpy returns {[str(g.dtype) for g in got]}"
    proc = run_ollie(["check", str(spec.path), "--entry", spec.entry, "--dims", dims_flag(dims)])
    assert proc.returncode == 0, proc.stderr
    header = proc.stdout.splitlines()[0]
    outs = re.findall(r"(f32|f64|i32|i64|bool)\[", header.split("->", 1)[1])
    assert outs == [t.dtype for t in spec.returns], header


@pytest.mark.parametrize("setting", [0, 1])
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_spec_against_numpy(name, setting, tmp_path):
    spec = _spec(name)
    settings, dists = CORPUS[name]
    dims = spec.full_dims(settings[setting])
    for dist in dists:
        for seed in SEEDS:
            what = f"{name} [{dims_flag(dims)}] ({dist}, seed {seed})"
            inputs = _inputs(spec, dims, np.random.default_rng(1000 * setting + seed), dist)
            results = ollie_eval(spec, dims, inputs, tmp_path / f"{dist}{seed}")
            exact = spec.run_f64(_as_f64(spec, inputs))
            f32 = spec.run_f32(inputs)
            assert len(results) == len(exact) == len(spec.returns)
            for i, ((ref, bound), want, got, t) in enumerate(zip(results, exact, f32, spec.returns)):
                shape = t.shape(dims)
                assert want.shape == shape and got.shape == shape, \
                    f"{what} out{i}: numpy shapes {want.shape}/{got.shape}, annotation {shape}"
                assert got.dtype == t.np_dtype, f"{what} out{i}: numpy dtype {got.dtype}, annotated {t.dtype}"
                want = want.astype(np.float64)
                got = got.astype(np.float64)

                # (a) ollie's reference is numpy's meaning computed in double.
                why = float64_mismatch(ref, want)
                if why:
                    pytest.fail(f"{what} out{i}: {why}")

                # (b) numpy computing in the declared dtypes is a correct implementation:
                # it must lie inside ollie's bound on every element.
                why = bound_violation(ref, bound, got)
                if why:
                    pytest.fail(f"{what} out{i}, numpy in declared dtypes: {why}")


# Specs just outside the subset: each must fail with `file:line:col: error:`, the source
# line, a caret under the offending expression, and a message naming what is wrong.
# (body returned by the entry, the column of the caret, a fragment of the message).
OUTSIDE_SUBSET = {
    "einsum_trace": ("np.einsum('ii->i', x)", 12, "repeats within operand 'ii'"),
    "einsum_repeated_output": ("np.einsum('ij->jj', x)", 12, "output label 'j' repeats"),
    "concatenate_axis_none": ("np.concatenate([x, x], axis=None)", 12, "axis=None is not supported"),
    "arange_float_dim_bound": ("np.arange(0.0, x.shape[0] * 0.5, 0.5)", 12, "float computed from a dim"),
    "pad_edge": ("np.pad(x, 1, mode='edge')", 12, "mode other than 'constant'"),
    "ragged_list": ("np.array([x, x[:1]])", 12, "arrays of different shapes"),
    "two_list_indices": ("x[[0, 1], [1, 0]]", 12, "several lists"),
    "python_sum_of_array": ("sum(x)", 12, "Python sum() of an array"),
    "prod_method": ("x.prod(axis=0)", 12, "array attribute .prod is not supported"),
    "boolean_mask_index": ("x[x > 0]", 12, "data-dependent shape"),
    "nonzero": ("np.nonzero(x)", 12, "data-dependent shape"),
    "gather_float_index": ("x[x[:, 0]]", 12, "indexing with an array of f32"),
    "gather_two_arrays": ("x[np.arange(2), np.arange(2)]", 12, "several index arrays"),
    "gather_mixed_int": ("x[np.arange(2), 0]", 12, "an index array combined with an int"),
    "gather_computed_index": ("x[(x[:, 0] > 0).astype(np.int64)]", 12, "must be an integer input of the entry"),
    "gather_arange_out_of_bounds": ("x[np.arange(5)]", 12, "index 4 of the np.arange index is out of bounds"),
    "take_along_axis_float": ("np.take_along_axis(x, x, axis=0)", 12, "np.take_along_axis with indices of f32"),
    "take_mode_clip": ("np.take(x, np.arange(2), mode='clip')", 12, "mode other than 'raise'"),
    "index_out_of_bounds": ("x[5]", 12, "index 5 is out of bounds for axis 0"),
    "bad_reshape": ("x.reshape(-1, 5)", 12, "cannot reshape f32[M, N]"),
    "matmul_mismatch": ("x @ x[:2]", 14, "matmul shape mismatch"),
    "negate_bool": ("-(x > 0)", 12, "does not negate booleans"),
    "subtract_bools": ("(x > 0) - (x < 0)", 20, "does not subtract booleans"),
    "complex64": ("x.astype(np.complex64)", 21, "np.complex64 is not supported"),
    "axis_out_of_range": ("np.sum(x, axis=2)", 12, "axis 2 is out of bounds"),
    "stack_mismatch": ("np.stack([x, x[:1]])", 12, "equal shape: f32[M, N] and f32[1, N]"),
    "int_negative_power": ("(x > 0).astype(np.int32) ** -1", 37, "negative integer powers"),
    "tile_by_dim": ("np.tile(x[:1], (x.shape[0], 1))", 12, "reps must be a constant integer"),
    "wrong_return_dtype": ("x.astype(np.float64)", 12, "returns f64[M, N] but the annotation says f32[M, N]"),
}

_OUTSIDE_TEMPLATE = 'import numpy as np\nDIMS = dict(M=4, N=6)\n\n\ndef f(x: "f32[M, N]") -> "f32[M, N]":\n    return {}\n'

# Statements rather than expressions: (source lines of the entry body, line, col, fragment).
OUTSIDE_SUBSET_STATEMENTS = {
    "if_on_array": (["if x.sum() > 2:", "    x = x * 2", "return x"], 6, 8, "`if` on an array"),
    "for_over_array": (["for row in x:", "    x = x + row", "return x"], 6, 16, "cannot loop over an array"),
    "while_loop": (["while x.shape[0] > 2:", "    x = x[1:]", "return x"], 6, 5, "while loops are not supported"),
    "python_round": (["return x * round(1.5)"], 6, 16, "Python round() is not supported"),
    "mask_assign_values": (["y = x * 1", "y[x > 0] = x.sum(axis=0)", "return y"], 7, 5, "count, which depends on the data"),
}


def _check_located_error(path, line, col, fragment, source):
    proc = run_ollie(["check", str(path)])
    assert proc.returncode == 1, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    err = proc.stderr
    assert "Traceback" not in err and "terminate called" not in err and "InternalError" not in err, err
    head = f"{path}:{line}:{col}: error: "
    assert err.startswith(head), f"expected the error at {line}:{col}, got:\n{err}"
    assert fragment in err.splitlines()[0], f"message lacks {fragment!r}:\n{err}"
    src_line = source.splitlines()[line - 1]
    lines = err.splitlines()
    i = next((k for k, ln in enumerate(lines) if ln.endswith(src_line)), None)
    assert i is not None, f"the source line is not shown:\n{err}"
    indent = len(lines[i]) - len(src_line)          # the message indents the quoted line
    caret = lines[i + 1]
    assert caret.strip() == "^" and caret.index("^") == indent + col - 1, f"caret not under column {col}:\n{err}"


@pytest.mark.parametrize("case", sorted(OUTSIDE_SUBSET))
def test_outside_subset_is_a_located_error(case, tmp_path):
    body, col, fragment = OUTSIDE_SUBSET[case]
    source = _OUTSIDE_TEMPLATE.format(body)
    path = tmp_path / f"{case}.py"
    path.write_text(source)
    _check_located_error(path, 6, col, fragment, source)


@pytest.mark.parametrize("case", sorted(OUTSIDE_SUBSET_STATEMENTS))
def test_outside_subset_statement_is_a_located_error(case, tmp_path):
    body, line, col, fragment = OUTSIDE_SUBSET_STATEMENTS[case]
    source = 'import numpy as np\nDIMS = dict(M=4, N=6)\n\n\ndef f(x: "f32[M, N]") -> "f32[M, N]":\n' \
        + "".join(f"    {ln}\n" for ln in body)
    path = tmp_path / f"{case}.py"
    path.write_text(source)
    _check_located_error(path, line, col, fragment, source)
