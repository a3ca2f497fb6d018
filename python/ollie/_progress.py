"""Progress of ollie.optimize for a person: a tqdm bar in a notebook (when tqdm is
installed), a live line with a bar and the remaining time on a terminal, else a log line
every ten seconds. It receives the C++ API's OptimizeObserver events as dicts."""
from __future__ import annotations

import re
import sys
import time as _time

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def seconds_of(text) -> float:
    """"90s", "10m", "2h", "1d" or a number of seconds; 0 for None or text it cannot read
    (the C++ API rejects that text with the flag's own message)."""
    if text is None:
        return 0.0
    if isinstance(text, (int, float)):
        return float(text)
    m = re.fullmatch(r"\s*([0-9.]+)\s*([smhd]?)\s*", str(text))
    return float(m.group(1)) * _UNITS[m.group(2) or "s"] if m else 0.0


def clock(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s // 3600}:{s // 60 % 60:02}:{s % 60:02}" if s >= 3600 else f"{s // 60:02}:{s % 60:02}"


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    ip = shell.get_ipython() if shell and hasattr(shell, "get_ipython") else None
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


class Printer:
    """The default observer of ollie.optimize."""

    def __init__(self, budget_seconds: float, budget_evals: int, stream=None):
        self.stream = stream or sys.stderr
        self.budget_seconds = budget_seconds
        self.budget_evals = budget_evals
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.bar = self._tqdm() if _in_notebook() else None
        self.last_log = 0.0
        self.live = False

    def _tqdm(self):
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return None
        total = self.budget_seconds or self.budget_evals or None
        unit = "s" if self.budget_seconds else "eval"
        return tqdm(total=total, unit=unit, desc="ollie optimize", dynamic_ncols=True)

    def _print(self, line: str) -> None:
        if self.bar is not None:
            self.bar.write(line)
            return
        if self.live:
            self.stream.write("\r\033[K")
            self.live = False
        self.stream.write(line + "\n")
        self.stream.flush()

    def remaining(self, e: dict) -> float | None:
        if self.budget_seconds:
            return max(0.0, self.budget_seconds - e["elapsed_seconds"])
        if self.budget_evals and e["evals_per_minute"] > 0:
            return max(0, self.budget_evals - e["evaluations"]) * 60 / e["evals_per_minute"]
        return None

    def fraction(self, e: dict) -> float:
        if self.budget_seconds:
            return min(1.0, e["elapsed_seconds"] / self.budget_seconds)
        if self.budget_evals:
            return min(1.0, e["evaluations"] / self.budget_evals)
        return 0.0

    def status(self, e: dict) -> str:
        best, base = e["best_seconds"], e["baseline_seconds"]
        speedup = f" = {base / best:.2f}x the baseline" if best > 0 else ""
        return (f"{e['evaluations']} evals, best {best * 1e3:.4g} ms{speedup}, "
                f"{e['roofline_fraction'] * 100:.0f}% of the roofline")

    # ---- the observer's events
    def note(self, line: str) -> None:
        self._print(line)

    def started(self, e: dict) -> None:
        resumed = " (resumed)" if e["resumed"] else ""
        self._print(f"ollie optimize {e['entry']} ({e['spec_path']}): run database "
                    f"{e['db_path']}{resumed}")
        self._print(f"timing: {e['regime']}: {e['regime_why']}")

    def evaluated(self, e: dict) -> None:
        left = self.remaining(e)
        if self.bar is not None:
            self.bar.n = round(e["elapsed_seconds"] if self.budget_seconds else e["evaluations"])
            self.bar.set_postfix_str(self.status(e), refresh=True)
            return
        left_text = f", {clock(left)} left" if left is not None else ""
        line = f"[{clock(e['elapsed_seconds'])}{left_text}] {self.status(e)}"
        if self.tty:
            filled = int(self.fraction(e) * 20)
            self.stream.write(f"\r\033[K|{'#' * filled}{'.' * (20 - filled)}| {line}")
            self.stream.flush()
            self.live = True
        elif _time.monotonic() - self.last_log >= 10:
            self.last_log = _time.monotonic()
            self._print(line)

    def new_best(self, e: dict) -> None:
        pass

    def stopped(self, reason: str) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        self._print(f"stopped: {reason}")

    def verifying(self, candidate: int) -> None:
        self._print(f"verifying candidate {candidate} at full level ...")

    def verified(self, e: dict) -> None:
        if e["verdict"] != "pass":
            self._print(f"  {e['verdict']}: {e['message']}")

    def finished(self, done: dict) -> None:
        """After optimize returns (not an observer event): the summary, as the CLI prints it."""
        if not done["written"]:
            self._print("no candidate passed the full verification; nothing written")
        else:
            self._print(done["tuning_note"].rstrip() or done["summary"].rstrip())
            if done["tuning_note"]:
                self._print(done["summary"].rstrip())
            self._print(f"wrote {done['out_dir']}/{{{', '.join(done['files'])}}}")
        if done["interrupted"]:
            self._print(f"stopped by Ctrl-C; resume with ollie.optimize(resume={done['db_path']!r})")


class Silent:
    """An observer that shows nothing (progress=False)."""

    def __getattr__(self, name):
        return lambda *args: None
