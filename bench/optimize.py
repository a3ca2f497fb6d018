#!/usr/bin/env python3
"""The search's benchmark (issue 6): `ollie optimize` for a fixed budget on every example,
then the best kernel it found timed side by side with numpy and jax.jit (XLA), and the
issue's goals checked against those times.

For each example (one after the other, so the runs do not share the CPUs):
  1. `ollie optimize examples/X.py -o WORK/X --time MINm --threads N --seed S` (a run that
     already finished in WORK/X is reused with --reuse). While it runs, its resident memory
     (VmRSS, VmHWM of the ollie process itself, not of its compilers and runners) is sampled
     every few seconds: the process must stay under 2 GiB whatever the run's length.
  2. From WORK/X/run.db: evaluations, the chains' steps per minute in the first and the last
     third of the run (a run must not slow down as it grows), the baseline and best times as the
     search measured them, the best candidate's proposer and rewrites.
Then `bench/peers.py --kernels WORK` times every best kernel against numpy and jax in one
process (rounds rotating, see peers.py), and the goals table is printed:
  - every fused example (softmax, layernorm, rmsnorm, gelu, swiglu_mlp, attention_causal,
    mha_causal, mla_decode) faster than both numpy and jax;
  - mla_decode at least 2x faster than the better of the two, and at least 50% of its roofline;
  - matmul at least 50% of the machine's peak FLOP/s (`ollie calibrate`, same thread count).

Caches: hot by default, for the search (`ollie optimize --hot`) and the peers alike; with
--cold the search times every candidate with cold caches (`--cold`) and peers.py flushes
the caches before every timed call of every method (`--cold`), side by side. A reused
run timed under the other regime is refused. (The issue's mla_decode goal is cold:
--only mla_decode --cold.)

usage: .venv/bin/python bench/optimize.py [--minutes 10] [--only NAME]... [--threads N] [--cold]
           [--work DIR] [--seed S] [--reuse] [--peer-seconds 3] [--markdown FILE] [--json FILE]
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from kernel_io import select_examples

ROOT = Path(__file__).resolve().parents[1]
FUSED = ("softmax", "layernorm", "rmsnorm", "gelu", "swiglu_mlp", "attention_causal", "mha_causal", "mla_decode")
RSS_LIMIT_BYTES = 2 << 30
SAMPLE_SECONDS = 5


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ollie", default=str(ROOT / "build" / "ollie"), help="the ollie binary (default: build/ollie)")
    p.add_argument("--minutes", type=float, default=10.0, help="search budget per example (default 10)")
    p.add_argument("--only", action="append", metavar="NAME", help="only this example; repeatable")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="kernel threads (default: all CPUs)")
    p.add_argument("--work", default=str(ROOT / "build" / "bench-optimize"), help="where the runs go")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cold", action="store_true",
                   help="cold caches for the search and every peer, flushed before every timed call (default: hot)")
    p.add_argument("--reuse", action="store_true",
                   help="reuse a finished run in WORK/X (one whose output kernel exists) instead of searching again")
    p.add_argument("--peer-seconds", type=float, default=3.0, help="peers.py's --seconds per example (default 3)")
    p.add_argument("--json", metavar="FILE", help="write everything measured as JSON")
    p.add_argument("--markdown", metavar="FILE", help="write the tables as Markdown")
    return p.parse_args()


def proc_memory(pid):
    """(VmRSS, VmHWM) of a process in bytes, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return tuple(int(fields[k].split()[0]) * 1024 for k in ("VmRSS", "VmHWM"))
    except (OSError, KeyError, ValueError):
        return None


