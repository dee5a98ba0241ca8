"""Lesson 4's gain explorer: softmax(g · scaled scores) on the toy heads, from uniform (g = 0) to the toy as built
(g = 1) and sharper, with each head's mean row entropy checked against an explicit loop."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mha_lesson.demos import toy
from mha_lesson.widgets.sharpness import (
    CURVE_GAINS,
    MAX_GAIN,
    entropy_curves,
    sharpened,
    sharpness_explorer,
    toy_scaled_scores,
)


def explicit_weights_and_entropy(gain):
    """Independent computation: per head, per row, exp / sum and -sum p ln p, in plain Python loops."""
    x = toy.toy_embeddings()
    p = toy.toy_params()
    weights, entropy = [], []
    for i in range(p.h):
        q, k = x @ p.w_q_head(i), x @ p.w_k_head(i)
        rows, ents = [], []
        for a in range(len(x)):
            s = [gain * float(q[a] @ k[b]) / math.sqrt(p.d_k) for b in range(len(x))]
            top = max(s)
            e = [math.exp(v - top) for v in s]
            row = [v / sum(e) for v in e]
            rows.append(row)
            ents.append(-sum(w * math.log(w) for w in row if w > 0))
        weights.append(rows)
        entropy.append(sum(ents) / len(ents))
    return np.array(weights), np.array(entropy)


@given(gain=st.floats(0, MAX_GAIN))
def test_weights_and_entropy_against_an_explicit_loop(gain):
    data = sharpened(gain)
    weights, entropy = explicit_weights_and_entropy(round(gain, 9))
    np.testing.assert_allclose(data["weights"], weights, atol=1e-12)
    np.testing.assert_allclose(data["entropy"], entropy, atol=1e-9)
    np.testing.assert_allclose(data["peak"], weights.max(axis=-1).mean(axis=-1), atol=1e-12)


def test_gain_0_is_uniform_and_gain_1_is_the_toy_as_built():
    n = len(toy.TOKENS)
    flat = sharpened(0.0)
    np.testing.assert_allclose(flat["weights"], 1 / n)
    np.testing.assert_allclose(flat["entropy"], math.log(n))
    np.testing.assert_allclose(sharpened(1.0)["weights"], toy.toy_weights(), atol=1e-12)


def test_the_scaled_scores_are_the_toys_planned_values():
    scores = toy_scaled_scores()
    assert scores.shape == (4, 11, 11)
    assert set(np.unique(scores.round(9))) <= {-4.0, 0.0, 4.0, 8.0}  # SHARP, SELF and 0 (see demos/toy.py)
    assert not scores.flags.writeable


def test_entropy_falls_with_the_gain_except_for_the_broad_head():
    curves = entropy_curves()
    assert curves.shape == (4, len(CURVE_GAINS))
    assert np.all(np.diff(curves[:3], axis=1) <= 1e-12)  # sharper with every step of g
    np.testing.assert_allclose(curves[3], math.log(11))  # all scores 0: no gain changes a uniform row
    # the floors the lesson explains: row 0 of head 0 stays uniform (ln 11 / 11); head 1 splits over repeated words
    assert curves[0, -1] == pytest.approx(math.log(11) / 11, abs=0.01)
    assert curves[1, -1] > 0.3 and curves[2, -1] < 0.01


@pytest.mark.parametrize("gain", [-0.1, MAX_GAIN + 0.01, float("nan"), float("inf"), "1", None, True])
def test_bad_gain_raises_naming_it(gain):
    with pytest.raises(ValueError, match=r"^gain:"):
        sharpened(gain)


def test_the_explorer_starts_at_the_toy_as_built_and_moves_the_maps_titles_and_dots_but_not_the_curves():
    e = sharpness_explorer()
    assert e.error is None and e.controls["gain"].value == 1.0  # g = 1: the toy as built, as the text says
    np.testing.assert_allclose(e.images[0].get_array(), toy.toy_weights()[0], atol=1e-12)
    first, curves = e.image.value, [line.get_ydata().copy() for line in e.figure.axes[4].get_lines()[1:5]]
    e.controls["gain"].value = 0.5
    assert e.image.value != first
    scores = toy_scaled_scores()[0]
    expected = np.exp(0.5 * scores) / np.exp(0.5 * scores).sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(e.images[0].get_array(), expected, atol=1e-12)
    assert e.titles[2].get_text() == f"head 2: first token\nentropy {sharpened(0.5)['entropy'][2]:.2f} nats"
    np.testing.assert_allclose(e.dots.get_offsets()[:, 1], sharpened(0.5)["entropy"])
    for line, before in zip(e.figure.axes[4].get_lines()[1:5], curves, strict=True):
        np.testing.assert_array_equal(line.get_ydata(), before)
    assert "g = 0.50" in e.text.value and "head 3 (broad): 2.40 nats" in e.text.value


def test_the_legend_clears_the_steep_part_of_the_curves_and_the_dots_show_whole_at_the_ends():
    e = sharpness_explorer()
    ax = e.figure.axes[4]
    e.figure.draw_without_rendering()
    box = ax.get_legend().get_window_extent().transformed(ax.transData.inverted())  # in (g, nats)
    for line in ax.get_lines()[1:5]:  # the four heads' curves
        g, y = line.get_data()
        steep = (g >= 0.1) & (g <= 0.9)
        inside = (g[steep] >= box.x0) & (g[steep] <= box.x1) & (y[steep] >= box.y0) & (y[steep] <= box.y1)
        assert not inside.any()
    assert box.x0 > 0.9  # the dots of g 0.4-0.6 are left of it
    assert ax.get_xlim()[0] < 0 and ax.get_xlim()[1] > 2.0 and not e.dots.get_clip_on()


def test_blitted_moves_show_the_same_picture_as_a_full_redraw():
    e = sharpness_explorer()
    for gain in (0.0, 0.5, 2.0, 0.3):
        e.controls["gain"].value = gain
        shown = e.image.value
        e.invalidate_background()
        assert e.render_png() == shown
