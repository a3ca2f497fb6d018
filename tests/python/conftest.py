# pytest setup for the Python package's tests: imports `ollie` from the build tree
# (<build>/python, where the main CMake build puts the extension module beside links to
# python/ollie/*.py and ollie-runner; $OLLIE_BUILD_DIR, default build/), and gives the
# tests one kernel emitted and verified once for the whole session.
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("OLLIE_BUILD_DIR", ROOT / "build"))
if not BUILD.is_absolute():
    BUILD = ROOT / BUILD
sys.path.insert(0, str(BUILD / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

try:
    import ollie  # noqa: F401
except ImportError as e:  # the module was not built (OLLIE_PYTHON=AUTO found no nanobind)
    pytest.skip(f"the ollie Python module is not built in {BUILD}/python ({e}); "
                "scripts/setup.sh installs nanobind, then rebuild", allow_module_level=True)

import kernels_for_tests as k  # noqa: E402


@pytest.fixture(scope="session")
def verified(tmp_path_factory):
    """A run-like directory with relu_scale's kernel and its passing certificate."""
    out = tmp_path_factory.mktemp("relu_scale")
    emitted = ollie.emit(k.relu_scale, out_dir=out)
    cert = ollie.verify(k.relu_scale, emitted, seed=1, cert=out / "certificate.json")
    assert cert["verdict"] == "pass", cert["message"]
    return out
