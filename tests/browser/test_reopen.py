"""A lesson reopened after a save, its kernel gone: each explorer shows its starting picture and one line saying to
run the cell, never "Error displaying widget: model not found" (the widget's model lived in the old kernel).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _pages import open_and_run

from benchmarks import _lab

pytestmark = pytest.mark.browser

LESSON = "01_one_head_is_not_enough.ipynb"  # an explorer and a static figure
NOTE = "run the cell to make it live"
SETTLE_MS = 5000  # the widget manager gives up on a missing model after 2 s
SCREENSHOT = Path(__file__).resolve().parents[2] / "build" / "screenshots" / "reopened.png"

# Per widget output: the text shown, and its pictures (loaded, shown width, declared CSS width, room to the right).
WIDGET_OUTPUTS_JS = r"""
() => {
  const out = [];
  __mha.panel.content.widgets.forEach((cell, index) => {
    if (cell.model.type !== 'code') return;
    const area = cell.outputArea;
    for (let j = 0; j < area.model.length; j++) {
      const data = area.model.get(j).data;
      if (!data['application/vnd.jupyter.widget-view+json']) continue;
      const node = area.widgets[j].node;
      const right = area.node.getBoundingClientRect().right;
      // room: from the picture's left edge to the output area's right edge
      const imgs = [...node.querySelectorAll('img')].map((i) => ({loaded: i.complete && i.naturalWidth > 0,
        shown: i.getBoundingClientRect().width, css: parseFloat(i.style.width) || null,
        room: right - i.getBoundingClientRect().left}));
      out.push({cell: index, text: node.textContent.trim(), png: !!data['image/png'], imgs});
    }
  });
  return out;
}
"""


def test_a_reopened_lesson_shows_each_explorers_starting_picture(lab):
    saved = lab.server.root / LESSON
    original = saved.read_bytes()  # other tests open this lesson too: put it back as it was
    page = lab.context.new_page()
    try:
        open_and_run(page, lab.server, LESSON)
        live = page.evaluate(WIDGET_OUTPUTS_JS)
        assert any(o["png"] for o in live), "the lesson shows no explorer with a saved picture"
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        page.wait_for_function("() => !__mha.panel.context.model.dirty", timeout=30_000)
        # The learner closes JupyterLab (the kernel goes) and opens the lesson again later.
        page.close()
        lab.server.shutdown_kernels()
        page = lab.context.new_page()
        page.goto(lab.server.page_url(LESSON), timeout=_lab.OPEN_TIMEOUT_S * 1e3)
        page.wait_for_function("p => __mha.open(p)", arg=LESSON, timeout=_lab.OPEN_TIMEOUT_S * 1e3)
        page.wait_for_timeout(SETTLE_MS)
        page.wait_for_function("() => __mha.imagesLoaded()", timeout=_lab.WIDGET_TIMEOUT_S * 1e3)
        reopened = page.evaluate(WIDGET_OUTPUTS_JS)
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.locator(".mha-static-explorer").first.scroll_into_view_if_needed()
        page.screenshot(path=str(SCREENSHOT))  # for a person to look at
        assert len(reopened) == len(live), "the saved notebook lost widget outputs"
        for out in reopened:
            assert "Error displaying widget" not in out["text"], f"cell {out['cell']}: {out['text'][:100]}"
            if not out["png"]:
                continue
            assert NOTE in out["text"].lower(), f"cell {out['cell']}: no note to run the cell: {out['text'][:100]}"
            assert len(out["imgs"]) == 1 and out["imgs"][0]["loaded"], f"cell {out['cell']}: {out['imgs']}"
            img = out["imgs"][0]
            # At its CSS size, or scaled down to the output area as the live explorer is (less margins and padding)
            assert img["css"] and img["shown"] <= min(img["css"] + 1, img["room"]), f"cell {out['cell']}: {img}"
            assert img["shown"] >= min(img["css"], img["room"]) - 8, f"cell {out['cell']}: shrunk: {img}"
    finally:
        page.close()
        lab.server.shutdown_kernels()
        saved.write_bytes(original)
