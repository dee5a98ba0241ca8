"""Lesson 3's exercise checks: the right answer passes, wrong ones get a hint that does not give it away."""

import numpy as np
import pytest

from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson03 as ex


@pytest.mark.parametrize("answer", [(10, 8), [10, 8], np.array([10, 8])])
def test_head_shape_right(answer):
    feedback = ex.check_head_shape(answer)
    assert isinstance(feedback, Feedback) and feedback.correct, feedback.message


@pytest.mark.parametrize("answer", [(16, 24), [16, 24], range(16, 24), slice(16, 24)])
def test_head_columns_right_in_any_reasonable_form(answer):
    assert ex.check_head_columns(answer).correct


def test_w_q_right_with_any_spelling():
    stacked = ex.head_blocks()
    expected = np.zeros((16, 16))
    for i in range(4):  # head i's block goes into columns 4i:4i+4, written out with an explicit loop
        for row in range(16):
            for col in range(4):
                expected[row, 4 * i + col] = stacked[i, row, col]
    for answer in (np.hstack(stacked), np.concatenate(stacked, axis=1), stacked.transpose(1, 0, 2).reshape(16, 16)):
        np.testing.assert_array_equal(answer, expected)
        assert ex.check_w_q(answer).correct
    assert not ex.check_w_q(expected + 1e-3).correct


@pytest.mark.parametrize("check", [ex.check_head_shape, ex.check_head_columns, ex.check_w_q])
def test_none_asks_for_an_answer(check):
    feedback = check(None)
    assert not feedback.correct and feedback.message.startswith("Replace None")


@pytest.mark.parametrize(
    ("check", "answer", "hint"),
    [
        (ex.check_head_shape, (10, 64), "full Q"),
        (ex.check_head_shape, (8, 10), "wrong order"),
        (ex.check_head_shape, (10, 4), "Q_i = X W_i^Q"),
        (ex.check_head_shape, (10, 8, 1), "two whole numbers"),
        (ex.check_head_shape, 10, "Expected"),
        (ex.check_head_shape, (10.0, 8.0), "whole numbers only"),
        (ex.check_head_columns, (16, 23), "not included"),
        (ex.check_head_columns, (8, 16), "numbered from 0"),
        (ex.check_head_columns, (2, 3), "neighbouring columns"),
        (ex.check_w_q, np.vstack(ex.head_blocks()), "on top of each other"),
        (ex.check_w_q, ex.head_blocks(), "axis for heads"),
        (ex.check_w_q, ex.head_blocks().reshape(16, 16), "plain reshape"),
        (ex.check_w_q, np.hstack(ex.head_blocks()[::-1]), "columns i*d_k"),
        (ex.check_w_q, ex.head_blocks().transpose(1, 2, 0).reshape(16, 16), "columns i*d_k"),
        (ex.check_w_q, np.zeros((4, 4)), "side by side"),
    ],
)
def test_wrong_answers_get_a_hint_without_the_answer(check, answer, hint):
    feedback = check(answer)
    assert not feedback.correct and hint in feedback.message, feedback.message
    assert "(10, 8)" not in feedback.message and "16, 24" not in feedback.message and "hstack" not in feedback.message


SHAPE, COLUMNS = "a shape such as (3, 5)", "a (start, stop) pair as in W_q[:, start:stop]"


@pytest.mark.parametrize(
    ("check", "answer", "message"),
    [
        (ex.check_head_shape, None, f"Replace None with {SHAPE}."),
        (ex.check_head_shape, 10, f"Expected {SHAPE}, got int."),
        (ex.check_head_shape, "10,8", f"Expected {SHAPE}, got str."),
        (ex.check_head_shape, (10.0, 8.0), f"Expected {SHAPE}, whole numbers only; got (10.0, 8.0)."),
        (ex.check_head_shape, (10, 8, 1), f"Expected {SHAPE}: two whole numbers, got (10, 8, 1)."),
        (ex.check_head_columns, slice(None, 24), f"Expected {COLUMNS}, whole numbers only; got (None, 24)."),
        (ex.check_w_q, "w_q", "Expected one (16, 16) array built from stacked, got str."),
    ],
)
def test_bad_input_says_what_was_expected_and_what_arrived(check, answer, message):
    assert check(answer) == Feedback(False, message)


def test_head_blocks_are_fixed_by_their_seed():
    a, b = ex.head_blocks(), ex.head_blocks()
    assert a.shape == (4, 16, 4)
    np.testing.assert_array_equal(a, b)
