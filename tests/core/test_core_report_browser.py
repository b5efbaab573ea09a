"""The HTML report in a real headless browser (Debian's chromium; `.ci/run` installs it):
the contents sidebar is laid out beside the page, every paper and part is linked from it,
long tables are collapsed, and wide tables scroll inside their box."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from icml26.core.experiment import Claim, Experiment, Part, Result
from icml26.core.report import LONG_TABLE_ROWS, write_report
from icml26.core.runner import run_experiment

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                                "(.ci/run installs Debian's chromium)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]


@dataclass(frozen=True)
class _Config:
    rows: int = 40


def _run(config, seed):
    return {"x": float(seed)}


def _summarize(jobs, config):
    long = pd.DataFrame({"i": range(config.rows), "value": np.arange(config.rows) / 3})
    wide = pd.DataFrame([{f"a fairly long column name {k}": k * 1.5 for k in range(30)}])
    return Result(tables={"long table": long, "wide table": wide},
                  claims=[Claim.at_least("x is non-negative", 0.0, 0.0).quick()])


def _experiments():
    return [Experiment(slug=f"paper{i}", title=f"Paper {i}", parts=[
        Part(name=name, run=_run, summarize=_summarize, quick=_Config(), full=_Config())
        for name in ("E1", "E2")]) for i in range(3)]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("browser") / "r"
    write_report([run_experiment(e, quick=True) for e in _experiments()], out,
                 command="icml26 reproduce --quick")
    return out / "index.html"


def _chromium(*args, timeout=60):
    import tempfile

    with tempfile.TemporaryDirectory() as profile:      # a new, empty profile each time
        return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=timeout)


def test_dom_has_a_contents_sidebar_linking_every_paper_and_part(report):
    dom = _chromium("--dump-dom", report.as_uri()).stdout
    nav = re.search(r"<nav id=\"contents\".*?</nav>", dom, re.DOTALL)
    assert nav, dom[:500]
    for i in range(3):
        assert f"href=\"#paper{i}\"" in nav.group(0)
        assert f"href=\"#paper{i}-E1\"" in nav.group(0) and f"href=\"#paper{i}-E2\"" in nav.group(0)
        assert f"id=\"paper{i}-E2\"" in dom                  # every link has its target
    # the 40-row table is collapsed, the 1-row wide table is shown in a scrolling box
    assert dom.count("<details class=\"table\">") == 6 and 40 > LONG_TABLE_ROWS
    assert "(40 rows)" in dom


def test_screenshot_shows_the_sidebar_beside_the_content(report, tmp_path):
    shot = tmp_path / "shot.png"
    _chromium(f"--screenshot={shot}", "--window-size=1280,900", report.as_uri())
    assert shot.is_file(), "chromium wrote no screenshot"
    from matplotlib.image import imread

    image = imread(str(shot))[..., :3]
    assert image.shape[:2] == (900, 1280)
    sidebar, content = image[:, 40:150], image[:, 400:1200]
    # the sidebar's background (#fafafa) fills the left column; the content is not blank
    near = np.abs(sidebar - np.array([0xfa, 0xfa, 0xfa]) / 255).max(axis=2) < 0.02
    assert near.mean() > 0.5, near.mean()
    assert content.std() > 0.02