def entry_of(example):
    out = subprocess.run([ARGS.ollie, "check", str(example), "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["entry"]


def search(example, run_dir, entry):
    """Runs `ollie optimize` on one example; returns what was seen of its memory and exit."""
    facts_file = run_dir / "bench-search.json"
    if ARGS.reuse and (run_dir / f"{entry}.cpp").is_file():
        regime = run_regime(run_dir / "run.db")
        if regime != regime_wanted():
            raise RuntimeError(f"--reuse: the run in {run_dir} was timed with {regime} caches, this benchmark "
                               f"is {regime_wanted()}; give another --work DIR or leave out --reuse")
        return {**(json.loads(facts_file.read_text()) if facts_file.is_file() else {}), "reused": True}
    if run_dir.exists():
        for f in run_dir.iterdir():
            if f.is_file():
                f.unlink()
    cmd = [ARGS.ollie, "optimize", str(example), "-o", str(run_dir), "--time", f"{ARGS.minutes:g}m",
           "--threads", str(ARGS.threads), "--seed", str(ARGS.seed), "--log-every", "30",
           "--no-tuning-db",  # every run searches from scratch (no warm start from earlier ones)
           "--cold" if ARGS.cold else "--hot"]
    print(f"$ {' '.join(cmd)}", file=sys.stderr, flush=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    log = open(run_dir.parent / f"{example.stem}.log", "w")
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    samples = []   # (seconds since start, rss)
    hwm = 0
    while proc.poll() is None:
        m = proc_memory(proc.pid)
        if m:
            samples.append((time.monotonic() - start, m[0]))
            hwm = max(hwm, m[1])
        time.sleep(SAMPLE_SECONDS)
    log.close()
    wall = time.monotonic() - start
    if proc.returncode != 0:
        tail = (run_dir.parent / f"{example.stem}.log").read_text().strip().splitlines()[-5:]
        raise RuntimeError(f"`ollie optimize` on {example.stem} exited {proc.returncode}: " + " / ".join(tail))
    first_minute = [rss for t, rss in samples if t <= 60]
    facts = {"reused": False, "wall_seconds": wall, "rss_peak_bytes": hwm, "minutes": ARGS.minutes,
             "rss_first_minute_bytes": max(first_minute) if first_minute else 0,
             "rss_last_bytes": samples[-1][1] if samples else 0, "rss_samples": len(samples)}
    facts_file.write_text(json.dumps(facts) + "\n")   # for a later --reuse
    return facts


def regime_wanted():
    return "cold" if ARGS.cold else "hot"


def run_regime(db_path):
    """The timing regime a run recorded ("hot" for runs made before ollie recorded one)."""
    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as db:
        options = json.loads(db.execute("SELECT options_json FROM run").fetchone()[0])
    return options.get("timing", {}).get("regime", "hot")


def parse_time(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def run_facts(db_path):
    """What the run database says: evaluations, the chains' pace, baseline and best."""
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    # Candidates evaluated (a confirmed new best has a second evaluation row: its re-timing
    # against the best, docs/search.md "Confirming a new best"); each candidate by its
    # latest evaluation.
    facts = {"evaluations": db.execute("SELECT COUNT(DISTINCT candidate) FROM evaluations").fetchone()[0]}
    facts["confirmations"] = dict(db.execute("SELECT kind, COUNT(*) FROM events WHERE kind IN "
                                             "('confirm', 'not-confirmed') GROUP BY kind").fetchall())
    # The pace is the chains' steps (each is one evaluation, or a reuse of a stored one);
    # the final verification at full, after the last step, is not part of it.
    created = [parse_time(r[0]) for r in db.execute("SELECT created FROM steps ORDER BY id")]
    if len(created) >= 6:
        t0, t1 = created[0], created[-1]
        third = (t1 - t0) / 3
        first = sum(1 for t in created if t <= t0 + third)
        last = sum(1 for t in created if t >= t1 - third)
        facts["steps_per_minute_first_third"] = first / (third / 60) if third > 0 else 0
        facts["steps_per_minute_last_third"] = last / (third / 60) if third > 0 else 0
    base = db.execute("SELECT e.median_seconds FROM evaluations e JOIN candidates c ON c.id = e.candidate "
                      "WHERE c.proposer = 'baseline' AND e.verdict = 'pass' ORDER BY e.id LIMIT 1").fetchone()
    facts["baseline_seconds"] = base[0] if base else 0
    passed = db.execute("SELECT COUNT(*) FROM evaluations e WHERE verdict = 'pass' AND e.id = "
                        "(SELECT MAX(id) FROM evaluations WHERE candidate = e.candidate)").fetchone()[0]
    facts["passed"] = passed
    by_proposer = db.execute("SELECT c.proposer, COUNT(DISTINCT e.candidate) FROM evaluations e "
                             "JOIN candidates c ON c.id = e.candidate GROUP BY c.proposer ORDER BY c.proposer").fetchall()
    facts["evaluations_by_proposer"] = dict(by_proposer)
    db.close()
    return facts


def best_facts(run_dir, entry):
    """The written best kernel: its schedule and rewrites, and the summary's speedup line."""
    out = {}
    for suffix, key in ((".schedule", "schedule"), (".rewrites", "rewrites")):
        f = run_dir / f"{entry}{suffix}"
        if f.is_file():
            out[key] = "; ".join(l for l in f.read_text().splitlines() if l.strip() and not l.startswith("#"))
    cert = run_dir / "certificate.json"
    if cert.is_file():
        out["certificate_verdict"] = json.loads(cert.read_text()).get("verdict", "?")
        out["certificate_level"] = json.loads(cert.read_text()).get("level", "?")
    return out


def goals(rows, peers, peak_flops):
    """(goal, example, measured, target, met) lines."""
    lines = []
    by_name = {r["example"]: r for r in peers["rows"]}
    for name in FUSED:
        r = by_name.get(name)
        if not r or r.get("check") != "OK":
            if name in rows:
                lines.append(("faster than numpy and jax", name, "no measurement", "< 1.00", False))
            continue
        o = r["ollie"]["median_seconds"]
        ratio = o / min(r["numpy"]["median_seconds"], r["jax"]["median_seconds"])
        lines.append(("faster than numpy and jax", name, f"ollie / best peer {ratio:.2f} ({r['best_peer']})",
                      "< 1.00", ratio < 1))
    r = by_name.get("mla_decode")
    if r and r.get("check") == "OK":
        speedup = min(r["numpy"]["median_seconds"], r["jax"]["median_seconds"]) / r["ollie"]["median_seconds"]
        lines.append(("2x the better peer", "mla_decode", f"{speedup:.2f}x", ">= 2.00x", speedup >= 2))
        roof = r["ollie"]["roofline_fraction"]
        lines.append(("50% of roofline", "mla_decode", f"{roof:.2f}", ">= 0.50", roof >= 0.5))
    r = by_name.get("matmul")
    if r and r.get("check") == "OK":
        frac = r["ollie"]["gflops_per_s"] * 1e9 / peak_flops
        lines.append(("50% of peak FLOP/s", "matmul",
                      f"{r['ollie']['gflops_per_s']:.1f} GF/s = {frac:.2f} of {peak_flops / 1e9:.1f}", ">= 0.50",
                      frac >= 0.5))
    for name, row in rows.items():
        s = row.get("search", {})
        if "rss_peak_bytes" in s:
            lines.append(("resident < 2 GiB", name, f"{s['rss_peak_bytes'] / 2**20:.0f} MiB peak", "< 2048 MiB",
                          s["rss_peak_bytes"] < RSS_LIMIT_BYTES))
    return lines


def table(headings, body):
    widths = [max(len(str(x)) for x in col) for col in zip(headings, *body)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(headings, widths)), "-" * (sum(widths) + 2 * len(widths))]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(line, widths)) for line in body]
    return "\n".join(lines)


def md_table(headings, body):
    out = ["| " + " | ".join(headings) + " |", "|" + "---|" * len(headings)]
    out += ["| " + " | ".join(str(c).replace("|", "/") for c in line) + " |" for line in body]
    return "\n".join(out)


def main():
    examples = select_examples(ROOT, ARGS.only, ARGS.ollie)
    work = Path(ARGS.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()[0]

    rows = {}
    for example in examples:
        entry = entry_of(example)
        run_dir = work / example.stem
        row = {"entry": entry}
        try:
            row["search"] = search(example, run_dir, entry)
            row["run"] = run_facts(run_dir / "run.db")
            row["best"] = best_facts(run_dir, entry)
        except (RuntimeError, sqlite3.Error, subprocess.CalledProcessError) as e:
            row["error"] = str(e)
        rows[example.stem] = row
        print(f"{example.stem}: {row.get('error', 'searched')}", file=sys.stderr, flush=True)

    peers_json = work / "peers.json"
    cmd = [sys.executable, str(ROOT / "bench" / "peers.py"), "--ollie", ARGS.ollie, "--threads", str(ARGS.threads),
           "--seconds", f"{ARGS.peer_seconds:g}", "--kernels", str(work), "--json", str(peers_json)]
    if ARGS.cold:
        cmd.append("--cold")
    for name in rows:
        if "error" not in rows[name]:
            cmd += ["--only", name]
    print(f"$ {' '.join(cmd)}", file=sys.stderr, flush=True)
    peers_out = subprocess.run(cmd, capture_output=True, text=True)
    if peers_out.returncode != 0:
        sys.exit(f"peers.py failed ({peers_out.returncode}):\n{peers_out.stderr}")
    peers = json.loads(peers_json.read_text())
    peak = peers["calibration"]["at_threads"]["flops_per_s"]

    search_rows = []
    for name, row in rows.items():
        if "error" in row:
            search_rows.append([name, "FAIL: " + row["error"]] + [""] * 8)
            continue
        run, s, best = row["run"], row["search"], row["best"]
        by_prop = ", ".join(f"{k} {v}" for k, v in run["evaluations_by_proposer"].items())
        pace = (f"{run['steps_per_minute_first_third']:.1f} -> {run['steps_per_minute_last_third']:.1f}"
                if "steps_per_minute_first_third" in run else "-")
        rss = (f"{s['rss_first_minute_bytes'] / 2**20:.0f} / {s['rss_last_bytes'] / 2**20:.0f} / "
               f"{s['rss_peak_bytes'] / 2**20:.0f}" if "rss_peak_bytes" in s else "reused")
        search_rows.append([name, f"{s.get('minutes', ARGS.minutes):g}", str(run["evaluations"]), f"{run['passed']}", by_prop, pace, rss,
                            best.get("certificate_verdict", "-") + "@" + best.get("certificate_level", "-"),
                            best.get("rewrites", "") or "-", best.get("schedule", "")[:80]])
    search_head = ["example", "minutes", "evals", "passed", "by proposer", "steps/min first->last third",
                   "RSS MiB first min / last / peak", "best: certificate", "best: rewrites", "best: schedule"]

    peer_rows = []
    for r in peers["rows"]:
        if r.get("check") != "OK":
            peer_rows.append([r["example"], "FAIL: " + r.get("error", "?")] + [""] * 6)
            continue
        base = rows[r["example"]]["run"].get("baseline_seconds", 0)
        ms = {m: r[m]["median_seconds"] * 1e3 for m in ("numpy", "jax", "ollie")}
        peer_rows.append([r["example"], f"{ms['numpy']:.3f}", f"{ms['jax']:.3f}", f"{ms['ollie']:.3f}",
                          f"{base * 1e3:.3f}" if base else "-",
                          f"{r['ollie_over_best_peer']:.2f} ({r['best_peer']})",
                          f"{r['ollie']['roofline_fraction']:.2f}", f"{r['ollie']['gflops_per_s']:.1f}",
                          f"{r['others_cpus']:.2f}"])
    peer_head = ["example", "numpy ms", "jax ms", "ollie best ms", "baseline ms (search)", "ollie / best peer",
                 "ollie roof", "ollie GF/s", "others"]

    goal_lines = goals(rows, peers, peak)
    goal_body = [[g, n, m, t, "met" if ok else "NOT met"] for g, n, m, t, ok in goal_lines]
    goal_head = ["goal", "example", "measured", "target", ""]

    context = [f"`ollie optimize` per example for the minutes in the table (--minutes {ARGS.minutes:g} for new runs), {ARGS.threads} threads, seed {ARGS.seed}, "
               f"{regime_wanted()} caches (search and peers), "
               f"runs in {work}",
               f"load average {load_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the end"] + peers["context"]
    print("\n".join(context) + "\n")
    print(table(search_head, search_rows) + "\n")
    print(table(peer_head, peer_rows) + "\n")
    print(table(goal_head, goal_body))
    print("\nbaseline ms (search) is the default-schedule kernel's median as the search timed it in its runner; "
          "the other times are medians from peers.py's side-by-side rounds in one process.")
    if ARGS.markdown:
        Path(ARGS.markdown).write_text("# ollie optimize vs numpy vs jax.jit\n\n" + "\n".join(f"- {c}" for c in context)
                                       + "\n\n## The searches\n\n" + md_table(search_head, search_rows)
                                       + "\n\n## Best kernels side by side\n\n" + md_table(peer_head, peer_rows)
                                       + "\n\n## Goals\n\n" + md_table(goal_head, goal_body) + "\n")
    if ARGS.json:
        Path(ARGS.json).write_text(json.dumps({"schema": "ollie-optimize-bench/1", "context": context,
                                               "runs": rows, "peers": peers, "goals": goal_body}, indent=2) + "\n")


ARGS = parse_args()
if __name__ == "__main__":
    main()
