"""Lesson 12's position-head explorer: controls change the numbers and the picture."""

import numpy as np

from mha_lesson.demos.toy import TOKENS
from mha_lesson.widgets import connections as wc


def test_position_head_explorer_follows_offset_encoding_and_gain():
    ex = wc.position_head_explorer()
    assert ex.error is None and ex.data["on_target"] > 0.99
    ex.controls["offset"].value = -2
    w = ex.heatmap.get_array()
    assert w[0].argmax() == 2 and "+ 2" in ex.heatmap.axes.get_title()
    png = ex.image.value
    ex.controls["encoding"].value = "none"
    np.testing.assert_allclose(ex.heatmap.get_array(), 1 / len(TOKENS))
    assert ex.image.value != png and "none" in ex.text.value
    assert ex.heatmap.axes.get_title() == "query i looks for position i + 2 (no positional encoding)"
    ex.set(encoding="sinusoidal", offset=0)
    assert ex.heatmap.axes.get_title() == "query i looks for its own position (sinusoidal encoding)"
    ex.set(encoding="sinusoidal", offset=1, gain=1.0)
    assert 0.4 < ex.data["on_target"] < 0.6 and f"{ex.data['on_target']:.3f}" in ex.text.value
