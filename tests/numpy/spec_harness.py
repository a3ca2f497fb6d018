# Python side of the numpy cross-check: loads a spec file as numpy code, reads its entry
# signature, builds inputs from the annotations, and runs `ollie eval` on the same inputs.
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import types
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES_DIR = REPO / "examples"

# How long one `ollie eval` may take before the test calls it hung.
EVAL_TIMEOUT_S = 120

_ANNOTATION = re.compile(r"^\s*(f16|bf16|f32|f64|i32|i64|bool)\s*(?:\[(.*)\])?\s*$")
_NUMPY_DTYPE = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32,
                "f64": np.float64, "i32": np.int32, "i64": np.int64, "bool": np.bool_}


def example_paths() -> list[Path]:
    return sorted(EXAMPLES_DIR.glob("*.py"))


def ollie_bin() -> Path:
    return Path(os.environ.get("OLLIE_BIN", str(REPO / "build" / "ollie")))


_DIM_EXPR = re.compile(r"[A-Za-z_0-9+\-*() ]+")


def dim_value(expr: str, dims: dict[str, int]) -> int:
    """A dim expression of an annotation or relation ("3*D", "H * HD") at `dims`."""
    assert _DIM_EXPR.fullmatch(expr), f"bad dim expression {expr!r}"
    return int(eval(expr, {"__builtins__": {}}, dict(dims)))


@dataclasses.dataclass(frozen=True)
class TensorType:
    dtype: str                    # "f32", ...
    dims: tuple[str | int, ...]   # dim names or expressions ("3*D"), or integer literals

    def shape(self, dims: dict[str, int]) -> tuple[int, ...]:
        return tuple(d if isinstance(d, int) else dim_value(d, dims) for d in self.dims)

    @property
    def np_dtype(self):
        return _NUMPY_DTYPE[self.dtype]


def parse_annotation(text: str) -> TensorType:
    m = _ANNOTATION.match(text)
    if not m:
        raise ValueError(f"not a tensor annotation: {text!r} (expected e.g. \"f32[M, K]\")")
    dims: list[str | int] = []
    if m.group(2) is not None and m.group(2).strip():
        for part in m.group(2).split(","):
            part = part.strip()
            if re.fullmatch(r"\d+", part):
                dims.append(int(part))
            elif _DIM_EXPR.fullmatch(part):
                dims.append(part)
            else:
                raise ValueError(f"bad dim {part!r} in annotation {text!r}")
    return TensorType(m.group(1), tuple(dims))


