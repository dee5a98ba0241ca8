"""Lesson 7's cross-attention explorer: controls change the numbers and the picture; a causal tick in
cross-attention keeps the picture and says in the readout that it is not applied."""

import io
import re

import numpy as np
import pytest
from PIL import Image

from mha_lesson.demos import connections as conn
from mha_lesson.widgets import connections as wc


def drawn_rgb(ex, i: int, row: float, col: float) -> np.ndarray:
    """The RGB the shown PNG has at the centre of cell (row, col) of head i's axes, found from the axes' box on the
    canvas (not from the image's extent, which is what is being checked)."""
    ax = ex.images[i].axes
    (x0, y0), (x1, y1) = ax.get_window_extent().get_points()
    (left, right), (bottom, top) = ax.get_xlim(), ax.get_ylim()  # the y axis runs downwards: bottom > top
    x = x0 + (col - left) / (right - left) * (x1 - x0)
    y = y0 + (row - bottom) / (top - bottom) * (y1 - y0)
    png = np.asarray(Image.open(io.BytesIO(ex.image.value)).convert("RGB"))
    return png[png.shape[0] - 1 - int(y), int(x)].astype(int)


def test_cross_attention_explorer_colours_an_n_q_by_n_kv_block():
    ex = wc.cross_attention_explorer()
    assert ex.error is None
    before = ex.image.value
    ex.set(n_q=3, n_kv=9)
    assert ex.data["weights"].shape == (conn.X_H, 3, 9)
    for i, (im, w) in enumerate(zip(ex.images, ex.data["weights"], strict=True)):
        np.testing.assert_array_equal(im.get_array(), w)  # exactly the (n_q, n_kv) map, no padding cells
        assert im.axes.get_xlim() == (-0.5, 8.5) and im.axes.get_ylim() == (2.5, -0.5)  # the axes fit the map
        shown = [t.get_text() for t in im.axes.get_xticklabels() if -0.5 < t.get_position()[0] < 8.5]
        assert shown == [f"x{j}" for j in range(9)]
        assert im.axes.get_title() == f"head {i}: (3 × 9) weights"
    assert ex.image.value != before
    assert "(2, 3, 9)" in ex.text.value and "output: (3, 16)" in ex.text.value


@pytest.mark.parametrize(("n_q", "n_kv"), [(1, 1), (1, 16), (16, 2), (3, 9), (16, 16)])
def test_the_map_fills_axes_of_n_q_rows_by_n_kv_columns(n_q, n_kv):
    ex = wc.cross_attention_explorer()
    ex.set(n_q=16, n_kv=16)  # from the largest grid down: nothing of it may stay behind
    ex.set(n_q=n_q, n_kv=n_kv)
    for i, (im, w) in enumerate(zip(ex.images, ex.data["weights"], strict=True)):
        assert tuple(im.get_extent()) == (-0.5, n_kv - 0.5, n_q - 0.5, -0.5)
        assert im.axes.get_xlim() == (-0.5, n_kv - 0.5) and im.axes.get_ylim() == (n_q - 0.5, -0.5)
        # The picture: the corner cells far from the top-left are the map's own colours, not a grey padding.
        for row, col in ((n_q - 1, n_kv - 1), (0, n_kv - 1), (n_q - 1, 0)):
            want = np.round(np.asarray(im.cmap(im.norm(w[row, col]))[:3]) * 255)
            assert np.abs(drawn_rgb(ex, i, row, col) - want).max() <= 2, (i, row, col)


def lines(html: str) -> list[str]:
    """The readout's lines as text (tags dropped)."""
    return [re.sub(r"<[^>]+>", "", line).replace("&nbsp;", " ") for line in html.split("<br>")]


