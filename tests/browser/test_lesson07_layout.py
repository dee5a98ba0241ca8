"""Lesson 7's cross-attention explorer keeps its height on the page: ticking "causal mask" in cross-attention shows the
warning in the readout beside the picture (it used to replace the figure, and the page shrank by about 370 px), and
neither the mode nor the lengths change the height (issue 30). The readout's lines do not wrap, even at 1024 px
beside the file browser."""

from __future__ import annotations

import pytest
from _pages import open_and_run

from benchmarks import _lab
from mha_lesson.widgets.connections import READOUT_LINES

pytestmark = pytest.mark.browser

LESSON = "07_causal_mask.ipynb"
EXPLORER = "CrossAttentionExplorer"

# The explorer's height, its picture's (0 when hidden), the readout's text and how many lines it takes on the page.
LAYOUT_JS = r"""
(gid) => {
  const root = document.querySelector(`[data-mha-group="${gid}"]`);
  const img = root.querySelector('img.mha-figure'), text = root.querySelector('.mha-readout .widget-html-content');
  const message = root.querySelector('.mha-message');
  // Lines on the page: the text's boxes, a new line where a box starts below the last line's middle (sub- and
  // superscripts sit a few px off their line).
  const range = document.createRange();
  range.selectNodeContents(text);
  const tops = [...range.getClientRects()].filter((r) => r.width > 0).map((r) => r.top).sort((a, b) => a - b);
  const step = parseFloat(getComputedStyle(text).lineHeight) || 16;
  let lines = 0, last = -Infinity;
  for (const top of tops) if (top > last + step / 2) { lines++; last = top; }
  return {height: root.getBoundingClientRect().height, image: img.getBoundingClientRect().height,
          readout: text.textContent, lines, lineHeight: step, messageShown: !!message && message.offsetParent !== null};
}
"""


def settle(page) -> None:
    """Wait for the kernel to take the change and the page to show it."""
    page.wait_for_timeout(400)
    page.wait_for_function("() => __mha.idle()", timeout=_lab.MOVE_TIMEOUT_S * 1e3)
    page.wait_for_timeout(400)


@pytest.mark.parametrize("laptop", [False, True], ids=["1280 px", "1024 px with the file browser"])
def test_the_explorer_keeps_its_height_and_its_picture_in_every_mode(lab, laptop):
    page = lab.context.new_page()
    try:
        open_and_run(page, lab.server, LESSON)
        if laptop:
            page.set_viewport_size(_lab.LAPTOP_VIEWPORT)
            page.evaluate("() => __mha.openSidebar()")
            page.wait_for_timeout(800)  # let Lumino lay the panels out again
        group = next(g for g in page.evaluate("() => __mha.groups()") if g["name"] == EXPLORER)
        gid, cids = group["gid"], {c["label"]: c["cid"] for c in group["controls"]}
        control = {
            name: page.locator(f'[data-mha-control="{cids[label]}"]')
            for name, label in (
                ("mode", "mode"),
                ("n_q", "n_q (queries)"),
                ("n_kv", "n_kv (keys)"),
                ("causal", "causal mask"),
            )
        }
        page.locator(f'[data-mha-group="{gid}"]').scroll_into_view_if_needed()
        start = page.evaluate(LAYOUT_JS, gid)
        assert start["image"] > 200 and start["lines"] == READOUT_LINES, start

        def check(what: str) -> dict:
            settle(page)
            now = page.evaluate(LAYOUT_JS, gid)
            assert not now["messageShown"] and abs(now["image"] - start["image"]) <= 1, (what, now)
            assert abs(now["height"] - start["height"]) <= 1, f"{what}: height {start['height']} -> {now['height']}"
            assert now["lines"] == READOUT_LINES, (what, now)  # no line wraps
            return now

        def key(name: str, press: str) -> None:
            control[name].locator(".noUi-handle").first.focus()
            page.keyboard.press(press)

        control["causal"].locator("input[type=checkbox]").click()
        assert "not applied" in check("causal ticked in cross-attention")["readout"]
        for name, press in (("n_q", "End"), ("n_kv", "End"), ("n_q", "Home"), ("n_kv", "Home")):
            key(name, press)
            assert "not applied" in check(f"{name} {press} (cross-attention, causal ticked)")["readout"]
        control["mode"].locator(".widget-toggle-button").nth(1).click()  # self-attention: the mask applies
        shown = check("self-attention, causal")["readout"]
        assert "not applied" not in shown and "keys and values x" not in shown and "any other length" not in shown
        for press in ("End", "Home"):
            key("n_q", press)
            check(f"n_q {press} (self-attention)")
    finally:
        page.close()
        lab.server.shutdown_kernels()
