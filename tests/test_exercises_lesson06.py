"""Lesson 6's exercise checks accept the solutions and reject typical wrong answers with a hint."""

import numpy as np
import pytest

import mha_lesson as mha
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson06 as ex


def test_block_shape():
    assert ex.check_block_shape((64, 512))
    for wrong in (None, (512, 64), (512, 512), (64, 64), "64x512"):
        result = ex.check_block_shape(wrong)
        assert not result and result.message


def test_ablation_delta():
    x, p = ex.exercise_inputs()
    out, _, trace = mha.multi_head_attention_loop(x, x, x, p, return_trace=True)
    solution = trace["head_i"][ex.OFF] @ p.w_o_head(ex.OFF)
    assert ex.check_ablation_delta(solution)
    other_head = trace["head_i"][0] @ p.w_o_head(0)
    for wrong in (None, -solution, out, other_head, solution[:2], "delta", trace["head_i"][ex.OFF]):
        result = ex.check_ablation_delta(wrong)
        assert not result and result.message


def test_all_off():
    x, p = ex.all_off_inputs()
    assert ex.check_all_off(p.b_o)
    assert ex.check_all_off(np.tile(p.b_o, (4, 1)))
    for wrong in (None, np.zeros(8), np.zeros((4, 8)), p.b_o[:4], -p.b_o, "b_o"):
        result = ex.check_all_off(wrong)
        assert not result and result.message


SHAPE = "a shape, as a tuple like (rows, columns)"
DELTA = "an (n, d_model) array computed from the trace and params"
ALL_OFF = "an array: the output with every head switched off"


@pytest.mark.parametrize(
    ("check", "answer", "message"),
    [
        (ex.check_block_shape, None, f"Replace None with {SHAPE}."),
        (ex.check_block_shape, "64x512", f"Expected {SHAPE}, got str."),
        (ex.check_block_shape, (64.0, 512), f"Expected {SHAPE}, whole numbers only; got (64.0, 512)."),
        (ex.check_ablation_delta, None, f"Replace None with {DELTA}."),
        (ex.check_ablation_delta, "delta", f"Expected {DELTA}, got str."),
        (ex.check_all_off, None, f"Replace None with {ALL_OFF}."),
        (ex.check_all_off, {"b_o": 1}, f"Expected {ALL_OFF}, got dict."),
    ],
)
def test_bad_input_says_what_was_expected_and_what_arrived(check, answer, message):
    assert check(answer) == Feedback(False, message)


def test_block_shape_right_and_transposed():
    assert ex.check_block_shape([64, 512]).correct
    transposed = ex.check_block_shape((512, 64))
    assert not transposed and transposed.message.startswith("That is the shape of W_i^Q.")


def test_a_wrong_array_shape_is_named():
    feedback = ex.check_ablation_delta(np.zeros((2, 16)))
    assert feedback == Feedback(False, "Expected shape (6, 16) (one row per token, d_model columns), got (2, 16).")


@pytest.mark.parametrize("check", [ex.check_block_shape, ex.check_ablation_delta, ex.check_all_off])
def test_none_gets_a_friendly_hint(check):
    assert "Replace None" in check(None).message
