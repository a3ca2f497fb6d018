# The report's live page in a real browser (issue 19): a short `ollie optimize` of a small
# softmax, paused (SIGSTOP) once its run database holds the baseline and a candidate, so
# that the database stays as the page shows it; `ollie serve` of that database while the
# run is open; one headless Chromium load of the live page (the DOM after its script ran,
# and a screenshot). Checked: the page's script ran under its Content-Security-Policy and
# read state.json; both progress charts hold one point per candidate the database has
# evaluated; the best time shown is the database's (computed here with sqlite3); the
# screenshot is not blank and shows the chart. Chromium missing fails the test with what
# to run (scripts/setup.sh). The fixture stops the search, the server and every browser
# process, also when a check fails. Cost: about 6.5 s of CPU with a warm build cache, 9 s
# with cold kernel builds (Chromium takes 1.5 s of it).
import json
import os
import signal
import sqlite3
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import browser

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("OLLIE_BUILD_DIR", ROOT / "build"))
OLLIE = Path(os.environ.get("OLLIE_BIN", (BUILD if BUILD.is_absolute() else ROOT / BUILD) / "ollie"))

SPEC = '''import numpy as np

DIMS = dict(M=8, N=64)


def softmax(x: "f32[M, N]") -> "f32[M, N]":
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''
SCREEN = (1000, 1200)  # the summary and the first chart
PROGRESS_CHARTS = ("best time over wall-clock time", "best time over evaluations")


def evaluations_served(url) -> int:
    """state.json's evaluation count; 0 while the server answers 503 (no database yet)."""
    try:
        with urllib.request.urlopen(url + "state.json", timeout=10) as r:
            return json.load(r)["evaluations"]
    except urllib.error.HTTPError as e:
        assert e.code == 503, e
        return 0


def candidates_evaluated(db) -> int:
    try:
        return browser.run_facts(db)["evaluated"]
    except sqlite3.OperationalError:  # not created yet, or its tables not yet
        return 0


def wait_for_candidates(search, db, count, timeout_s=120):
    deadline = time.monotonic() + timeout_s
    while candidates_evaluated(db) < count:
        assert search.proc.poll() is None, search.output()
        assert time.monotonic() < deadline, search.output()
        time.sleep(0.1)


@pytest.fixture(scope="module")
def chromium(tmp_path_factory):
    try:
        return browser.Chromium(tmp_path_factory.mktemp("chromium-profile"))
    except RuntimeError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="module")
def page(tmp_path_factory, chromium):
    """The live page of a paused run, loaded once: its DOM, a screenshot and the database."""
    assert OLLIE.exists(), f"{OLLIE} is not built (cmake --build build --target ollie)"
    d = tmp_path_factory.mktemp("browser_run")
    (d / "softmax.py").write_text(SPEC)
    db = d / "run" / "run.db"
    search = browser.OllieProcess([
        str(OLLIE), "optimize", str(d / "softmax.py"), "-o", str(d / "run"), "--evals", "200",
        "--seed", "1", "--threads", "1", "--bench-seconds", "0.02", "--no-tuning-db"])
    served = None
    try:
        wait_for_candidates(search, db, 2)  # the baseline and one candidate
        os.kill(search.proc.pid, signal.SIGSTOP)  # the run stays open, its database as it is
        served = browser.OllieProcess([str(OLLIE), "serve", str(db), "--port", "0"])
        url = served.wait_for(r"(http://127\.0\.0\.1:\d+/)")[1]
        assert evaluations_served(url) >= 2
        dom = chromium.dom(url, screenshot=d / "page.png", size=SCREEN)
        yield {"db": db, "dom": browser.parse_dom(dom), "screenshot": d / "page.png"}
    finally:
        browser.stop_group(search.proc, signal.SIGKILL)  # a stopped process takes SIGKILL
        if served:
            served.stop()


def test_the_live_page_in_headless_chromium(page):
    """One test, so that pytest -n loads the page once (xdist would run a module's fixture
    once per worker that gets one of its tests)."""
    check_the_script_ran_and_read_the_state(page["dom"])
    check_a_point_per_candidate_and_the_databases_best(page["dom"], page["db"])
    check_the_screenshot_is_not_blank(page["screenshot"])


def check_the_script_ran_and_read_the_state(dom):
    # The inline script runs only when its hash is the one in the page's CSP.
    assert dom.texts["live"].startswith("live: "), dom.texts.get("live")
    assert "the server does not answer" not in dom.texts["live"]


def check_a_point_per_candidate_and_the_databases_best(dom, db):
    facts = browser.run_facts(db)
    assert facts["evaluated"] >= 2
    for chart in PROGRESS_CHARTS:
        assert dom.points[chart] == facts["evaluated"], (chart, dom.points, facts)
    assert int(dom.texts["candidate-count"]) == facts["evaluated"]
    assert facts["best_seconds"] > 0, facts
    shown = browser.seconds_of(dom.texts["best-time"])
    assert shown == pytest.approx(facts["best_seconds"], rel=6e-4), (dom.texts["best-time"], facts)
    assert dom.points["roofline"] >= 1  # the baseline at least


def check_the_screenshot_is_not_blank(png):
    pixels = browser.png_pixels(png)
    assert pixels.shape[:2] == (SCREEN[1], SCREEN[0])
    rgb = pixels[..., :3].astype(int)
    colours, counts = np.unique(rgb.reshape(-1, 3), axis=0, return_counts=True)
    assert len(colours) >= 16, f"{len(colours)} colours: blank or nearly"
    assert counts.max() < 0.95 * counts.sum(), "one colour covers 95% of the screenshot"
    # Ink: dark pixels (text, axes), not only the page's background and white panels.
    assert (rgb.max(axis=-1) < 96).mean() > 0.002
    # The first chart drawn: its roofline (dashed, #d62728) and coloured lines and points.
    roof = (np.abs(rgb - (0xD6, 0x27, 0x28)).max(axis=-1) < 40).sum()
    assert roof >= 100, f"{roof} pixels of the roofline's colour"
    coloured = (rgb.max(axis=-1) - rgb.min(axis=-1) > 60).sum()
    assert coloured >= 1000, f"{coloured} coloured pixels"
