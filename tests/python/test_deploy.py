# The launch recipes of docs/distributed.md (deploy/): the Kubernetes Job's structure (it is
# not run on a cluster here: there is none) and the worker command its pods run, with a
# stand-in `ollie` that prints its arguments; the budget flags both recipes name exist in
# `ollie optimize --help`. The Slurm recipe runs for real in the e2e test
# (tests/e2e/distributed_test.cpp, on a one-node Slurm cluster).
import os
import subprocess
from pathlib import Path

import pytest

# pyyaml is pinned in requirements.txt (scripts/setup.sh installs it); an older .venv
# skips these checks until setup.sh is run again.
yaml = pytest.importorskip("yaml", reason="pyyaml is missing: run scripts/setup.sh")

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "deploy" / "kubernetes" / "job.yaml"


def job():
    with open(JOB) as f:
        docs = list(yaml.safe_load_all(f))
    assert len(docs) == 1
    return docs[0]


def test_the_job_runs_workers_in_parallel_with_the_password_from_a_secret():
    j = job()
    assert j["apiVersion"] == "batch/v1" and j["kind"] == "Job"
    assert j["metadata"]["name"]
    spec = j["spec"]
    assert isinstance(spec["completions"], int) and isinstance(spec["parallelism"], int)
    assert 1 < spec["parallelism"] <= spec["completions"]
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] in ("OnFailure", "Never")
    (container,) = pod["containers"]
    env = {e["name"]: e for e in container["env"]}
    for name in ("OLLIE_STORAGE", "OLLIE_RUN", "OLLIE_SPEC", "OLLIE_BUDGET", "OLLIE_THREADS"):
        assert isinstance(env[name]["value"], str), name
    # No password in the file: the URL has none, PGPASSWORD comes from a Secret.
    assert env["OLLIE_STORAGE"]["value"].startswith("postgresql://")
    assert ":" not in env["OLLIE_STORAGE"]["value"].split("//", 1)[1].split("@")[0]
    assert "value" not in env["PGPASSWORD"]
    assert env["PGPASSWORD"]["valueFrom"]["secretKeyRef"]["key"]
    # The CPUs the worker's --threads use are the pod's.
    cpus = container["resources"]["requests"]["cpu"]
    assert cpus == container["resources"]["limits"]["cpu"] == env["OLLIE_THREADS"]["value"]
    mounts = {m["name"] for m in container["volumeMounts"]}
    assert mounts <= {v["name"] for v in pod["volumes"]}


def test_a_pod_runs_one_worker_with_the_runs_options_and_budget(tmp_path):
    j = job()
    (container,) = j["spec"]["template"]["spec"]["containers"]
    stub = tmp_path / "ollie"
    stub.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    stub.chmod(0o755)
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    env.update(PATH=f"{tmp_path}:{os.environ['PATH']}", HOSTNAME="ollie-matmul-x7k2p",
               PGPASSWORD="from-the-secret")
    out = subprocess.run(container["command"] + container["args"], env=env, check=True,
                         capture_output=True, text=True).stdout.split("\n")[:-1]
    assert out[:2] == ["optimize", env["OLLIE_SPEC"]]
    assert out[out.index("--threads") + 1] == env["OLLIE_THREADS"]
    for word in env["OLLIE_ARGS"].split() + env["OLLIE_BUDGET"].split():
        assert word in out
    assert out[-2:] == ["-o", "/out/ollie-matmul-x7k2p"]
    assert "--storage" not in out  # ollie reads OLLIE_STORAGE and OLLIE_RUN itself


def test_the_recipes_budget_flags_exist():
    help_text = subprocess.run([os.environ.get("OLLIE_BIN", str(ROOT / "build" / "ollie")),
                                "optimize", "--help"], check=True, capture_output=True,
                               text=True).stdout
    for flag in ("--time", "--evals", "--session-evals", "--run-time", "--allow-mixed-machines"):
        assert flag in help_text, flag
    for recipe in (JOB, ROOT / "deploy" / "slurm" / "workers.sbatch"):
        text = recipe.read_text()
        for flag in ("--time", "--evals", "--session-evals", "--run-time"):
            assert flag in text, (recipe, flag)
