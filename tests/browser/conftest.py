"""One JupyterLab server and one headless Chromium for all browser tests; each notebook is visited once.

Without Chromium or Playwright the tests skip with the reason; under CI=true they fail instead, so a CI image
that lost its browser cannot pass silently. MHA_LESSON_NOTEBOOKS points the tests at another folder of
notebooks (for trying the tests themselves on deliberately broken notebooks).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks import _lab

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = Path(os.environ.get("MHA_LESSON_NOTEBOOKS", ROOT / "notebooks"))
BUILD = ROOT / "build"
MOVES = 2  # key presses away from the start per slider (and as many back): 4 timed moves per slider
LATENCY = pytest.StashKey[str]()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize `notebook` over the lessons present at collection time."""
    if "notebook" in metafunc.fixturenames:
        metafunc.parametrize("notebook", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))


class Lab:
    """The shared server and browser; `visit(name)` runs a notebook on first use and remembers the outcome."""

    def __init__(self, server: _lab.LabServer, context: object) -> None:
        self.server, self.context = server, context
        self.visits: dict[str, _lab.Visit | BaseException] = {}

    def visit(self, notebook: str) -> _lab.Visit:
        """The record of a learner's session on `notebook` (re-raises if the visit itself failed)."""
        if notebook not in self.visits:
            try:
                self.visits[notebook] = _lab.visit_notebook(
                    self.context, self.server, notebook, moves=MOVES, screenshot_dir=BUILD / "screenshots"
                )
            except Exception as exc:
                self.visits[notebook] = exc
        outcome = self.visits[notebook]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


@pytest.fixture(scope="session")
def lab(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, browser_context: object
) -> Iterator[Lab]:
    """Start the server once (the browser is the session's, tests/conftest.py); stop it and every kernel at the
    end, whatever happened."""
    with _lab.lab_server(NOTEBOOKS, tmp_path_factory.mktemp("jupyterlab")) as server:
        lab = Lab(server, browser_context)
        yield lab
    visits = [v for v in lab.visits.values() if isinstance(v, _lab.Visit)]
    rows, other_rows = _lab.latency_rows(visits), _lab.latency_rows(visits, sliders=False)
    if rows or other_rows:
        _lab.write_latency(rows, BUILD / "browser_latency.json", other_rows)
    timings = [
        f"{v.notebook:<44} open {v.open_s:5.1f} s  run {v.run_s:5.1f} s  {v.sliders:2} sliders "
        f"{v.other_controls:2} other controls {v.controls_s:5.1f} s"
        for v in visits
    ]
    request.config.stash[LATENCY] = "\n".join([*timings, "", _lab.latency_table(rows, other_rows)])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """Print per-notebook timings and the latency table after the run (also saved to build/)."""
    if LATENCY in config.stash:
        terminalreporter.section("JupyterLab in Chromium: timings and control latency")
        terminalreporter.write_line(config.stash[LATENCY])
