"""Lesson 7's exercise checks: right answers (the notebook's solutions) pass, typical slips get specific hints."""

import math

import numpy as np
import pytest

import mha_lesson as mha
from mha_lesson.demos.examples import worked_example
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson07 as ex


def test_doubled_query_weight_by_hand_matches_the_core():
    # Solution: 'cat's scaled scores [0, 2, 0, 2] double to [0, 4, 0, 4]; softmax weight on 'fish'.
    by_hand = np.exp(4) / (2 + 2 * np.exp(4))
    assert ex.doubled_query_weight() == pytest.approx(by_hand, abs=1e-12)
    assert round(by_hand, 3) == 0.491


WEIGHT = "your weight, a number between 0 and 1"


@pytest.mark.parametrize("check", [ex.check_doubled_query, ex.check_causal_weight])
@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (None, f"Replace None with {WEIGHT}."),
        ("0.5", f"Expected a number ({WEIGHT}), got str."),
        (float("nan"), f"Expected a finite number ({WEIGHT}), got nan."),
        (1.7, "An attention weight lies between 0 and 1 (each row sums to 1); got 1.7."),
    ],
)
def test_weight_checks_say_what_was_expected_and_what_arrived(check, answer, message):
    assert check(answer) == Feedback(False, message)


def test_doubled_query():
    assert ex.check_doubled_query(np.exp(4) / (2 + 2 * np.exp(4)))
    assert ex.check_doubled_query(0.491)
    assert "before the change" in ex.check_doubled_query(0.44).message
    assert not ex.check_doubled_query(0.9)


def test_causal_weight():
    x, params = worked_example()
    _, w = mha.multi_head_attention(x, x, x, params, mask=mha.causal_mask(4))
    by_hand = math.exp(2) / (1 + math.exp(2))
    assert w[0, 1, 1] == pytest.approx(by_hand)
    assert ex.check_causal_weight(by_hand)
    assert ex.check_causal_weight(0.881)
    assert "without the mask" in ex.check_causal_weight(0.44).message
    assert not ex.check_causal_weight(0.5)


def test_shapes():
    assert ex.check_shapes((10, 10), (10, 8))
    assert ex.check_shapes([10, 10], [10, 8])
    assert ex.check_shapes(None, None) == Feedback(
        False, "Replace None with the shape of one head's scores, a tuple like (2, 3)."
    )
    assert ex.check_shapes((10, 10), None) == Feedback(
        False, "Replace None with the shape of the concatenation, a tuple like (2, 3)."
    )
    assert ex.check_shapes(10, (10, 8)) == Feedback(
        False, "Expected the shape of one head's scores, a tuple like (2, 3), got int."
    )
    assert ex.check_shapes((10, 10), (10.0, 8.0)) == Feedback(
        False, "Expected the shape of the concatenation, a tuple like (2, 3), whole numbers only; got (10.0, 8.0)."
    )
    assert "Q_i or head_i" in ex.check_shapes((10, 4), (10, 8)).message
    assert "one head's output" in ex.check_shapes((10, 10), (10, 4)).message
    assert not ex.check_shapes((4, 4), (10, 8))
    assert not ex.check_shapes((10, 10), (8, 10))
