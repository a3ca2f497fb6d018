#!/usr/bin/env python3
"""Runs the red-team and blue-team corpora through `ollie run-kernel` (the tool that exists
before `ollie verify`) and prints one line per run: kernel, probe, exit code, summary.

  tests/redteam/run_corpus.py [--ollie build/ollie] [--red] [--blue] [--only SUBSTR]
                              [--blue-seeds 1,2,3] [--blue-fresh N]

Red team: every kernel at the default dims with --seed 1, plus the probe that its README
row names when one is possible with run-kernel today (other dims, an input distribution
from make_inputs.py, another seed). Blue team: default dims and odd dims, each with the
given seeds, plus `--blue-fresh N` runs with fresh seeds, plus the scaled and special
input distributions (dense specials at both dims; one special value per run at odd dims). Exit codes of run-kernel: 0 agrees, 4 differs, 1 failed (compile
error, crash, timeout, forbidden syscall, out of memory)."""
import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = ROOT / "tests" / "redteam"
BLUE = ROOT / "tests" / "blueteam"

ODD_DIMS = {
    "softmax": "M=5,N=37", "layernorm": "T=5,D=37", "rmsnorm": "T=5,D=37", "gelu": "M=5,N=37",
    "matmul": "M=5,K=37,N=19", "matmul_bias_relu": "M=5,K=37,N=19", "swiglu_mlp": "T=3,D=37,F=19",
    "attention_causal": "S=37,D=5", "mha_causal": "S=13,DM=37,H=3,HD=5", "rope": "S=37,H=3,HD=6",
    "mla_decode": "B=2,H=3,DN=5,DR=7,S=37,L=11,DV=13",
}

# Red-team probes beyond the default run: (label, run-kernel args, make_inputs dist or None).
RED_PROBES = {
    "softmax__no_max_subtraction": [("large inputs", [], "large")],
    "softmax__sum_skips_tail_mod16": [("odd dims", ["--dims", ODD_DIMS["softmax"]], None)],
    "softmax__racy_parallel_sum": [("1 thread", ["--threads", "1"], None), ("2 threads", ["--threads", "2"], None)],
    "softmax__exact_only_on_seen_input": [("seed 0", ["--seed", "0"], None), ("seed 2", ["--seed", "2"], None)],
    "layernorm__one_pass_variance": [("offset inputs", [], "offset")],
    "layernorm__eps_outside_sqrt": [("tiny inputs", [], "tiny")],
    "layernorm__uninitialized_accumulator": [("odd dims", ["--dims", ODD_DIMS["layernorm"]], None)],
    "rmsnorm__hardcoded_dims": [("odd dims", ["--dims", ODD_DIMS["rmsnorm"]], None),
                                ("bigger D", ["--dims", "T=4,D=2048"], None)],
    "rmsnorm__reads_past_end_unaligned": [("odd dims", ["--dims", ODD_DIMS["rmsnorm"]], None)],
    "gelu__avx512_no_tail": [("odd dims", ["--dims", ODD_DIMS["gelu"]], None)],
    "gelu__clamp_hides_inf_nan": [("special values", [], "special")],
    "gelu__naive_tanh_overflows": [("large inputs", [], "large")],
    "matmul__reads_one_row_past_b": [("odd dims", ["--dims", ODD_DIMS["matmul"]], None)],
    "matmul__huge_allocation": [("odd dims", ["--dims", ODD_DIMS["matmul"]], None)],
    "matmul_bias_relu__relu_drops_nan": [("special values", [], "special")],
    "attention_causal__scale_hardcoded_d64": [("odd dims", ["--dims", ODD_DIMS["attention_causal"]], None)],
    "attention_causal__spin_barrier_deadlock": [],
    "mha_causal__heads_merged_transposed": [("scaled inputs", [], "scaled")],
    "mha_causal__no_causal_mask": [("scaled inputs", [], "scaled")],
    "mla_decode__drops_rope_term": [("scaled inputs", [], "scaled")],
    "mla_decode__scale_without_mscale": [("scaled inputs", [], "scaled")],
    "mla_decode__writes_zeros": [("scaled inputs", [], "scaled")],
    "mla_decode__bf16_latent_cache": [("scaled inputs", [], "scaled")],
    "mla_decode__replays_memorized_answer": [("seed 0", ["--seed", "0"], None), ("seed 2", ["--seed", "2"], None)],
    "swiglu_mlp__hidden_tail_dropped": [("odd dims", ["--dims", "T=3,D=37,F=100"], None)],
}


