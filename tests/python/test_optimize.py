# ollie.optimize from Python: the observer's events reach a Python object, Ctrl-C (SIGINT)
# stops the search cleanly after the evaluation in progress, the best verified kernel is
# written, and it loads and agrees with numpy.
import os
import signal

import numpy as np

import kernels_for_tests as k
import ollie


class InterruptAfterFirstEvaluation:
    """An observer that records the events and sends SIGINT at the first evaluation."""

    def __init__(self):
        self.events = []

    def __getattr__(self, name):
        return lambda *args: self.events.append(name)

    def evaluated(self, e):
        self.events.append("evaluated")
        assert e["evaluations"] >= 1 and e["baseline_seconds"] > 0
        if self.events.count("evaluated") == 1:
            os.kill(os.getpid(), signal.SIGINT)


def test_sigint_stops_the_search_cleanly_and_the_best_kernel_loads(tmp_path):
    observer = InterruptAfterFirstEvaluation()
    run = ollie.optimize(k.relu_scale, out_dir=tmp_path / "run", evals=500, threads=1,
                         bench_seconds=0.05, no_tuning_db=True, progress=observer)
    assert run["interrupted"] and run["reason"] == "interrupted"
    assert observer.events.count("evaluated") == 1
    assert observer.events.index("started") < observer.events.index("stopped")
    assert run["written"] and run["certificate"]["verdict"] == "pass"
    assert run["certificate"]["level"] == "full"
    fast = ollie.load(run["out_dir"], k.relu_scale)
    x = ollie.aligned(np.random.default_rng(3).standard_normal((8, 16), dtype=np.float32))
    np.testing.assert_allclose(fast(x), k.relu_scale_numpy(x), rtol=1e-6)
