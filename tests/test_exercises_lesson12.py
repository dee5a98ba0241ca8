"""Lesson 12's exercise checks: right answers pass, wrong answers and the None placeholder get a hint."""

import numpy as np
import pytest

from mha_lesson.demos import connections as conn
from mha_lesson.demos.toy import TOKENS, token_part
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson12 as ex
from mha_lesson.positional import sinusoidal_encoding


def test_distance_exercise_answer_is_measured():
    u, w = ex.mystery_codes()
    pe = sinusoidal_encoding(64, conn.PE_WIDTH)
    # independent of the check: the one offset k whose PE[0]·PE[k] equals u·w is the distance
    matches = [k for k in range(64) if abs(pe[0] @ pe[k] - u @ w) < 1e-9]
    assert matches == [abs(ex.MYSTERY_POSITIONS[1] - ex.MYSTERY_POSITIONS[0])] == [7]
    assert ex.check_distance(7) and ex.check_distance(7.0)
    assert "positive" in ex.check_distance(-7).message
    assert "is a position" in ex.check_distance(37).message and "is a position" in ex.check_distance(44).message
    assert "compare u @ w" in ex.check_distance(6).message


DISTANCE = "the distance between the two positions"


@pytest.mark.parametrize(
    ("check", "answer", "message"),
    [
        (ex.check_distance, None, f"Replace None with {DISTANCE}."),
        (ex.check_distance, True, f"Expected a number ({DISTANCE}), got bool."),
        (ex.check_distance, "7", f"Expected a number ({DISTANCE}), got str."),
        (ex.check_distance, 7.5, f"Expected a whole number ({DISTANCE}), got 7.5."),
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