@dataclasses.dataclass
class Spec:
    path: Path
    name: str                         # file stem, e.g. "matmul"
    entry: str
    params: list[tuple[str, TensorType]]
    returns: list[TensorType]
    default_dims: dict[str, int]
    fn: types.FunctionType            # the entry, callable as numpy code
    relations: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # RELATIONS

    def shape(self, t: "TensorType", dims: dict[str, int]) -> tuple[int, ...]:
        """`t`'s shape at `dims` (free dims; the dims RELATIONS derive are worked out)."""
        return t.shape(self.full_dims({k: v for k, v in dims.items() if k in self.default_dims}))

    def inputs(self, dims: dict[str, int], rng: np.random.Generator, dist: str) -> dict[str, np.ndarray]:
        """Random inputs at `dims`, as arrays of each parameter's dtype (float32, or
        float16/bfloat16 rounded to nearest as numpy and ml_dtypes round)."""
        out = {}
        for pname, t in self.params:
            shape = self.shape(t, dims)
            if dist == "normal":
                a = rng.standard_normal(shape)
            elif dist == "uniform":
                a = rng.uniform(-1.0, 1.0, shape)
            elif dist == "positive":
                a = rng.uniform(0.0, 1.0, shape)
            elif dist == "positive_away":      # bounded away from 0: sums cannot cancel
                a = rng.uniform(0.1, 1.0, shape)
            else:
                raise ValueError(f"unknown distribution {dist!r}")
            out[pname] = np.asarray(a, dtype=t.np_dtype)
        return out

    def run_f32(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        """numpy on the inputs in their spec dtypes: one correct float32 implementation."""
        return _as_list(self.fn(**{k: np.asarray(v) for k, v in inputs.items()}))

    def run_f64(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        """numpy on the inputs as float64 arrays: the spec's exact semantics, computed in
        double. Explicit casts in the spec still round (rope's `.astype(np.float32)` on
        its float64 angle tables), as they do in ollie's reference."""
        return _as_list(self.fn(**{k: _widened(v) for k, v in inputs.items()}))

    def constant(self, name: str):
        """A module-level constant of the spec (EPS, SCALE, ...)."""
        return self.fn.__globals__[name]

    def full_dims(self, overrides: dict[str, int]) -> dict[str, int]:
        unknown = set(overrides) - set(self.default_dims)
        assert not unknown, f"{self.name}: dims {sorted(unknown)} are not in DIMS"
        dims = {**self.default_dims, **overrides}
        # A dim that RELATIONS derive follows its free dims (module constants may appear).
        consts = {k: v for k, v in self.fn.__globals__.items() if type(v) is int}
        for lhs, rhs in self.relations:
            dims[lhs] = dim_value(rhs, {**consts, **dims})
        return dims


def _as_list(result) -> list[np.ndarray]:
    return [np.asarray(r) for r in result] if isinstance(result, tuple) else [np.asarray(result)]


def _widened(v) -> np.ndarray:
    """A float input as float64; integer and bool inputs unchanged (they are exact already,
    and numpy refuses float arrays as indices)."""
    a = np.asarray(v)
    return a if a.dtype.kind in "iub" else np.asarray(a, dtype=np.float64)


def _exec_spec(path: Path, module_name: str) -> dict:
    ns: dict = {"__name__": module_name, "__file__": str(path)}
    # dont_inherit: this file's `from __future__ import annotations` must not leak into the spec.
    exec(compile(path.read_text(), str(path), "exec", dont_inherit=True), ns)
    return ns


def _kernel_params(f: types.FunctionType) -> list[str]:
    """A method's parameters after self without defaults (a default is held constant)."""
    names = f.__code__.co_varnames[1:f.__code__.co_argcount]
    return list(names[:len(names) - len(f.__defaults__ or ())])


def _class_entries(cls: type, ns: dict) -> list[types.FunctionType]:
    """Each fully annotated method C.m as ollie sees it: a function of the constructor's
    parameters, then the method's, that builds the object and calls the method."""
    init = vars(cls).get("__init__")
    ctor = _kernel_params(init) if isinstance(init, types.FunctionType) else []
    entries = []
    for name, method in vars(cls).items():
        if name == "__init__" or not isinstance(method, types.FunctionType):
            continue
        own = _kernel_params(method)
        if not own or not all(isinstance(method.__annotations__.get(p), str) for p in own):
            continue
        kw = lambda ps: ", ".join(f"{p}={p}" for p in ps)  # noqa: E731
        src = f"def entry({', '.join(ctor + own)}):\n    return _cls({kw(ctor)}).{name}({kw(own)})\n"
        scope = {**ns, "_cls": cls}
        exec(src, scope)
        fn = scope["entry"]
        fn.__name__ = f"{cls.__name__}.{name}"
        fn.__annotations__ = {**{p: init.__annotations__.get(p) for p in ctor},
                              **method.__annotations__}
        entries.append(fn)
    return entries


def _array_params(fn: types.FunctionType) -> tuple[str, ...]:
    """The entry's array parameters: those without a default (a defaulted Python scalar
    parameter is held constant by ollie, not a kernel input)."""
    code = fn.__code__
    return code.co_varnames[:code.co_argcount - len(fn.__defaults__ or ())]


def _find_entry(path: Path, ns: dict) -> types.FunctionType:
    candidates = []
    for value in list(ns.values()):
        if isinstance(value, type) and value.__module__ == ns["__name__"]:
            candidates += _class_entries(value, ns)
            continue
        if not isinstance(value, types.FunctionType) or value.__code__.co_filename != str(path):
            continue
        params = _array_params(value)
        ann = value.__annotations__
        if params and all(isinstance(ann.get(p), str) for p in params):
            candidates.append(value)
    if len(candidates) != 1:
        names = [c.__name__ for c in candidates]
        raise AssertionError(f"{path.name}: expected exactly one entry function with all "
                             f"parameters annotated, found {names}")
    return candidates[0]


def load_spec(path: Path) -> Spec:
    ns32 = _exec_spec(path, f"ollie_spec_{path.stem}")
    fn32 = _find_entry(path, ns32)

    code = fn32.__code__
    params = [(p, parse_annotation(fn32.__annotations__[p])) for p in _array_params(fn32)]
    ret = fn32.__annotations__.get("return")
    assert ret is not None, f"{path.name}: entry {fn32.__name__} has no return annotation"
    returns = [parse_annotation(r) for r in ret] if isinstance(ret, tuple) else [parse_annotation(ret)]
    dims = ns32.get("DIMS")
    assert isinstance(dims, dict), f"{path.name}: no DIMS = dict(...) at module level"
    relations = [tuple(part.strip() for part in r.split("=", 1)) for r in ns32.get("RELATIONS", [])]
    return Spec(path, path.stem, fn32.__name__, params, returns, dict(dims), fn32, relations)


def dims_flag(dims: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in dims.items())


def run_ollie(args: list[str], timeout: float = EVAL_TIMEOUT_S) -> subprocess.CompletedProcess:
    binary = ollie_bin()
    if not binary.is_file() or not os.access(binary, os.X_OK):
        pytest.fail(f"the ollie binary is missing: {binary} (build it with "
                    f"`cmake --build build --target ollie`, or set OLLIE_BIN)")
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=timeout)


def ollie_eval(spec: Spec, dims: dict[str, int], inputs: dict[str, np.ndarray],
               workdir: Path, allow_infinite_bounds: bool = False) -> list[tuple[np.ndarray, np.ndarray]]:
    """(reference, bound) for each result of `ollie eval` on exactly these inputs. Bounds
    must be finite unless `allow_infinite_bounds` (overflow tests say where they expect inf)."""
    workdir.mkdir(parents=True, exist_ok=True)
    in_path, out_path = workdir / "in.npz", workdir / "out.npz"
    out_path.unlink(missing_ok=True)
    np.savez(in_path, **inputs)
    args = ["eval", str(spec.path), "--entry", spec.entry, "--dims", dims_flag(dims),
            "--inputs", str(in_path), "--out", str(out_path)]
    proc = run_ollie(args)
    cmd = "ollie " + " ".join(args)
    if proc.returncode != 0:
        pytest.fail(f"`{cmd}` exited {proc.returncode}\nstderr:\n{proc.stderr}")
    if not out_path.is_file():
        pytest.fail(f"`{cmd}` exited 0 but wrote no {out_path.name}\nstdout:\n{proc.stdout}")
    results = []
    with np.load(out_path) as npz:
        for i, t in enumerate(spec.returns):
            for key in (f"out{i}", f"out{i}_bound"):
                assert key in npz.files, f"`{cmd}`: {out_path.name} lacks {key} (has {npz.files})"
            ref, bound = npz[f"out{i}"], npz[f"out{i}_bound"]
            expected = spec.shape(t, dims)
            assert ref.dtype == np.float64 and bound.dtype == np.float64, \
                f"{spec.name}: out{i} is {ref.dtype}, bound {bound.dtype}; both must be float64"
            assert ref.shape == expected and bound.shape == expected, \
                f"{spec.name}: out{i} shape {ref.shape}, bound {bound.shape}, annotation says {expected}"
            bad = ~((np.isfinite(bound) | (allow_infinite_bounds & np.isinf(bound))) & (bound >= 0))
            if bad.any():
                idx = tuple(int(j) for j in np.argwhere(bad)[0])
                pytest.fail(f"{spec.name}: out{i}_bound is negative or non-finite on {bad.sum()} of "
                            f"{bad.size} elements (a bound must be a finite number >= 0); first at "
                            f"{idx}: bound={bound[idx]!r}, ref={ref[idx]!r}")
            results.append((ref, bound))
    return results
