# numpy reads the .npy/.npz files ollie writes (tests/npy/data/ollie_written*, pinned by
# the C++ test NumpyFixtures.GoldenFilesWrittenByOllie) with exact dtypes and values.
import importlib.util
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "npy" / "make_fixtures.py"


def test_numpy_reads_files_written_by_ollie():
    spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.check_ollie_written()