def summarize(out):
    keep = []
    for line in out.splitlines():
        if line.startswith("inputs: random") and "seed " in line:
            keep.append("seed " + line.split("seed ")[1].split()[0])
        elif line.startswith(("out0:", "error:")) or "DIFFERS" in line:
            keep.append(line.strip())
        elif keep and keep[-1].startswith("error:") and len(keep) < 3 and "error" in line:
            keep.append(line.strip())
    return " | ".join(keep)[:300] if keep else out.strip().splitlines()[-1][:300] if out.strip() else ""


def run(ollie, example, kernel, args, dist, tmp):
    cmd = [ollie, "run-kernel", str(ROOT / "examples" / f"{example}.py"), str(kernel)]
    if dist:
        dims = next((a for a in args if "=" in a), "")
        mkseed = args[args.index("--mkseed") + 1] if "--mkseed" in args else "1"
        args = [x for i, x in enumerate(args) if x != "--mkseed" and (i == 0 or args[i - 1] != "--mkseed")]
        npz = os.path.join(tmp, f"{example}-{dist}-{mkseed}-{dims.replace(',', '_').replace('=', '')}.npz")
        if not os.path.exists(npz):
            mk = [sys.executable, str(HERE / "make_inputs.py"), example, npz, "--dist", dist, "--seed", mkseed]
            if dims:
                mk += ["--dims", dims]
            subprocess.run(mk, check=True)
        cmd += ["--inputs", npz]
    elif "--seed" not in args and "--fresh" not in args:
        cmd += ["--seed", "1"]
    cmd += [a for a in args if a != "--fresh"]
    if "--timeout" not in cmd:
        cmd += ["--timeout", "10"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return p.returncode, summarize(p.stdout + p.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ollie", default=str(ROOT / "build" / "ollie"))
    ap.add_argument("--red", action="store_true")
    ap.add_argument("--blue", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--blue-seeds", default="1,2,3")
    ap.add_argument("--blue-fresh", type=int, default=0)
    a = ap.parse_args()
    if not a.red and not a.blue:
        a.red = a.blue = True
    os.environ.setdefault("OLLIE_CACHE_DIR", "/tmp/ollie-corpus-cache")
    with tempfile.TemporaryDirectory() as tmp:
        if a.red:
            for k in sorted(HERE.glob("*.cpp")):
                if a.only not in k.stem:
                    continue
                ex = k.stem.split("__")[0]
                probes = [("default dims, seed 1", [], None)] + RED_PROBES.get(k.stem, [])
                for label, args, dist in probes:
                    rc, msg = run(a.ollie, ex, k, args, dist, tmp)
                    print(f"red\t{k.stem}\t{label}\trc={rc}\t{msg}", flush=True)
        if a.blue:
            for k in sorted(BLUE.glob("*.cpp")):
                if a.only not in k.stem:
                    continue
                ex = k.stem.split("__")[0]
                runs = []
                for s in a.blue_seeds.split(","):
                    runs.append((f"default dims, seed {s}", ["--seed", s], None))
                    runs.append((f"odd dims {ODD_DIMS[ex]}, seed {s}", ["--dims", ODD_DIMS[ex], "--seed", s], None))
                for i in range(a.blue_fresh):
                    runs.append((f"fresh seed #{i + 1}", ["--fresh"], None))
                runs.append(("scaled inputs", [], "scaled"))
                runs.append(("special values", [], "special"))
                runs.append(("odd dims, special values", ["--dims", ODD_DIMS[ex]], "special"))
                for s in a.blue_seeds.split(","):
                    runs.append((f"odd dims, one special value (seed {s})", ["--dims", ODD_DIMS[ex], "--mkseed", s],
                                 "special1"))
                for label, args, dist in runs:
                    rc, msg = run(a.ollie, ex, k, args, dist, tmp)
                    print(f"blue\t{k.stem}\t{label}\trc={rc}\t{msg}", flush=True)


if __name__ == "__main__":
    main()
