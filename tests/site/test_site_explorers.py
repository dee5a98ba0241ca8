"""The replayed explorers in headless Chromium, opened from file:// with every other request refused: each control
through each recorded value shows that state's frame, its readouts, and controls that read what the frame shows.
(tests/site/test_site_build.py checks each frame equals the live explorer's picture for its state.)"""

from __future__ import annotations

import pytest

from benchmarks import _site

pytestmark = [pytest.mark.browser, pytest.mark.notebook]


@pytest.fixture(scope="module")
def browser(browser_context):
    """The session's Chromium context (tests/conftest.py); each page here refuses every request but for files."""
    return browser_context


def test_every_control_replays_its_recorded_states_offline(site, browser, request):
    refused: list[str] = []
    by_page: dict = {}
    for page, manifest in site.explorers():
        by_page.setdefault(page, []).append(manifest)
    moves = [m for page, ms in by_page.items() for m in _site.move_everything(browser, page, ms, refused)]
    assert not refused, refused[:5]
    problems = [f"{m.page} explorer {m.explorer} {m.control}={m.value!r}: {p}" for m in moves for p in m.problems]
    assert not problems, problems[:10]
    total = sum(len(c["values"]) for _, man in site.explorers() for c in man["controls"])
    assert len(moves) >= total // 2  # disabled controls and already-set switches are skipped, nothing else
    # Printed at the end of the run (tests/site/conftest.py), never asserted: a time depends on the machine.
    request.config.site_latency = _site.latency_line(moves)


def test_train_plays_the_recorded_run_to_its_last_redraw(site, browser):
    by_page: dict = {}
    for page, manifest in site.explorers():
        by_page.setdefault(page, []).append(manifest)
    runs = [m for ms in by_page.values() for m in ms if m.get("run")]
    assert runs, "the reduced build should hold an explorer that trains (lesson 13)"
    refused: list[str] = []
    problems = [p for page, ms in by_page.items() for p in _site.play_runs(browser, page, ms, refused)]
    assert not refused, refused[:5]
    assert not problems, problems
