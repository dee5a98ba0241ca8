"""Lesson 5's exercise checks accept the solutions and reject typical wrong answers with a hint."""

import numpy as np
import pytest

from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson05 as ex


def test_concat_shape():
    assert ex.check_concat_shape((7, 512))
    assert ex.check_concat_shape([7, 512])
    for wrong in (None, (7, 64), (8, 7, 64), (56, 64), (512, 7), "7x512", 3):
        result = ex.check_concat_shape(wrong)
        assert not result and result.message


def test_recover_head():
    def right(concat, i, h):
        d_k = concat.shape[-1] // h
        return concat[..., i * d_k : (i + 1) * d_k]

    def off_by_one(concat, i, h):
        d_k = concat.shape[-1] // h
        return concat[..., (i + 1) * d_k : (i + 2) * d_k] if i + 1 < h else concat[..., :d_k]

    def fixed_width(concat, i, h):
        return concat[..., i * 4 : (i + 1) * 4]

    def crashes(concat, i, h):
        raise RuntimeError("boom")

    def returns_none(concat, i, h):
        return None

    assert ex.check_recover_head(right)
    for wrong in (None, off_by_one, fixed_width, crashes, returns_none, 42):
        result = ex.check_recover_head(wrong)
        assert not result and result.message
    assert "RuntimeError" in ex.check_recover_head(crashes).message


def test_same_sum():
    z = np.array([0.0, 1.0, 5.0])
    assert ex.check_same_sum((ex.HEAD_A + z, ex.HEAD_B - z))
    assert ex.check_same_sum(([0, 0, 0], [1, 2, 0]))
    for wrong in (None, (ex.HEAD_A, ex.HEAD_B), ([1, 1, 1], [1, 1, 1]), ([1, 2], [0, 0]), "ab", (1, 2, 3)):
        result = ex.check_same_sum(wrong)
        assert not result and result.message


SHAPE = "a shape, as a tuple like (rows, columns)"


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (None, f"Replace None with {SHAPE}."),
        (3, f"Expected {SHAPE}, got int."),
        ("75", f"Expected {SHAPE}, got str."),  # not read digit by digit as the shape (7, 5)
        ((7.9, 512), f"Expected {SHAPE}, whole numbers only; got (7.9, 512)."),  # not truncated to (7, 512)
        ((True, 512), f"Expected {SHAPE}, whole numbers only; got (True, 512)."),
    ],
)
def test_concat_shape_says_what_was_expected_and_what_arrived(answer, message):
    assert ex.check_concat_shape(answer) == Feedback(False, message)


@pytest.mark.parametrize("answer", [(7, 512), [7, 512], np.array([7, 512]), (np.int64(7), 512)])
def test_concat_shape_accepts_any_sequence_of_whole_numbers(answer):
    assert ex.check_concat_shape(answer).correct


def test_concat_shape_of_one_head_gets_its_hint():
    feedback = ex.check_concat_shape((7, 64))
    assert feedback == Feedback(False, "That is one head's output. The concatenation puts all h of them side by side.")


@pytest.mark.parametrize("check", [ex.check_concat_shape, ex.check_recover_head, ex.check_same_sum])
def test_none_gets_a_friendly_hint(check):
    assert "Replace None" in check(None).message
