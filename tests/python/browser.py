# Helpers for the real-browser tests of the report (test_report_browser.py): headless
# Chromium (Debian's `chromium`, which scripts/setup.sh installs) run once per page, its
# whole process group stopped afterwards; an `ollie` child process whose stderr is read
# on a thread; a PNG decoder (zlib and numpy only); the DOM's chart points and best time;
# and the best time the run database holds, computed from its rows with sqlite3.
import os
import re
import shutil
import signal
import sqlite3
import struct
import subprocess
import threading
import time
import zlib
from html.parser import HTMLParser

import numpy as np

SETUP_HINT = "run scripts/setup.sh (it installs Debian's `chromium` package)"


def find_chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    raise RuntimeError(f"headless Chromium is not installed (no `chromium` on PATH): {SETUP_HINT}")


def stop_group(proc: subprocess.Popen, first=signal.SIGINT, wait_s=10.0) -> None:
    """Stops a child started with start_new_session=True: `first` to it alone (SIGINT: a
    clean stop), then SIGKILL to what is left of its process group."""
    if proc.poll() is None:
        try:
            os.kill(proc.pid, first)
            proc.wait(timeout=wait_s)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # stray children (Chromium's renderers)
    except ProcessLookupError:
        pass
    if proc.poll() is None:
        proc.wait()


class Chromium:
    """Runs headless Chromium on one URL at a time, in a fresh profile under `profile`."""

    def __init__(self, profile):
        self.binary = find_chromium()
        self.profile = profile

    def _run(self, url, args, timeout_s=60):
        cmd = [self.binary, "--headless", "--disable-gpu", "--no-first-run",
               "--hide-scrollbars", f"--user-data-dir={self.profile}", *args, url]
        if os.geteuid() == 0:
            cmd.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"chromium did not finish {url} in {timeout_s} s")
        finally:
            stop_group(proc, first=signal.SIGKILL)
        if proc.returncode != 0:
            raise AssertionError(f"chromium failed on {url} ({proc.returncode}): "
                                 f"{err.decode(errors='replace')[-2000:]}")
        return out.decode()

    def dom(self, url, budget_ms=3000, screenshot=None, size=(1000, 900)) -> str:
        """The DOM after the page's scripts ran for `budget_ms` of virtual time; with
        `screenshot` (a path), also a PNG of the window (`size`) in the same run."""
        shot = [f"--screenshot={screenshot}", f"--window-size={size[0]},{size[1]}"]
        return self._run(url, [f"--virtual-time-budget={budget_ms}", "--dump-dom",
                               *(shot if screenshot else [])])


class OllieProcess:
    """`ollie ARGS` as a child in its own session; its stderr lines are collected."""

    def __init__(self, args):
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)
        self.lines = []
        self.threads = [threading.Thread(target=self._read, args=(s,), daemon=True)
                        for s in (self.proc.stdout, self.proc.stderr)]
        for t in self.threads:
            t.start()

    def _read(self, stream):
        for line in stream:
            self.lines.append(line)

    def wait_for(self, pattern, timeout_s=60):
        """The first match of `pattern` in the output, waiting for it."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in list(self.lines):
                m = re.search(pattern, line)
                if m:
                    return m
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"no {pattern!r} from ollie; it said:\n{''.join(self.lines)}")

    def output(self):
        return "".join(self.lines)

    def stop(self, wait_s=60.0):
        stop_group(self.proc, signal.SIGINT, wait_s)
        for t in self.threads:
            t.join(timeout=5)


def png_pixels(path) -> np.ndarray:
    """An 8-bit, non-interlaced RGB or RGBA PNG's pixels as an array (height, width, channels)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, f"unexpected PNG kind {header}"
    channels = 3 if color == 2 else 4
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, 1 + width * channels)
    out = np.zeros((height, width * channels), np.uint8)
    prev = np.zeros(width * channels, np.uint8)
    for y in range(height):
        out[y] = prev = _unfilter(raw[y, 0], raw[y, 1:], prev, channels)
    return out.reshape(height, width, channels)


