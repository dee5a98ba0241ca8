"""Lesson 10's exercise checks: right answers pass, wrong answers and the None placeholder get a hint."""

import numpy as np
import pytest

import mha_lesson as mha
from mha_lesson.demos import connections as conn
from mha_lesson.demos.toy import TOKENS, token_part
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson10 as ex


def test_cross_attention_exercise():
    y, x = conn.translation_inputs()
    p = conn.translation_params()
    assert ex.check_cross_attention(mha.multi_head_attention(y, x, x, p)[0])
    assert ex.check_cross_attention(mha.multi_head_attention(y, x, x, p))  # the (output, weights) pair
    swapped = ex.check_cross_attention(mha.multi_head_attention(x, y, y, p)[0])
    assert not swapped and "6 rows" in swapped.message
    assert "self-attention" in ex.check_cross_attention(mha.multi_head_attention(y, y, y, p)[0]).message
    assert not ex.check_cross_attention(mha.multi_head_attention(y, x, x, p)[0] + 1.0)
    assert not ex.check_cross_attention(mha.multi_head_attention(y[:2], x, x, p)[0])
    assert "Replace None" in ex.check_cross_attention(None).message


def test_causal_count_exercise():
    assert ex.check_causal_count(66)
    assert ex.check_causal_count(66.0) and ex.check_causal_count(np.int64(66))  # 11 * 12 / 2 is a float
    assert "every pair" in ex.check_causal_count(121).message
    assert "own position" in ex.check_causal_count(55).message
    assert not ex.check_causal_count(60)


COUNT = "the number of query-key pairs the mask allows"
OUTPUT = "the output of your multi_head_attention call"


@pytest.mark.parametrize(
    ("check", "answer", "message"),
    [
        (ex.check_causal_count, None, f"Replace None with {COUNT}."),
        (ex.check_causal_count, True, f"Expected a number ({COUNT}), got bool."),
        (ex.check_causal_count, "66", f"Expected a number ({COUNT}), got str."),
        (ex.check_causal_count, 66.5, f"Expected a whole number ({COUNT}), got 66.5."),
        (ex.check_cross_attention, None, f"Replace None with {OUTPUT}."),
        (ex.check_cross_attention, "out", f"Expected {OUTPUT}, got str."),
        (
            ex.check_cross_attention,
            np.zeros((2, 8)),
            "Expected one row per decoder token and d_model columns, got shape (2, 8).",
        ),
    ],
)
def test_bad_input_says_what_was_expected_and_what_arrived(check, answer, message):
    assert check(answer) == Feedback(False, message)


def test_equivariance_exercise_answer_is_measured():
    assert ex.equivariant_options() == {"a", "b"}
    assert ex.check_equivariant({"a", "b"}) and ex.check_equivariant(["B", "a "])
    assert "ties something" in ex.check_equivariant({"a", "b", "c"}).message
    assert "missing" in ex.check_equivariant({"a"}).message
    assert not ex.check_equivariant({"a", "z"}) and not ex.check_equivariant(5)
    assert "Replace None" in ex.check_equivariant(None).message


def test_equivariance_exercise_options_are_measurable():
    perm = np.random.default_rng(9).permutation(len(TOKENS))
    measured = {
        letter for letter in ex.OPTIONS if conn.permutation_errors(*_fn_words_perm_pos(letter, perm)).max() < 1e-12
    }
    assert measured == {"a", "b"}
    with pytest.raises(ValueError, match="letter"):
        ex.option("e")


def _fn_words_perm_pos(letter, perm):
    fn, pos = ex.option(letter)
    return fn, token_part(), perm, pos
