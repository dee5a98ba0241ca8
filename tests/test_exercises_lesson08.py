"""Lesson 8's exercise checks: right answers (the notebook's solutions) pass, typical slips get specific hints."""

import dataclasses
import math

import numpy as np
import pytest

import mha_lesson as mha
from mha_lesson.demos.examples import worked_example
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson08 as ex


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


def _loop_trace(params):
    x, _ = worked_example()
    return mha.multi_head_attention_loop(x, x, x, params, return_trace=True)[2]


def test_changed_stages_by_an_explicit_comparison_of_the_traces():
    """Doubling head 1's W^K columns moves K and everything of head 1 downstream, nothing of head 0, not Q or V."""
    _, params = worked_example()
    w_k = params.w_k.copy()
    w_k[:, 4:8] *= 2
    before, after = _loop_trace(params), _loop_trace(dataclasses.replace(params, w_k=w_k))

    def moved(a, b):
        return not np.allclose(a, b, rtol=0, atol=1e-12)

    assert not moved(before["weights"][0], after["weights"][0]) and moved(before["weights"][1], after["weights"][1])
    assert not moved(before["Q_i"][1], after["Q_i"][1]) and not moved(before["V_i"][1], after["V_i"][1])
    assert moved(before["K_i"][1], after["K_i"][1]) and moved(before["output"], after["output"])
    assert np.allclose(after["scores"][1], 2 * before["scores"][1])  # doubled keys double every score
    assert ex.changed_stages() == {"K", "scores 1", "weights 1", "head_1", "concat", "output"}


def test_changed_stages_check():
    right_answer = {"K", "scores 1", "weights 1", "head_1", "concat", "output"}
    assert ex.check_changed_stages(right_answer)
    assert ex.check_changed_stages([s.upper() for s in right_answer])  # case does not matter
    for answer, hint in [
        (right_answer | {"Q"}, "W^Q and W^V"),
        (right_answer - {"K"}, "which of Q, K, V"),
        (right_answer | {"weights 0"}, "Head 0 reads only its own columns"),
        (right_answer - {"weights 1"}, "softmax of doubled scores"),
        (right_answer - {"output"}, "W^O mixes"),
        (right_answer - {"concat", "output"}, "W^O mixes"),
    ]:
        feedback = ex.check_changed_stages(answer)
        assert not feedback.correct and hint in feedback.message, (answer, feedback.message)
    assert ex.check_changed_stages(None) == Feedback(
        False, 'Replace None with a set of stage names, e.g. {"Q", "scores 0"}.'
    )
    assert "got ['scores 2']" in ex.check_changed_stages({"scores 2"}).message
    assert "got int" in ex.check_changed_stages(3).message
