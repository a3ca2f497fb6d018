"""ollie.load: a verified kernel as a Python callable. The kernel is refused unless its
certificate says it passed and was made for this very spec text and kernel source (their
SHA-256). A call checks the inputs' dtypes and shapes against the spec (binding its dims
from the shapes), passes arrays that are C-contiguous and 64-byte aligned (the kernel ABI,
docs/design.md section 3) without a copy, copies the others into aligned buffers (and
warns once), allocates the outputs, and runs the kernel with the GIL released."""
from __future__ import annotations

import hashlib
import json
import math
import os
import warnings

import numpy as np

from . import _ollie
from ._api import check, kernel_symbol
from ._spec import OllieError, Spec, dims_text, resolve

ALIGNMENT = 64
DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "bool": np.bool_,
          "f16": np.float16}


def _numpy_dtype(dtype: str) -> np.dtype:
    if dtype not in DTYPES:
        raise TypeError(f"ollie.load does not call kernels with {dtype} tensors yet "
                        f"(supported: {', '.join(DTYPES)}); use the C ABI (docs/design.md)")
    return np.dtype(DTYPES[dtype])


class OllieCopyWarning(UserWarning):
    """An input had to be copied before a kernel call (unaligned or not C-contiguous)."""


def empty(shape, dtype) -> np.ndarray:
    """An uninitialized C-contiguous array starting on a 64-byte boundary (no copy when
    passed to a loaded kernel)."""
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return _aligned_empty(math.prod(shape) * dtype.itemsize, dtype, shape)


def _aligned_empty(nbytes: int, dtype: np.dtype, shape: tuple) -> np.ndarray:
    """empty() for a shape and dtype already checked, `nbytes` in all: one buffer with room
    to slide to the boundary, viewed at it (0.5 us where slicing and reshaping took 1.2)."""
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    return np.ndarray(shape, dtype, raw, _ollie.aligned_offset(raw))


def aligned(array) -> np.ndarray:
    """`array` as a C-contiguous, 64-byte aligned numpy array (itself when it already is)."""
    array = np.asarray(array)
    if array.flags.c_contiguous and array.ctypes.data % ALIGNMENT == 0:
        return array
    out = empty(array.shape, array.dtype)
    out[...] = array
    return out


def _read_json(path: str) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise OllieError(f"cannot read the certificate '{path}': {e.strerror}; verify the kernel "
                         "first (ollie.verify(spec, kernel, cert=PATH))") from None
    except json.JSONDecodeError as e:
        raise OllieError(f"the certificate '{path}' is not JSON: {e}") from None


def _locate(run_dir_or_kernel, certificate) -> tuple[str, dict]:
    """The kernel's path and its certificate, from a run directory or a kernel file."""
    target = os.fspath(run_dir_or_kernel)
    folder = target if os.path.isdir(target) else os.path.dirname(target)
    cert_path = os.fspath(certificate) if certificate else os.path.join(folder, "certificate.json")
    cert = _read_json(cert_path)
    if not os.path.isdir(target):
        return target, cert
    entry = cert.get("spec", {}).get("entry", "")
    kernel = os.path.join(target, f"{entry}.cpp")
    if not os.path.isfile(kernel):
        raise OllieError(f"'{target}' has a certificate for '{entry}' but no {entry}.cpp; name "
                         "the kernel file itself")
    return kernel, cert


def _check_certificate(cert: dict, spec: Spec, source: str, where: str) -> None:
    verdict = cert.get("verdict")
    if verdict != "pass":
        raise OllieError(f"{where}: the certificate's verdict is '{verdict}', not 'pass'; only a "
                         "verified kernel is loaded")
    if cert.get("spec", {}).get("sha256") != spec.sha256:
        raise OllieError(
            f"{where}: the certificate is for a spec with sha256 {cert.get('spec', {}).get('sha256')}"
            f", but this spec's ({spec.path}) is {spec.sha256}: the spec changed since the kernel "
            "was verified; verify or optimize again")
    if cert.get("kernel", {}).get("sha256") != hashlib.sha256(source.encode()).hexdigest():
        raise OllieError(f"{where}: the kernel's source is not the one the certificate was made "
                         "for (its sha256 differs); verify it again")
    if spec.entry and cert.get("spec", {}).get("entry") != spec.entry:
        raise OllieError(f"{where}: the certificate is for entry '{cert['spec'].get('entry')}', "
                         f"not '{spec.entry}'")


