# pytest fixtures for the numpy cross-check: `spec` runs a test once per examples/*.py.
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spec_harness import example_paths, load_spec  # noqa: E402

_PATHS = example_paths()
_CACHE = {}


def _load(path):
    if path not in _CACHE:
        _CACHE[path] = load_spec(path)
    return _CACHE[path]


@pytest.fixture(params=_PATHS, ids=[p.stem for p in _PATHS])
def spec(request):
    return _load(request.param)
