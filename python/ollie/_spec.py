"""Specs for the ollie package: a spec file's path, or a Python function written into a
temporary spec file (its source, with the helpers, classes, imports and module-level
constants it uses, read with inspect). The text is deterministic, so the same function
gives the same file and the same hash (what ollie.load checks certificates against)."""
from __future__ import annotations

import dis
import hashlib
import inspect
import os
import tempfile
import textwrap
import types
from dataclasses import dataclass

from . import _ollie

OllieError = _ollie.OllieError


@dataclass(frozen=True)
class Spec:
    """A spec file, the entry to use ("" for the only annotated one) and its text."""

    path: str
    entry: str
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


def resolve(spec, entry: str | None = None) -> Spec:
    """The Spec for a path or a function (whose name is then the entry)."""
    if isinstance(spec, (str, os.PathLike)):
        path = os.fspath(spec)
        try:
            with open(path, "rb") as f:
                text = f.read().decode()
        except OSError as e:
            raise OllieError(f"cannot read spec '{path}': {e.strerror}") from None
        return Spec(path, entry or "", text)
    if inspect.isfunction(spec):
        text = function_spec_text(spec)
        return Spec(write_spec(spec.__name__, text), entry or spec.__name__, text)
    raise TypeError(
        f"spec must be a path to a numpy spec file or a Python function, not {type(spec).__name__}"
    )


def _global_names(code: types.CodeType):
    """Names `code` (and the functions, lambdas and comprehensions inside it) loads as globals."""
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            yield ins.argval
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _global_names(const)


_PLAIN = (int, float, bool, str, type(None))


def _is_plain(value) -> bool:
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, (tuple, list)):
        return all(_is_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, _PLAIN) and _is_plain(v) for k, v in value.items())
    return False


def _source(obj) -> str:
    try:
        return textwrap.dedent(inspect.getsource(obj)).rstrip() + "\n"
    except (OSError, TypeError) as e:
        raise OllieError(
            f"cannot read the source of {obj.__qualname__} ({e}); define it in a file, "
            "or write the spec file yourself and pass its path"
        ) from None


class _Collector:
    """Walks a function's globals: imports, constants, then helper functions and classes."""

    def __init__(self, module_globals: dict):
        self.module_globals = module_globals
        self.imports: dict[str, str] = {}
        self.constants: dict[str, str] = {}
        self.definitions: list[str] = []
        self.seen: set[int] = set()

    def visit(self, obj) -> None:
        if id(obj) in self.seen:
            return
        self.seen.add(id(obj))
        codes = [obj.__code__] if inspect.isfunction(obj) else [
            m.__code__ for m in vars(obj).values() if inspect.isfunction(m)
        ]
        for code in codes:
            for name in _global_names(code):
                self.add(name, obj.__globals__ if inspect.isfunction(obj) else self.module_globals)
        if inspect.isfunction(obj):  # closure variables become module-level ones in the file
            for name, value in inspect.getclosurevars(obj).nonlocals.items():
                self.add(name, {name: value})
        self.definitions.append(_source(obj))

    def add(self, name: str, scope: dict) -> None:
        if name not in scope or name in self.imports or name in self.constants:
            return
        value = scope[name]
        if isinstance(value, types.ModuleType):
            module = value.__name__
            self.imports[name] = f"import {module}" if module == name else f"import {module} as {name}"
        elif inspect.isfunction(value) or inspect.isclass(value):
            self.visit(value)
        elif _is_plain(value):
            self.constants[name] = f"{name} = {value!r}"
        else:
            raise OllieError(
                f"the spec function uses the global '{name}', a {type(value).__name__}, which "
                "cannot be written into a spec file; use a number, string, tuple or dict, or a "
                "helper function"
            )


def function_spec_text(fn: types.FunctionType) -> str:
    """The spec file's text for `fn`."""
    collector = _Collector(fn.__globals__)
    if "DIMS" in fn.__globals__:
        collector.add("DIMS", fn.__globals__)
    collector.visit(fn)
    where = f"{fn.__module__}.{fn.__qualname__}"
    lines = [f'"""Spec written by ollie from the Python function {where}."""']
    lines += sorted(collector.imports.values())
    lines += [collector.constants[k] for k in sorted(collector.constants)]
    return "\n".join(lines) + "\n\n\n" + "\n\n".join(collector.definitions)


def write_spec(name: str, text: str) -> str:
    """Writes `text` to <tmp>/ollie-specs/<hash>/<name>.py (once) and returns the path."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder = os.path.join(tempfile.gettempdir(), f"ollie-specs-{os.getuid()}", digest)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{name}.py")
    if not os.path.exists(path):
        partial = f"{path}.{os.getpid()}.tmp"
        with open(partial, "w") as f:
            f.write(text)
        os.replace(partial, path)
    return path


def dims_text(dims) -> str:
    """--dims text from None, "M=64,N=32" or {"M": 64, "N": 32}."""
    if dims is None:
        return ""
    if isinstance(dims, str):
        return dims
    if isinstance(dims, dict):
        return ",".join(f"{k}={int(v)}" for k, v in dims.items())
    raise TypeError(f"dims must be a dict such as {{'M': 64}} or text 'M=64', not {type(dims).__name__}")
