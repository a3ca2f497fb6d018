# A method as the entry, end to end through the CLI: `ollie check/eval/emit/verify --entry
# RMSNorm.forward` on a model class (check and eval against numpy run in test_spec_corpus.py),
# the default entry when the method is the only annotated one, and a located class error.
from pathlib import Path

from spec_harness import run_ollie

SPEC = Path(__file__).resolve().parent / "specs" / "class_rmsnorm.py"


def test_emit_and_verify_a_class_entry(tmp_path):
    for entry in (["--entry", "RMSNorm.forward"], []):
        out = tmp_path / ("named" if entry else "default")
        proc = run_ollie(["emit", str(SPEC), *entry, "--out-dir", str(out)])
        assert proc.returncode == 0, proc.stderr
        kernel = out / "RMSNorm.forward.cpp"
        assert kernel.is_file(), proc.stdout
        proc = run_ollie(["verify", str(SPEC), str(kernel), *entry])
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "all" in proc.stdout and "suites agree with the reference" in proc.stdout, proc.stdout


def test_eval_and_check_name_the_method(tmp_path):
    proc = run_ollie(["check", str(SPEC), "--entry", "RMSNorm.forward"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("entry RMSNorm.forward(weight: f32[D], x: f32[T, D])"), proc.stdout
    proc = run_ollie(["eval", str(SPEC), "--entry", "RMSNorm.forward", "--out", str(tmp_path / "o.npz")])
    assert proc.returncode == 0 and (tmp_path / "o.npz").is_file(), proc.stderr
    proc = run_ollie(["check", str(SPEC), "--entry", "RMSNorm.backward"])
    assert proc.returncode != 0
    assert "no function 'RMSNorm.backward'" in proc.stderr and "RMSNorm.forward" in proc.stderr


def test_class_error_is_located(tmp_path):
    spec = tmp_path / "net.py"
    spec.write_text('import numpy as np\n\n\nclass Net(Module):\n    pass\n')
    proc = run_ollie(["check", str(spec)])
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith(f"{spec}:4:11: error: class inheritance is not supported"), proc.stderr
    assert "hint: write 'Net' without a base class" in proc.stderr, proc.stderr
