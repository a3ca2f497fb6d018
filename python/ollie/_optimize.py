"""ollie.optimize: the search (the C++ API's open, search and finalize) with its progress
shown as it goes (ollie._progress) and Ctrl-C stopping it cleanly: the search stops after
the evaluation in progress, the best candidates are verified and written, and the run can
be resumed. Candidate kernels run only in the sandboxed runner process."""
from __future__ import annotations

import json
import os

from . import _ollie
from ._progress import Printer, Silent, seconds_of
from ._spec import dims_text, resolve


def optimize(spec=None, *, entry: str | None = None, dims=None, out_dir=None, time=None,
             evals: int = 0, seed: int = 1, chains: int = 2,
             proposers: str = "mutate:3,rewrite:1", threads: int = 0,
             bench_seconds: float = 0.3, resume=None, replay=None, symbol: str | None = None,
             warm_start=(), tuning_db=None, no_tuning_db: bool = False,
             cost_model: str | None = None, cold: bool = False, hot: bool = False,
             accept_weak: bool = False, llm_model: str | None = None,
             llm_protocol: str | None = None, llm_base_url: str | None = None,
             llm_key: str | None = None, llm_max_tokens: int = 0,
             llm_temperature: float = -1, llm_token_budget: int = -1,
             llm_cost_budget: float = -1, llm_prompt=None, proposer_cmd: str | None = None,
             progress=True) -> dict:
    """`ollie optimize` (flags as keywords: time="10m" or seconds, evals, seed, chains, ...).
    Returns the finished run: "reason", "written", "out_dir", "files", "summary",
    "best_seconds", "baseline_seconds", "interrupted", and when a kernel was written its path
    ("kernel") and certificate ("certificate", a dict). `progress`: True (a bar on a terminal
    or in a notebook), False, or an object with the observer's methods (note, started,
    evaluated, new_best, stopped, verifying, verified), each taking one dict or value."""
    options = {"seed": seed, "chains": chains, "proposers": proposers, "threads": threads,
               "bench_seconds": float(bench_seconds), "evals": evals,
               "no_tuning_db": no_tuning_db, "cold": cold, "hot": hot,
               "accept_weak": accept_weak, "warm_start": [os.fspath(w) for w in warm_start],
               "llm_max_tokens": llm_max_tokens, "llm_temperature": float(llm_temperature),
               "llm_token_budget": llm_token_budget, "llm_cost_budget": float(llm_cost_budget)}
    if time is not None:
        options["time"] = f"{time}s" if isinstance(time, (int, float)) else str(time)
    texts = {"out_dir": out_dir, "resume": resume, "replay": replay, "symbol": symbol,
             "tuning_db": tuning_db, "cost_model": cost_model, "llm_model": llm_model,
             "llm_protocol": llm_protocol, "llm_base_url": llm_base_url, "llm_key": llm_key,
             "llm_prompt": llm_prompt, "proposer_cmd": proposer_cmd}
    options.update({k: os.fspath(v) for k, v in texts.items() if v is not None})
    if spec is not None:
        s = resolve(spec, entry)
        options.update(spec_path=s.path, entry=s.entry, dims=dims_text(dims))
    observer = progress
    if progress is True:
        observer = Printer(seconds_of(time), evals)
    elif not progress:
        observer = Silent()
    done = _ollie.optimize(options, observer)
    if done["written"]:
        out = done["out_dir"]
        done["kernel"] = os.path.join(out, done["files"][0])
        with open(os.path.join(out, "certificate.json")) as f:
            done["certificate"] = json.load(f)
    if progress is True:
        observer.finished(done)
    return done
