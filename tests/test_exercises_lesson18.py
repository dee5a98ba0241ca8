"""Lesson 18's exercise checks (positions, windows and layer order): right answers pass, typical wrong ones get the
specific hint, None is friendly; and the answers against independent computations."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha_lesson as mha
from mha_lesson.exercises import lesson18 as ex
from mha_lesson.rope import rope_angles


@pytest.mark.parametrize("check", [ex.check_earliest_position, ex.check_rope_base, ex.check_value_rotation])
def test_none_gets_a_friendly_message(check):
    assert not check(None) and "Replace None" in check(None).message


def test_earliest_position():
    # Each layer with a window of w keys reaches w - 1 further back: 60 - (4·7 + 2·2).
    assert ex.earliest_reached() == 28
    assert ex.check_earliest_position(28) and ex.check_earliest_position(28.0)
    assert "w - 1" in ex.check_earliest_position(60 - 38).message  # whole windows counted
    assert (
        "Off by one" in ex.check_earliest_position(27).message
        and "Off by one" in ex.check_earliest_position(29).message
    )
    assert "smaller windows" in ex.check_earliest_position(60 - 6 * 7).message
    assert "small-window layers too" in ex.check_earliest_position(32).message
    assert "between 0 and 60" in ex.check_earliest_position(61).message
    assert "whole number" in ex.check_earliest_position(27.5).message and not ex.check_earliest_position("28")


@given(st.lists(st.integers(1, 6), min_size=1, max_size=5), st.integers(0, 39))
def test_earliest_reached_against_a_loop_over_layers(windows, query):
    """The boolean products against a direct walk: each layer moves the earliest reachable token back by w - 1."""
    earliest = query
    for w in windows:
        earliest = max(0, earliest - (w - 1))
    assert ex.earliest_reached(tuple(windows), query, 40) == earliest
    if len(set(windows)) == 1:  # one window size: mha.receptive_field gives the same
        reach = mha.receptive_field(mha.sliding_window_mask(40, windows[0]), len(windows))
        assert int(np.argmax(reach[query])) == earliest


def test_rope_base():
    base = ex.smallest_base()
    # The slowest pair j = d_k/2 - 1 turns by base^(-126/128) radians per position, once in 2π / that positions.
    slowest = rope_angles(np.array([1.0]), 128, base)[0, -1]
    assert 2 * math.pi / slowest == pytest.approx(131_072, rel=1e-12)
    assert 24_000 < base < 25_000 and ex.check_rope_base(round(base))
    assert "exponent" in ex.check_rope_base(131_072 / (2 * math.pi)).message
    assert "radians" in ex.check_rope_base(131_072 ** (128 / 126)).message
    assert "fewer than" in ex.check_rope_base(10_000).message
    assert "smaller one does too" in ex.check_rope_base(500_000).message
    assert "above 1" in ex.check_rope_base(1).message and not ex.check_rope_base("24428")


def test_value_rotation_diagnosis():
    assert ex.check_value_rotation("b") and ex.check_value_rotation(" B ")
    for letter in "acd":
        feedback = ex.check_value_rotation(letter)
        assert not feedback and len(feedback.message) > 20
    assert "letters" in ex.check_value_rotation("e").message


@given(st.integers(0, 2**32 - 1), st.integers(2, 10), st.integers(1, 5000))
def test_rotating_values_keeps_the_weights_but_moves_the_outputs(seed, n, shift):
    """What answer b says, against a head without the bug: weights shift-invariant, outputs not."""
    rng = np.random.default_rng(seed)
    q, k, v = rng.normal(size=(3, n, 8))
    out, w = ex.buggy_rope_attention(q, k, v, np.arange(n))
    out_moved, w_moved = ex.buggy_rope_attention(q, k, v, np.arange(n) + shift)
    np.testing.assert_allclose(w_moved, w, atol=1e-9)
    good, good_w = mha.scaled_dot_product_attention(mha.rope(q), mha.rope(k), v, mha.causal_mask(n))
    np.testing.assert_allclose(w, good_w, atol=1e-12)  # the scores are RoPE's, the bug is in the values only
    np.testing.assert_allclose(out[0], mha.rope(v[None, :1], np.array([0]))[0, 0], atol=1e-12)  # position 0: no turn
    assert np.abs(out_moved - out).max() > 1e-6 and np.abs(out - good).max() > 1e-6