def _unfilter(kind, row, prev, bpp):
    if kind == 0:
        return row
    if kind == 2:
        return row + prev  # uint8 wraps, as PNG wants
    if kind == 1:  # each byte adds the reconstructed one bpp to its left: a running sum
        return np.cumsum(row.reshape(-1, bpp), axis=0, dtype=np.uint64).astype(np.uint8).ravel()
    r, p = row.tolist(), prev.tolist()  # Average and Paeth depend on the left byte: one by one
    for i in range(len(r)):
        a = r[i - bpp] if i >= bpp else 0
        b = p[i]
        if kind == 3:
            r[i] = (r[i] + (a + b) // 2) & 255
        else:
            c = p[i - bpp] if i >= bpp else 0
            pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
            r[i] = (r[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    return np.array(r, np.uint8)


class ChartPoints(HTMLParser):
    """Counts the candidate points (<g class="pt ...">) in each <svg aria-label=...> chart,
    and keeps the text of the elements with an id."""

    def __init__(self):
        super().__init__()
        self.points = {}
        self.texts = {}
        self._svg = None
        self._open_ids = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and "aria-label" in a:
            self._svg = a["aria-label"]
            self.points.setdefault(self._svg, 0)
        if tag == "g" and self._svg and "pt" in a.get("class", "").split():
            self.points[self._svg] += 1
        if "id" in a:
            self.texts[a["id"]] = ""
            self._open_ids.append((tag, a["id"]))

    def handle_endtag(self, tag):
        if tag == "svg":
            self._svg = None
        if self._open_ids and self._open_ids[-1][0] == tag:
            self._open_ids.pop()

    def handle_data(self, data):
        for _, i in self._open_ids:
            self.texts[i] += data


def parse_dom(html) -> ChartPoints:
    p = ChartPoints()
    p.feed(html)
    return p


UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def seconds_of(text) -> float:
    """'1.234 ms' -> 0.001234 (the page's time_text)."""
    m = re.fullmatch(r"\s*([0-9.eE+-]+) (s|ms|us|ns)\s*", text)
    assert m, f"not a time: {text!r}"
    return float(m[1]) * UNITS[m[2]]


def run_facts(db_path) -> dict:
    """From the run database: how many candidates were evaluated, and the best time as the
    search's clock counts it (the candidate `optimize` wrote, i.e. the last final-verify
    that passed, else the fastest pass: its ratio to the baseline times the baseline's
    median; the baseline itself at its median, as the report shows it)."""
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        evaluated = con.execute("SELECT COUNT(DISTINCT candidate) FROM evaluations").fetchone()[0]
        latest = {c: (v, med, ratio) for c, v, med, ratio in con.execute(
            "SELECT candidate, verdict, median_seconds, ratio_vs_baseline FROM evaluations "
            "ORDER BY id")}
        baseline = con.execute(
            "SELECT MIN(id) FROM candidates WHERE proposer = 'baseline'").fetchone()[0]
        finals = [t for (t,) in con.execute(
            "SELECT text FROM events WHERE kind = 'final-verify' ORDER BY id")]
    finally:
        con.close()
    base_s = latest[baseline][1] if baseline in latest and latest[baseline][0] == "pass" else 0

    def time_of(c):
        verdict, med, ratio = latest[c]
        if verdict != "pass" or med <= 0:
            return 0
        if c == baseline:  # the baseline at its own time, not its noisy ratio to itself
            return med
        return base_s * ratio if base_s > 0 and ratio > 0 else med

    passed = [int(re.match(r"candidate (\d+): pass$", t)[1]) for t in finals
              if t.endswith(": pass")]
    times = {c: time_of(c) for c in latest if time_of(c) > 0}
    best = passed[-1] if passed else min(times, key=times.get, default=None)
    return {"evaluated": evaluated, "best": best,
            "best_seconds": time_of(best) if best in latest else 0}