def load(run_dir_or_kernel, spec, *, entry: str | None = None, dims=None,
         symbol: str | None = None, certificate=None, compiler: str | None = None) -> "Kernel":
    """The verified kernel in `run_dir_or_kernel` (an `optimize -o` directory, or a .cpp file
    with certificate.json beside it or at `certificate`) as a callable over numpy arrays and
    anything that speaks DLPack. `spec` is the spec path or function it was verified against;
    `dims` default to the certificate's."""
    kernel_path, cert = _locate(run_dir_or_kernel, certificate)
    s = resolve(spec, entry)
    with open(kernel_path) as f:
        source = f.read()
    _check_certificate(cert, s, source, kernel_path)
    if dims is None:
        dims = cert.get("dims") or None
    info = check(s.path, entry=s.entry or cert["spec"]["entry"], dims=dims)
    native = _ollie.Kernel(s.path, info["entry"], dims_text(dims), source,
                           symbol or kernel_symbol(source), compiler or "")
    return Kernel(native, info, bool(cert.get("kernel", {}).get("generic", True)), kernel_path)


def _axis_code(text: str):
    return compile(text, f"<axis {text}>", "eval")


class Kernel:
    """A loaded kernel: kernel(*inputs, out=None) returns its output (a tuple for several)."""

    def __init__(self, native, info: dict, generic: bool, path: str):
        self._native = native
        self.entry = info["entry"]
        self.path = path
        self.generic = generic
        self.params = info["params"]
        self.results = info["results"]
        self.dims_order = info["dims_order"]
        self.dims = dict(info["dims"])
        self.copies = 0  # inputs copied into aligned buffers, over all calls
        self._warned = False
        self._in_dtypes = [_numpy_dtype(p["dtype"]) for p in self.params]
        self._out_dtypes = [_numpy_dtype(r["dtype"]) for r in self.results]
        self._axes = [[_axis_code(a) for a in p["axes"]] for p in self.params + self.results]
        self._bindings: dict[tuple, tuple] = {}

    def __repr__(self) -> str:
        sig = ", ".join(f"{p['name']}: {p['dtype']}{p['shape']}" for p in self.params)
        res = ", ".join(f"{r['dtype']}{r['shape']}" for r in self.results)
        return f"<ollie kernel {self.entry}({sig}) -> ({res}) from {self.path}>"

    def __call__(self, *inputs, out=None):
        if len(inputs) != len(self.params):
            names = ", ".join(p["name"] for p in self.params)
            raise TypeError(f"{self.entry} takes {len(self.params)} inputs ({names}), got {len(inputs)}")
        arrays = [a if type(a) is np.ndarray else self._from_dlpack(i, a)
                  for i, a in enumerate(inputs)]
        dims, out_shapes, allocations = self._bind(tuple([a.shape for a in arrays]))
        if out is None:
            outs = [_aligned_empty(*a) for a in allocations]
        else:
            outs = self._check_out(out, out_shapes, arrays)
        while True:  # the native side passes the arrays it can and names the first it cannot
            refused = self._native.run(arrays, dims, outs)
            if refused < 0:
                break
            if refused >= len(arrays):
                raise ValueError(f"out[{refused - len(arrays)}] must be C-contiguous and 64-byte "
                                 "aligned (ollie.empty allocates such arrays)")
            arrays[refused] = self._fix(refused, arrays[refused])
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _from_dlpack(self, i: int, value) -> np.ndarray:
        name = self.params[i]["name"]
        if not hasattr(value, "__dlpack__"):
            raise TypeError(f"input '{name}': a numpy array or an array that speaks DLPack "
                            f"(PyTorch, jax), not {type(value).__name__}")
        try:
            return np.from_dlpack(value)
        except (BufferError, RuntimeError, TypeError, ValueError) as e:
            raise OllieError(f"input '{name}': numpy cannot view it through DLPack ({e}); "
                             "ollie kernels run on the CPU: pass a CPU array (e.g. .cpu() or "
                             ".detach())") from None

    def _fix(self, i: int, value: np.ndarray) -> np.ndarray:
        """Input `i`, which the native side refused: a dtype error, or an aligned copy."""
        name = self.params[i]["name"]
        if value.dtype != self._in_dtypes[i]:
            want = self._in_dtypes[i].name
            raise TypeError(f"input '{name}' is {value.dtype.name} but {self.entry} takes "
                            f"{self.params[i]['dtype']} ({want}); convert with .astype(np.{want})")
        self.copies += 1
        if not self._warned:
            self._warned = True
            why = "not C-contiguous" if not value.flags.c_contiguous else "not 64-byte aligned"
            warnings.warn(
                f"{self.entry}: input '{name}' is {why} (the kernel ABI needs both), so it was "
                "copied; allocate with ollie.empty or ollie.aligned to avoid copies (warned once; "
                "kernel.copies counts them)", OllieCopyWarning, stacklevel=3)
        return aligned(value)

    def _bind(self, shapes: tuple) -> tuple:
        """The dims (ABI order), the output shapes and how to allocate each output (bytes,
        dtype, shape) for these input shapes (cached)."""
        found = self._bindings.get(shapes)
        if found is None:
            found = self._bind_new(shapes)
            if len(self._bindings) < 64:
                self._bindings[shapes] = found
        return found

    def _bind_new(self, shapes: tuple) -> tuple:
        bound: dict[str, int] = {}
        source: dict[str, str] = {}
        for p, shape in zip(self.params, shapes):
            if len(shape) != len(p["axes"]):
                raise ValueError(f"input '{p['name']}' has {len(shape)} axes ({_fmt(shape)}) but "
                                 f"{self.entry} takes {p['dtype']}{p['shape']}")
            for axis, size in zip(p["axes"], shape):
                if axis in self.dims and bound.setdefault(axis, size) != size:
                    raise ValueError(f"input '{p['name']}' has {axis} = {size} but input "
                                     f"'{source[axis]}' has {axis} = {bound[axis]}")
                source.setdefault(axis, p["name"])
        values = {d: bound.get(d, self.dims[d]) for d in self.dims_order}
        if not self.generic and values != {d: self.dims[d] for d in self.dims_order}:
            raise ValueError(f"this kernel is specialized (verified at {_dims(self.dims)} only); "
                             f"the inputs give {_dims(values)}")
        expected = [tuple(int(eval(code, {"__builtins__": {}}, values)) for code in axes)
                    for axes in self._axes]
        for p, shape, want in zip(self.params, shapes, expected):
            if tuple(shape) != want:
                raise ValueError(f"input '{p['name']}' has shape ({_fmt(shape)}) but {self.entry} "
                                 f"takes {p['shape']} = ({_fmt(want)}) at {_dims(values)}")
        out_shapes = expected[len(self.params):]
        allocations = [(math.prod(shape) * dtype.itemsize, dtype, shape)
                       for shape, dtype in zip(out_shapes, self._out_dtypes)]
        return [values[d] for d in self.dims_order], out_shapes, allocations

    def _check_out(self, out, shapes, inputs) -> list:
        outs = [out] if isinstance(out, np.ndarray) else list(out)
        if len(outs) != len(self.results):
            raise TypeError(f"out: {self.entry} has {len(self.results)} outputs, got {len(outs)}")
        for i, (o, shape, dtype) in enumerate(zip(outs, shapes, self._out_dtypes)):
            if not isinstance(o, np.ndarray) or o.dtype != dtype or o.shape != tuple(shape):
                raise ValueError(f"out[{i}]: a numpy {dtype.name} array of shape ({_fmt(shape)}) "
                                 "is needed")
            if not o.flags.writeable:
                raise ValueError(f"out[{i}] is read-only")
            if any(np.may_share_memory(o, a) for a in inputs):
                raise ValueError(f"out[{i}] overlaps an input; kernels need outputs of their own")
        return outs


def _fmt(shape) -> str:
    return ", ".join(str(s) for s in shape)


def _dims(values: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())
