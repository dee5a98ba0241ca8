"""Lesson 11's exercise checks: right answers pass, wrong answers and the None placeholder get a hint."""

import numpy as np
import pytest

from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson11 as ex

GAIN = 6 * np.sqrt(8)  # a scaled score of 6 on the wanted key


def design(gain=GAIN, *, swap=False, route=True, second=True):
    """The solution of exercise 1, or a broken variant of it."""
    w_q, w_o = np.zeros((16, 16)), np.zeros((16, 16))
    first, other = (8, 0) if swap else (0, 8)
    for p in range(8):
        if p >= 1:
            w_q[4 + p, first + p - 1] = gain
        if p >= 2 and second:
            w_q[4 + p, other + p - 2] = gain
    if route:
        w_o[0:4, 0:4] = np.eye(4)
        w_o[8:12, 4:8] = np.eye(4)
    return w_q, w_o


def test_the_solution_makes_both_lookups():
    report = ex.design_report(*design())
    assert report["both"] == 1.0 and report["on_back"][0, 0] > 0.97 and report["on_back"][1, 1] > 0.97
    assert ex.check_two_head_design(*design())
    assert ex.check_two_head_design(*(m.tolist() for m in design()))  # nested lists are fine


def test_the_layer_reads_out_what_an_independent_loop_computes():
    """The check's layer, head by head in plain numpy, on one sequence."""
    w_q, w_o = design()
    words = ex.test_words()[0]
    x = ex.embed(words)  # (8, 16)
    out = np.zeros((8, 16))
    for i in range(2):
        cols = slice(8 * i, 8 * i + 8)
        scores = (x @ w_q[:, cols]) @ (x @ ex.W_K[:, cols]).T / np.sqrt(8)
        scores = np.where(np.tril(np.ones((8, 8), bool)), scores, -np.inf)
        a = np.exp(scores - scores.max(axis=1, keepdims=True))
        a /= a.sum(axis=1, keepdims=True)
        out += (a @ (x @ ex.W_V[:, cols])) @ w_o[cols]
    answers = ex.read_out(out)
    np.testing.assert_array_equal(answers[2:, 0], words[1:-1])
    np.testing.assert_array_equal(answers[2:, 1], words[:-2])


@pytest.mark.parametrize(
    ("kwargs", "hint"),
    [
        ({"gain": 1.0}, "softly"),
        ({"swap": True}, "swap them"),
        ({"route": False}, "check W^O"),
        ({"second": False}, "head 1 does not look"),
        ({"gain": 0.0}, "head 0 and head 1 do not look"),
    ],
)
def test_broken_designs_get_the_hint_for_what_is_broken(kwargs, hint):
    feedback = ex.check_two_head_design(*design(**kwargs))
    assert not feedback and hint in feedback.message


@pytest.mark.parametrize(
    ("w_q", "w_o", "message"),
    [
        (None, np.eye(16), "Replace None with a (16, 16) matrix for w_q."),
        (np.eye(16), None, "Replace None with a (16, 16) matrix for w_o."),
        (np.eye(8), np.eye(16), "w_q: expected shape (16, 16) (weights applied as x @ W), got (8, 8)."),
        (
            np.full((16, 16), np.inf),
            np.eye(16),
            "w_q: use finite numbers; a large gain is enough to make a head sharp.",
        ),
    ],
)
def test_bad_input_says_what_was_expected(w_q, w_o, message):
    assert ex.check_two_head_design(w_q, w_o) == Feedback(False, message)


def test_one_head_exercise_is_answered_by_a_trained_model():
    shares = ex.one_head_shares()  # (read-outs, 4): 1 back, 2 back, the current token, the rest
    assert shares.shape == (2, 4)
    np.testing.assert_allclose(shares.sum(axis=1), 1, atol=1e-6)
    assert shares[0, 0] > 0.9  # read-out 0 knows its token
    assert ex.one_head_pattern(shares[1]) == "b"
    assert ex.check_one_head("b") and ex.check_one_head("B") and ex.check_one_head({"b"})
    for letter in "acd":
        assert not ex.check_one_head(letter)
    assert "Choose one letter" in ex.check_one_head({"a", "b"}).message
    assert "Replace None" in ex.check_one_head(None).message


def test_one_head_pattern_classifies_each_option():
    assert ex.one_head_pattern(np.array([0.54, 0.34, 0.01, 0.11])) == "b"
    assert ex.one_head_pattern(np.array([0.1, 0.8, 0.0, 0.1])) == "a"
    assert ex.one_head_pattern(np.array([0.07, 0.07, 0.07, 0.79])) == "c"
    assert ex.one_head_pattern(np.array([0.1, 0.1, 0.7, 0.1])) == "d"
    assert ex.one_head_pattern(np.array([0.3, 0.35, 0.2, 0.15])) is None


def test_narrow_heads_exercise_is_answered_by_measurements():
    assert ex.narrow_evidence() == {"b", "d"}
    assert ex.check_narrow_heads({"b", "d"}) and ex.check_narrow_heads("bd") and ex.check_narrow_heads(["D", "b"])
    assert "Count the parameters" in ex.check_narrow_heads({"a", "b", "d"}).message
    assert "loss curves" in ex.check_narrow_heads({"b", "c", "d"}).message
    assert "missing" in ex.check_narrow_heads({"b"}).message
    assert "Replace None" in ex.check_narrow_heads(None).message
    assert not ex.check_narrow_heads({"z"})
