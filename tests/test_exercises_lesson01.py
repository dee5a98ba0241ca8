"""Lesson 1's exercise checks: right answers pass, wrong answers and the None placeholder get a hint."""

import numpy as np
import pytest

from mha_lesson.demos import one_head as oh
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson01 as ex

TASK = oh.binding_task()


def test_same_map_exercise_answer_is_computed():
    assert oh.best_single_head(TASK.a, TASK.a) == pytest.approx((0.5, 1.0))
    assert ex.check_same_map((1.0, 0.5)) and ex.check_same_map([1, 0.5]) and ex.check_same_map(np.array([1.0, 0.5]))
    assert "independent A and B" in ex.check_same_map((0.5, 0.5)).message
    assert "proportion" in ex.check_same_map((1.0, 1.0)).message
    assert not ex.check_same_map((0.8, 0.5))


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (None, "Replace None with a pair (R², α), e.g. (0.7, 0.25)."),
        ("1, 0.5", "Expected a pair (R², α), got '1, 0.5'."),
        (1.0, "Expected a pair (R², α), got 1.0."),
        ((1.0, 0.5, 0.0), "Expected a pair (R², α), got (1.0, 0.5, 0.0)."),
        (("1", 0.5), "Expected a number (R²), got str."),
        ((1.0, None), "Replace None with α."),
    ],
)
def test_same_map_bad_input_says_what_was_expected(answer, message):
    assert ex.check_same_map(answer) == Feedback(False, message)


def test_two_heads_design_passes_for_one_head_per_key_and_any_unmixing_pair():
    assert ex.check_two_heads((1.0, 0.0), (TASK.a, TASK.b))
    assert ex.check_two_heads([0, 1], [TASK.b, TASK.a])  # the heads in the other order
    assert ex.check_two_heads((0.8, 0.3), oh.fit_heads(TASK, (0.8, 0.3)).maps)  # any two different mixes
    assert "R² = 1.000000000000" in ex.check_two_heads((1.0, 0.0), (TASK.a, TASK.b)).message


def test_two_heads_design_scores_on_a_sequence_the_maps_never_saw():
    held = ex.held_out_task()
    np.testing.assert_array_equal(held.a, TASK.a)
    assert not np.array_equal(held.x, TASK.x)
    # Maps fitted on only 2d positions pass too: the target has no noise, so an exact fit recovers A and B.
    short = oh.BindingTask(TASK.x[: 2 * oh.D + 2], TASK.a, TASK.b)
    assert ex.check_two_heads((1.0, 0.0), oh.fit_heads(short, (1.0, 0.0)).maps)


def test_two_heads_design_hints():
    same = ex.check_two_heads((0.5, 0.5), (TASK.a, TASK.b))
    assert not same and "same mix" in same.message
    swapped = ex.check_two_heads((1.0, 0.0), (TASK.b, TASK.a))
    assert not swapped and "map of what it reads" in swapped.message
    one_map = ex.check_two_heads((1.0, 0.0), (TASK.a, TASK.a))
    assert not one_map
    zero = ex.check_two_heads((1.0, 0.0), (np.zeros((oh.D, oh.D)),) * 2)
    assert not zero and "R² = 0.000" in zero.message


@pytest.mark.parametrize(
    ("alphas", "maps", "message"),
    [
        (None, None, "Replace both Nones: alphas = (α_0, α_1) and maps = (W_0, W_1)."),
        ((1.0, 0.0), None, "Replace both Nones: alphas = (α_0, α_1) and maps = (W_0, W_1)."),
        ("ab", [TASK.a, TASK.b], "Expected two attention weights (α_0, α_1), got str."),
        ((1.0,), [TASK.a, TASK.b], "Expected two weights in [0, 1] (one per head, on key t-1), got (1.0,)."),
        ((1.5, 0.0), [TASK.a, TASK.b], "Expected two weights in [0, 1] (one per head, on key t-1), got (1.5, 0.0)."),
        ((1.0, 0.0), 5, "Expected two (8, 8) matrices (W_0, W_1), got int."),
        (
            (1.0, 0.0),
            [TASK.a],
            "Expected two (8, 8) matrices, one map per head; got shapes [(8, 8)].",
        ),
        (
            (1.0, 0.0),
            [TASK.a, TASK.b[:4]],
            "Expected two (8, 8) matrices, one map per head; got shapes [(8, 8), (4, 8)].",
        ),
    ],
)
def test_two_heads_bad_input_says_what_was_expected(alphas, maps, message):
    assert ex.check_two_heads(alphas, maps) == Feedback(False, message)


def test_dip_exercise_answer_is_measured():
    assert oh.fit_heads(TASK, (0.5, 0.5)).r2 == pytest.approx(oh.fit_heads(TASK, (0.5,)).r2, abs=1e-10)
    assert ex.check_dip("b") and ex.check_dip("B ") and ex.check_dip(["b"])
    for letter in "acd":
        feedback = ex.check_dip(letter)
        assert not feedback and feedback.message
    assert "Choose one letter" in ex.check_dip({"a", "b"}).message
    assert ex.check_dip(None) == Feedback(False, "Replace None with one letter, e.g. 'a'.")
    assert not ex.check_dip("z")