def test_a_causal_tick_in_cross_attention_keeps_the_picture_and_warns_in_the_readout():
    ex = wc.cross_attention_explorer()
    png, height, children = ex.image.value, ex.text.layout.min_height, ex.widget.children
    ex.controls["causal"].value = True
    assert ex.error is None and ex.message.layout.display == "none"  # no message in the figure's place
    assert ex.image.layout.display is None and ex.text.layout.display is None and ex.image.value == png
    assert ex.widget.children == children and ex.text.layout.min_height == height
    assert ex.data["weights"].shape == (conn.X_H, 4, 6) and not ex.data["causal"]  # drawn without the mask
    shown = lines(ex.text.value)
    assert len(shown) == wc.READOUT_LINES and shown[-1] == f"\u26a0 {wc.CAUSAL_IN_CROSS}"
    assert shown[:2] == lines(wc.describe_shapes(wc.attention_shapes(4, 6)))[:2]  # the shapes as without the tick
    ex.controls["causal"].value = False
    assert ex.image.value == png and "not applied" not in ex.text.value


@pytest.mark.parametrize("mode", wc.MODES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n", [1, 16])
def test_the_readout_has_the_same_lines_in_every_state_in_the_form_a_browser_writes_back(mode, causal, n):
    ex = wc.cross_attention_explorer()
    ex.set(mode=mode, causal=causal, n_q=n, n_kv=n)
    assert len(lines(ex.text.value)) == wc.READOUT_LINES
    assert ex.text.layout.min_height == f"{wc.READOUT_LINES * 28}px"
    # innerHTML gives attributes back in double quotes and characters rather than references (but &nbsp;)
    assert "='" not in ex.text.value and not re.search(r"&(?!nbsp;)\w*#?\w+;", ex.text.value)
    assert "_i" not in ex.text.value and "^" not in ex.text.value  # W_i^Q is written as math


def test_self_attention_readout_names_one_sequence():
    ex = wc.cross_attention_explorer()
    ex.set(mode="self-attention", n_q=5)
    head, projections, results, rule = lines(ex.text.value)
    assert head == "self-attention: queries, keys and values y: (5, 16)"
    assert projections == "Qi = y WiQ, Ki = y WiK, Vi = y WiV: (5, 8)"  # every projection of the one sequence y
    assert results == "weights: (2, 5, 5)  ·  output: (5, 16)"
    assert "any other length" not in rule and "n_kv = n_q" in rule
    ex.set(mode="cross-attention")
    head, projections, results, rule = lines(ex.text.value)
    assert "keys and values x: (6, 16)" in head and "Ki = x WiK" in projections and "any other length" in rule


def test_cross_attention_explorer_self_mode_and_causal():
    ex = wc.cross_attention_explorer()
    ex.controls["causal"].value = True  # not applied in cross-attention
    ex.controls["mode"].value = "self-attention"
    assert ex.error is None and ex.controls["n_kv"].disabled
    assert ex.controls["n_kv"].value == ex.controls["n_q"].value == 4  # one sequence: the greyed slider shows n_q
    assert "not applied" not in ex.text.value and ex.data["causal"]
    w = ex.data["weights"]
    assert w.shape == (conn.X_H, 4, 4) and np.all(np.triu(w, k=1) == 0)
    keys = [t.get_text() for t in ex.images[0].axes.get_xticklabels()]
    assert keys[:2] == ["y0", "y1"] and "decoder" in ex.images[0].axes.get_xlabel()  # one sequence: y on both axes
    ex.controls["n_q"].value = 7
    assert ex.controls["n_kv"].value == 7 and ex.data["weights"].shape == (conn.X_H, 7, 7)
    ex.set(causal=False, mode="cross-attention")  # the learner's n_kv = 6 comes back
    assert not ex.controls["n_kv"].disabled and ex.data["weights"].shape == (conn.X_H, 7, 6)
    assert ex.controls["n_kv"].value == 6


def test_cross_attention_title_counts_the_sequences_of_the_mode():
    ex = wc.cross_attention_explorer()
    assert ex.suptitle.get_text().startswith("two random sequences (decoder y, encoder x)")
    png = ex.image.value
    ex.controls["mode"].value = "self-attention"
    assert ex.suptitle.get_text().startswith("one random sequence y")  # one sequence: queries, keys and values
    assert ex.image.value != png
    ex.controls["mode"].value = "cross-attention"
    assert ex.suptitle.get_text().startswith("two random sequences") and ex.image.value == png
