"""End, Home and the handle agree with a slider's options after they change under it (lesson 2: h offers the
divisors of d_model, so moving d_model gives h new options). Before the fix, End on h gave 512 once d_model was
1024, the handle sat short of the end, and ArrowRight then went further."""

from __future__ import annotations

import pytest
from _pages import open_and_run

from benchmarks import _lab

pytestmark = pytest.mark.browser

LESSON = "02_why_split_heads.ipynb"
EXPLORER = "CostExplorer"

# The slider's readout, value, range and where its handle sits along it (0 = left end, 1 = right end).
STATE_JS = r"""
(cid) => {
  const el = document.querySelector(`[data-mha-control="${cid}"]`);
  const handle = el.querySelector('.noUi-handle'), bar = el.querySelector('.noUi-target').getBoundingClientRect();
  const box = handle.getBoundingClientRect();
  return {readout: el.querySelector('.widget-readout').textContent.trim(),
          now: handle.getAttribute('aria-valuenow'), max: handle.getAttribute('aria-valuemax'),
          min: handle.getAttribute('aria-valuemin'),
          at: (box.left + box.width / 2 - bar.left) / bar.width};
}
"""


def press(page, cid: str, key: str) -> dict:
    """Focus the slider's handle, press `key`, wait for the kernel to finish; the slider's state after."""
    page.locator(f'[data-mha-control="{cid}"] .noUi-handle').first.focus()
    page.keyboard.press(key)
    page.wait_for_timeout(400)
    page.wait_for_function("() => __mha.idle()", timeout=_lab.MOVE_TIMEOUT_S * 1e3)
    page.wait_for_timeout(400)
    return page.evaluate(STATE_JS, cid)


def test_end_home_and_the_handle_follow_new_options(lab):
    page = lab.context.new_page()
    try:
        open_and_run(page, lab.server, LESSON)
        group = next(g for g in page.evaluate("() => __mha.groups()") if g["name"] == EXPLORER)
        sliders = {c["label"]: c["cid"] for c in group["controls"] if c["kind"] == "slider"}
        d_model, h = sliders["d_model"], sliders["h"]
        page.locator(f'[data-mha-group="{group["gid"]}"]').scroll_into_view_if_needed()
        before = page.evaluate(STATE_JS, h)
        wide = press(page, d_model, "End")
        assert wide["now"] == wide["max"], f"End on d_model: {wide}"
        changed = page.evaluate(STATE_JS, h)
        assert changed["max"] != before["max"], f"d_model {wide['readout']} gave h no new options: {changed}"
        end = press(page, h, "End")
        assert end["now"] == end["max"], f"End on h stopped short: {end}"
        assert end["at"] > 0.97, f"the handle sits short of the end: {end}"
        assert press(page, h, "ArrowRight")["readout"] == end["readout"], "ArrowRight went past End"
        home = press(page, h, "Home")
        assert home["now"] == home["min"] and home["at"] < 0.03, f"Home: {home}"
        assert press(page, h, "ArrowLeft")["readout"] == home["readout"], "ArrowLeft went past Home"
    finally:
        page.close()
        lab.server.shutdown_kernels()
