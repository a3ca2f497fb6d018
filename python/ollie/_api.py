"""ollie.check, eval, emit and verify: the `ollie` verbs as functions over the C++ API
(src/api/api.h, through the extension module ollie._ollie), with keyword arguments for
what the flags say and Python objects as results."""
from __future__ import annotations

import json
import os
import random
import re
from dataclasses import dataclass, field

import numpy as np

from . import _ollie
from ._spec import OllieError, dims_text, resolve


def check(spec, *, entry: str | None = None, dims=None, rewrites: str | None = None) -> dict:
    """`ollie check --json`: entry, dims, params and results (dtype, shape, bound shape),
    FLOPs, compulsory bytes, intensity, and the tensor IR's text under "ir"."""
    s = resolve(spec, entry)
    return json.loads(_ollie.check(s.path, s.entry, dims_text(dims), _path(rewrites)))


@dataclass
class Reference:
    """`ollie eval`'s result: per output the reference value and the per-element bound (float64),
    which criterion bounded how many elements, and the inputs used (drawn from `seed` when
    none were given)."""

    values: list[np.ndarray]
    bounds: list[np.ndarray]
    criteria: list[dict]
    inputs: list[np.ndarray]
    seed: int | None = None
    names: list[str] = field(default_factory=list)


def eval(spec, inputs=None, *, entry: str | None = None, dims=None, seed: int | None = None,
         derived_only: bool = False) -> Reference:  # noqa: A001 (the verb's name)
    """`ollie eval`: the reference outputs and error bounds on `inputs` (a list in parameter
    order or a dict by parameter name), or on seeded random inputs."""
    s = resolve(spec, entry)
    arrays = None
    if inputs is not None:
        arrays = [np.ascontiguousarray(a, dtype=np.float64) for a in _ordered(s, dims, inputs)]
    elif seed is None:
        seed = random.randrange(2**31)
    r = _ollie.eval(s.path, s.entry, dims_text(dims), arrays, -1 if seed is None else seed,
                    derived_only)
    info = check(spec if s.entry == "" else s.path, entry=s.entry or None, dims=dims)
    return Reference(r["values"], r["bounds"], [json.loads(c) for c in r["criteria"]], r["inputs"],
                     seed, [p["name"] for p in info["params"]])


def emit(spec, *, entry: str | None = None, dims=None, schedule: str | None = None,
         rewrites: str | None = None, symbol: str = "ollie_kernel", out_dir=None) -> dict:
    """`ollie emit`: {"source", "header", "schedule", "entry"}; with `out_dir`, also written
    there as <entry>.cpp, <entry>.ollie.h and <entry>.schedule (plus "files": their paths).
    `schedule` is a schedule's text or a file holding one."""
    s = resolve(spec, entry)
    text = _read(schedule, "schedule") if schedule and os.path.isfile(schedule) else (schedule or "")
    k = _ollie.emit(s.path, s.entry, dims_text(dims), text, _path(rewrites), symbol)
    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)
        files = []
        for suffix, key in ((".cpp", "source"), (".ollie.h", "header"), (".schedule", "schedule")):
            path = os.path.join(out_dir, k["entry"] + suffix)
            with open(path, "w") as f:
                f.write(k[key])
            files.append(path)
        k["files"] = files
    return k


def verify(spec, kernel, *, entry: str | None = None, dims=None, level: str = "quick",
           seed: int = 0, timeout: float = 60, threads: int = 0, compiler: str | None = None,
           accept_weak: bool = False, symbol: str | None = None, inputs=None,
           cert=None) -> dict:
    """`ollie verify`: the certificate as a dict ("verdict" is "pass" only for a kernel that
    passed). `kernel` is a .cpp path, the source text, or emit()'s result; `cert` a path to
    write the certificate to. The kernel runs in the sandboxed runner, never here."""
    s = resolve(spec, entry)
    source = kernel_source(kernel)
    arrays = None
    if inputs is not None:
        arrays = [np.ascontiguousarray(a, dtype=np.float64) for a in _ordered(s, dims, inputs)]
    text = _ollie.verify(s.path, s.entry, dims_text(dims), source, s.sha256, level, seed,
                         float(timeout), threads, compiler or "", accept_weak,
                         symbol or kernel_symbol(source), arrays)
    if cert is not None:
        with open(cert, "w") as f:
            f.write(text)
    return json.loads(text)


def kernel_source(kernel) -> str:
    """The kernel's C++ from a path, the text itself, or emit()'s dict."""
    if isinstance(kernel, dict) and "source" in kernel:
        return kernel["source"]
    if isinstance(kernel, os.PathLike) or (isinstance(kernel, str) and "\n" not in kernel):
        return _read(os.fspath(kernel), "kernel")
    if isinstance(kernel, str):
        return kernel
    raise TypeError(f"kernel must be a .cpp path, C++ source or emit()'s result, not "
                    f"{type(kernel).__name__}")


_SYMBOL = re.compile(r'extern\s+"C"\s+void\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(')


def kernel_symbol(source: str) -> str:
    """The name the kernel exports (its first extern "C" void function), else ollie_kernel."""
    m = _SYMBOL.search(source)
    return m.group(1) if m else "ollie_kernel"


def _ordered(s, dims, inputs) -> list:
    if not isinstance(inputs, dict):
        return list(inputs)
    names = [p["name"] for p in check(s.path, entry=s.entry or None, dims=dims)["params"]]
    missing = [n for n in names if n not in inputs]
    if missing:
        raise OllieError(f"inputs: no array for {', '.join(missing)} (the entry's parameters: "
                         f"{', '.join(names)})")
    return [inputs[n] for n in names]


def _path(path) -> str:
    return "" if path is None else os.fspath(path)


def _read(path: str, what: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        raise OllieError(f"cannot read {what} '{path}': {e.strerror}") from None
