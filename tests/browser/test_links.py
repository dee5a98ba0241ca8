"""Glossary links land on their term: clicked in a lesson, they open the review's glossary with the term on screen.

JupyterLab 4 renders only the cells near the viewport by default, so a heading 7,000 px down the review did not
exist when the link asked for it; the server here reads the settings `make lab` installs (jupyter/overrides.json5).
"""

from __future__ import annotations

import pytest
from _pages import ON_SCREEN_JS

pytestmark = pytest.mark.browser

REVIEW = "21_review.ipynb"
# (lesson, link target): the start page's link to the glossary itself, and two terms far down it.
LINKS = [
    ("00_start_here.ipynb", "Glossary"),
    ("01_one_head_is_not_enough.ipynb", "head"),
    ("02_why_split_heads.ipynb", "flop"),
]
OPEN_MS = 120_000


def open_notebook(page, lab, notebook: str) -> None:
    """Open `notebook` alone and wait until its cells are in the page (no cells are run)."""
    page.goto(lab.server.page_url(notebook), timeout=OPEN_MS)
    page.wait_for_function(
        """p => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
                  return !!w && !!w.context && w.context.path === p && w.context.isReady
                         && w.content.widgets.length > 0; }""",
        arg=notebook,
        timeout=OPEN_MS,
    )


@pytest.mark.parametrize(("lesson", "fragment"), LINKS)
def test_glossary_link_lands_on_its_term(lab, lesson, fragment):
    page = lab.context.new_page()
    try:
        open_notebook(page, lab, lesson)
        link = page.locator(f'.jp-RenderedMarkdown a[href*="{REVIEW}"][href$="#{fragment}"]').first
        link.scroll_into_view_if_needed()
        link.click()
        page.wait_for_function(
            "a => { const r = (" + ON_SCREEN_JS + ")(a); return !!r && r.found && r.onScreen; }",
            arg=[REVIEW, fragment],
            timeout=OPEN_MS,
        )
        # Still there a moment later: JupyterLab does not jump back to the top once the review has rendered.
        page.wait_for_timeout(1500)
        where = page.evaluate(ON_SCREEN_JS, [REVIEW, fragment])
        assert where["onScreen"], f"{lesson}: #{fragment} left the screen: {where}"
        assert where["text"].lower() == fragment.lower().replace("-", " "), where
        assert where["scrolled"] > 1000, f"the review did not scroll down to #{fragment}: {where}"
    finally:
        page.close()
        lab.server.shutdown_kernels()
