"""ollie from Python: a superoptimizing compiler for tensor kernels written as numpy.

    import ollie
    run = ollie.optimize(my_numpy_function, time="2m")       # search; the best is verified
    fast = ollie.load(run["out_dir"], my_numpy_function)     # a callable over numpy arrays

check, eval, emit, verify and optimize take a spec file's path or a Python function (its
source, helpers and constants are written into a spec file) and the `ollie` command's flags
as keywords; load calls a verified kernel in this process. docs/python.md has the details.
"""
from __future__ import annotations

import os as _os

_here = _os.path.dirname(_os.path.abspath(__file__))
# The sandboxed runner that candidate kernels run in, shipped beside the extension module
# (in a build tree: a link to <build>/ollie-runner). The C++ API looks for it here.
if "OLLIE_RUNNER" not in _os.environ and _os.path.exists(_os.path.join(_here, "ollie-runner")):
    _os.environ["OLLIE_RUNNER"] = _os.path.realpath(_os.path.join(_here, "ollie-runner"))

from ._api import Reference, check, emit, eval, verify  # noqa: E402
from ._load import Kernel, OllieCopyWarning, aligned, empty, load  # noqa: E402
from ._optimize import optimize  # noqa: E402
from ._spec import OllieError, function_spec_text  # noqa: E402

__all__ = ["check", "eval", "emit", "verify", "optimize", "load", "Kernel", "Reference",
           "OllieError", "OllieCopyWarning", "empty", "aligned", "function_spec_text"]
