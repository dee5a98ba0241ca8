"""Lesson 17's online-softmax step-through: each step's numbers against the softmax of the keys read so far,
the explorer's compute, and what its slider changes."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from matplotlib.colors import to_rgba

from mha_lesson.demos import scale as sc
from mha_lesson.plots import style
from mha_lesson.plots.scale import DONE, LIVE
from mha_lesson.widgets import online_softmax as wo


def _prefix_softmax(scores, values, stop):
    """softmax over the first `stop` scores, dotted with their values, written out independently."""
    s = np.asarray(scores[:stop], dtype=float)
    w = np.exp(s - s.max())
    return float(w @ values[:stop] / w.sum())


@given(st.integers(0, 2**32 - 1), st.integers(1, 20), st.integers(1, 6))
def test_every_step_is_the_softmax_of_the_keys_read_so_far(seed, n, block):
    rng = np.random.default_rng(seed)
    scores, values = rng.normal(size=n) * 4, rng.normal(size=n)
    steps = sc.online_softmax_steps(scores, values, block)
    assert len(steps) == math.ceil(n / block) and steps[-1]["stop"] == n
    for step in steps:
        assert step["m"] == pytest.approx(scores[: step["stop"]].max())
        assert step["out"] == pytest.approx(_prefix_softmax(scores, values, step["stop"]), rel=1e-12, abs=1e-12)
        # l is the sum of exp(s - m) over the keys read: the shift moved every old term onto the new max.
        assert step["l"] == pytest.approx(np.exp(scores[: step["stop"]] - step["m"]).sum(), rel=1e-12)
        moved = 1.0 if step["m_old"] == -math.inf else pytest.approx(math.exp(step["m_old"] - step["m"]))
        assert step["factor"] == moved


def test_the_lessons_row_rescales_twice_and_once_not():
    steps = sc.online_softmax_steps()
    assert [s["m"] for s in steps] == [2, 5, 5, 6]
    assert steps[1]["factor"] == pytest.approx(math.exp(-3)) and steps[2]["factor"] == 1
    assert steps[3]["factor"] == pytest.approx(math.exp(-1))
    exact = np.exp(sc.STEP_SCORES) @ sc.STEP_VALUES / np.exp(sc.STEP_SCORES).sum()
    assert steps[-1]["out"] == pytest.approx(exact, rel=1e-14)


def test_steps_reject_mismatched_input():
    with pytest.raises(ValueError, match="^values: expected shape"):
        sc.online_softmax_steps(np.zeros(4), np.zeros(3))
    with pytest.raises(ValueError, match="^block"):
        sc.online_softmax_steps(np.zeros(4), np.zeros(4), 0)


def test_state_and_its_table():
    data = wo.online_softmax_state(2)
    assert data["live"] == (3, 6) and data["read"] == 6 and len(data["steps"]) == 2
    text = wo.describe_state(data)
    assert "the max rose from 2 to 5" in text and "0.0498" in text and "8.322" in text
    assert "factor is exactly 1" in wo.describe_state(wo.online_softmax_state(3))
    assert "first block" in wo.describe_state(wo.online_softmax_state(1))
    for bad in (0, 5, 2.0, True):
        with pytest.raises(ValueError, match="^blocks: expected a number of key blocks from 1 to 4"):
            wo.online_softmax_state(bad)


def test_explorer_opens_on_a_rescale_and_the_slider_moves_the_live_block():
    ex = wo.online_softmax_explorer()
    assert ex.error is None and ex.controls["blocks"].value == 2
    assert "the max rose" in ex.table.get_text() and ex.max_line.get_ydata()[0] == 5
    first = ex.image.value
    ex.controls["blocks"].value = 4
    colours = [bar.get_facecolor() for bar in ex.bars]
    assert ex.image.value != first and ex.max_line.get_ydata()[0] == 6
    assert colours[:9] == [to_rgba(DONE)] * 9 and colours[9:] == [to_rgba(LIVE)] * 3
    assert "exact answer" in ex.table.get_text() and ex.table.get_text().count("\n") >= 6


def test_the_longest_table_fits_below_the_bars_inside_a_laptop_wide_picture():
    """Four blocks read: the table's nine lines sit inside the figure, under the bars' key labels (issue 30)."""
    ex = wo.online_softmax_explorer(blocks=4)
    fig = ex.figure
    assert ex.css_size()[0] <= style.LAPTOP_OUTPUT_PX
    renderer = fig.canvas.get_renderer()
    table = ex.table.get_window_extent(renderer)
    bars = ex.bars[0].axes.get_tightbbox(renderer)  # the bars' axes with their tick and axis labels
    assert ex.table.get_text().count("\n") == 8
    assert table.x0 >= 0 and table.x1 <= fig.bbox.x1 and table.y0 >= 0, (table, fig.bbox)
    assert table.y1 < bars.y0, f"the table (top {table.y1:.0f} px) reaches into the bars' labels ({bars.y0:.0f})"
