"""Lesson 6's exercise checks accept the solutions and reject typical wrong answers with a hint."""

import dataclasses

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


def test_reweighted_w_o():
    x, p = ex.exercise_inputs()
    d_k = p.d_k
    solution = p.w_o.copy()
    solution[:d_k] = 0  # rows of head 0
    solution[d_k : 2 * d_k] *= 2  # rows of head 1
    # independent: the loop on the new parameters equals 2 head_1 W^O_1 + head_2 W^O_2 + head_3 W^O_3
    out, _, trace = mha.multi_head_attention_loop(x, x, x, p, return_trace=True)
    new = mha.multi_head_attention_loop(x, x, x, dataclasses.replace(p, w_o=solution))[0]
    blocks = [trace["head_i"][i] @ p.w_o[i * d_k : (i + 1) * d_k] for i in range(p.h)]
    np.testing.assert_allclose(new, 2 * blocks[1] + blocks[2] + blocks[3], atol=1e-12)
    assert ex.check_reweighted_w_o(solution)
    columns = p.w_o.copy()
    columns[:, :d_k] = 0
    columns[:, d_k : 2 * d_k] *= 2
    only_off, only_double = p.w_o.copy(), p.w_o.copy()
    only_off[:d_k] = 0
    only_double[d_k : 2 * d_k] *= 2
    hints = {
        "columns of W^O": columns,
        "count twice": only_off,
        "switch head 0 off": only_double,
        "Multiply each block": p.w_o,
        "Expected W^O's shape": p.w_o[:4],
        "inf or nan": np.full((16, 16), np.nan),
    }
    for hint, wrong in hints.items():
        result = ex.check_reweighted_w_o(wrong)
        assert not result and hint in result.message, (hint, result.message)


def test_all_off():
    x, p = ex.all_off_inputs()
    assert ex.check_all_off(p.b_o)
    assert ex.check_all_off(np.tile(p.b_o, (4, 1)))
    for wrong in (None, np.zeros(8), np.zeros((4, 8)), p.b_o[:4], -p.b_o, "b_o"):
        result = ex.check_all_off(wrong)
        assert not result and result.message


SHAPE = "a shape, as a tuple like (rows, columns)"
W_O = "a (16, 16) matrix: the new W^O"
ALL_OFF = "an array: the output with every head switched off"


@pytest.mark.parametrize(
    ("check", "answer", "message"),
    [
        (ex.check_block_shape, None, f"Replace None with {SHAPE}."),
        (ex.check_block_shape, "64x512", f"Expected {SHAPE}, got str."),
        (ex.check_block_shape, (64.0, 512), f"Expected {SHAPE}, whole numbers only; got (64.0, 512)."),
        (ex.check_reweighted_w_o, None, f"Replace None with {W_O}."),
        (ex.check_reweighted_w_o, "w_o", f"Expected {W_O}, got str."),
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
    feedback = ex.check_reweighted_w_o(np.zeros((2, 16)))
    assert feedback == Feedback(False, "Expected W^O's shape (16, 16), got (2, 16).")


@pytest.mark.parametrize("check", [ex.check_block_shape, ex.check_reweighted_w_o, ex.check_all_off])
def test_none_gets_a_friendly_hint(check):
    assert "Replace None" in check(None).message
