"""A smoke test in Notebook 7 (`jupyter notebook`), the other client many learners use: two lessons run without
errors, their widgets render, every slider of one explorer moves with the arrow keys and redraws, and a glossary
link lands on its term. The JupyterLab tests (test_lessons.py) try every control of every lesson.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from _pages import ON_SCREEN_JS, open_and_run

from benchmarks import _lab

pytestmark = pytest.mark.browser

LESSONS = ["01_one_head_is_not_enough.ipynb", "02_why_split_heads.ipynb"]
REVIEW = "21_review.ipynb"
# The same links as test_links.py: the start page's link to the glossary itself and two terms far down it.
LINKS = [
    ("00_start_here.ipynb", "Glossary"),
    ("01_one_head_is_not_enough.ipynb", "head"),
    ("02_why_split_heads.ipynb", "flop"),
]
NOTEBOOKS = Path(os.environ.get("MHA_LESSON_NOTEBOOKS", Path(__file__).resolve().parents[2] / "notebooks"))
MOVES = 2  # key presses away from the start per slider, and back (as conftest.MOVES)
# Notebook 7.6.5's own page raises this once at load beside this environment's JupyterLab 4.6, with none of the
# project's settings or plugins (reproduced with a plain `jupyter notebook` on one lesson): not ours to fix here.
# Every other page error still fails the test.
UPSTREAM_ERROR = "Cannot read properties of undefined (reading 'schema')"


def page_error(visit: _lab.Visit):
    """A page-error handler that records every error but the known upstream one."""
    return lambda exc: None if UPSTREAM_ERROR in str(exc) else visit.errors.append(f"page error: {exc}")


@pytest.fixture(scope="module")
def nb7(tmp_path_factory: pytest.TempPathFactory, browser_context: object) -> Iterator[tuple[_lab.LabServer, object]]:
    """A Notebook 7 server on a copy of the lessons, stopped at the end, and the session's Chromium context."""
    if importlib.util.find_spec("notebook") is None:
        reason = "the notebook package (Notebook 7) is not installed (pip install -e '.[test]')"
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests must run under CI=true, but {reason}", pytrace=False)
        pytest.skip(reason)
    workdir = tmp_path_factory.mktemp("notebook7")
    with _lab.lab_server(NOTEBOOKS, workdir, client="notebook") as server:
        yield server, browser_context


@pytest.mark.parametrize("lesson", LESSONS)
def test_a_lesson_runs_and_one_explorer_answers_every_slider_in_notebook_7(nb7, lesson):
    server, context = nb7
    visit = _lab.Visit(lesson)
    page = context.new_page()
    page.on("pageerror", page_error(visit))
    try:
        open_and_run(page, server, lesson)
        cells = page.evaluate("() => __mha.cells()")
        _lab.check_cells(cells, visit)
        assert not visit.errors, "\n".join(visit.errors)
        assert not visit.widget_problems, "\n".join(visit.widget_problems)
        groups = [g for g in page.evaluate("() => __mha.groups()") if g["name"]]
        assert groups, f"{lesson}: no explorer in the page"
        group = groups[0]
        name = _lab.explorer_name(lesson, group, cells)
        page.locator(f'[data-mha-group="{group["gid"]}"]').scroll_into_view_if_needed()
        sliders = [c for c in group["controls"] if c["kind"] == "slider" and not _lab.is_disabled(page, c)]
        assert sliders, f"{name}: no enabled slider"
        for slider in sliders:
            moves = _lab.move_slider(page, group, slider, name, MOVES)
            assert moves, f"{name} / {slider['label']}: no key press moved it"
            visit.moves += moves
        assert not visit.slider_problems, "\n".join(visit.slider_problems)
    finally:
        page.close()
        server.shutdown_kernels()


@pytest.mark.parametrize("link", LINKS, ids=lambda link: link[0][:2])
def test_a_glossary_link_lands_on_its_term_in_notebook_7(nb7, link):
    """Notebook 7 opens the linked notebook in a new browser tab (and drops the fragment: the front-end plugin puts
    it back); the term must be on screen there."""
    server, context = nb7
    lesson, fragment = link
    review = REVIEW
    page = context.new_page()
    opened = None
    try:
        page.goto(server.page_url(lesson), timeout=_lab.OPEN_TIMEOUT_S * 1e3)
        page.wait_for_function("p => __mha.open(p)", arg=lesson, timeout=_lab.OPEN_TIMEOUT_S * 1e3)
        link = page.locator(f'.jp-RenderedMarkdown a[href*="{review}"][href$="#{fragment}"]').first
        link.scroll_into_view_if_needed()
        with context.expect_page(timeout=60_000) as new_tab:
            link.click()
        opened = new_tab.value
        check = "a => { const r = (" + ON_SCREEN_JS + ")(a); return !!r && r.found && r.onScreen; }"
        opened.wait_for_function(check, arg=[review, fragment], timeout=_lab.OPEN_TIMEOUT_S * 1e3)
        opened.wait_for_timeout(1500)
        where = opened.evaluate(ON_SCREEN_JS, [review, fragment])
        assert where["onScreen"] and where["scrolled"] > 1000, where
        assert where["text"].lower() == fragment.lower(), where
        assert opened.url.endswith(f"{review}#{fragment}"), opened.url  # the fragment is back on the address
    finally:
        if opened is not None:
            opened.close()
        page.close()
        server.shutdown_kernels()
