"""One reduced build of the static site (two lessons), shared by the site tests; `make site` builds them all.

SITE_LESSONS picks the lessons (default "00 01 07 13 21": the start page's links, an explorer with a slider and toggle
buttons, one with toggle buttons, two sliders and a check box, one that trains, whose recorded run the page's Train
button plays, and the review's glossary, which lesson 1's terms link to).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from website.build import STATES_SCRIPT as STATES
from website.build import build

LESSONS = os.environ.get("SITE_LESSONS", "00 01 07 13 21").split()


class Site:
    """The built folder, the budget table the build printed, and every page's recorded explorers."""

    def __init__(self, out: Path, report: str, lessons: list[str]) -> None:
        self.out, self.report, self.lessons = out, report, lessons
        self.pages = sorted(out.glob("*.html"))

    def explorers(self) -> list[tuple[Path, dict]]:
        """(page, manifest) for every replayed explorer, in page order."""
        found = []
        for page in self.pages:
            for text in STATES.findall(page.read_text(encoding="utf-8")):
                found.append((page, json.loads(text.replace("<\\/", "</"))))
        return found


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    out = tmp_path_factory.mktemp("site") / "site"
    return Site(out, build(out, LESSONS), LESSONS)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """The replayed explorers' switch latency, when the browser test ran (targets: median 30 ms, p90 60 ms)."""
    line = getattr(config, "site_latency", None)
    if line:
        terminalreporter.write_sep("-", "static site: key press or click to the new frame")
        terminalreporter.write_line(line)
