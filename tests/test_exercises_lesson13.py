"""Lesson 13's exercise checks accept the right answer and reject wrong ones with a hint."""

import math

import numpy as np
import pytest

import mha_lesson as mha
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson13 as ex


def test_attention_parameters():
    # Independent count: build the six layers' parameter arrays and count their entries.
    p = mha.init_params(384, 12, bias=True)
    counted = 6 * sum(a.size for a in p.arrays().values())
    assert ex.check_attention_parameters(counted)
    for answer in (None, "many", counted // 6, 6 * 4 * 384**2, 6 * 12 * 4 * 384**2, 7):
        assert not ex.check_attention_parameters(answer)


def test_uniform_entropy():
    w = np.full(8, 1 / 8)
    assert ex.check_uniform_entropy(float(-(w * np.log(w)).sum()))
    for answer in (None, "x", math.log2(8), 1 / 8, 1.0):
        assert not ex.check_uniform_entropy(answer)


def test_rows_switched_off():
    p = mha.init_params(384, 12)
    zero_rows = np.flatnonzero(~p.without_heads([ex.OFF_HEAD]).w_o.any(axis=1))
    assert ex.check_rows_switched_off((int(zero_rows[0]), int(zero_rows[-1]) + 1))
    assert ex.check_rows_switched_off(slice(int(zero_rows[0]), int(zero_rows[-1]) + 1))
    for answer in (None, 5, (160, 191), (0, 32), (5, 6), ("a", "b")):
        assert not ex.check_rows_switched_off(answer)


PARAMETERS = "the number of parameters, a whole number"
ENTROPY = "the entropy in nats: use the natural logarithm"
ROWS = "a (start, stop) pair of row indices, stop excluded, as in a slice"


@pytest.mark.parametrize(
    ("check", "answer", "message"),
    [
        (ex.check_attention_parameters, None, f"Replace None with {PARAMETERS}."),
        (ex.check_attention_parameters, "many", f"Expected a number ({PARAMETERS}), got str."),
        (ex.check_attention_parameters, math.inf, f"Expected a finite number ({PARAMETERS}), got inf."),
        (ex.check_uniform_entropy, None, f"Replace None with {ENTROPY}."),
        (ex.check_uniform_entropy, "2.08", f"Expected a number ({ENTROPY}), got str."),
        (ex.check_rows_switched_off, None, f"Replace None with {ROWS}."),
        (ex.check_rows_switched_off, 5, f"Expected {ROWS}, got int."),
        (ex.check_rows_switched_off, ("a", "b"), f"Expected {ROWS}, whole numbers only; got ('a', 'b')."),
        (ex.check_rows_switched_off, (160, 192, 1), f"Expected {ROWS}: two whole numbers, got (160, 192, 1)."),
    ],
)
def test_bad_input_says_what_was_expected_and_what_arrived(check, answer, message):
    assert check(answer) == Feedback(False, message)


def test_an_off_by_one_stop_gets_its_hint():
    assert ex.check_rows_switched_off((160, 191)) == Feedback(False, "Almost: stop is excluded, as in a Python slice.")


@pytest.mark.parametrize("check", [ex.check_attention_parameters, ex.check_uniform_entropy, ex.check_rows_switched_off])
def test_none_gives_a_friendly_hint(check):
    feedback = check(None)
    assert not feedback and "Replace None" in feedback.message
