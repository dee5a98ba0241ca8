"""Lesson 4's exercise checks accept the solutions and reject typical wrong answers with a hint."""

import numpy as np
import pytest

from mha_lesson.demos import toy
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson04 as ex


def test_scale_fix():
    # independent: the same kind of head, 64 queries x 32 keys of d_k = 1024 / 4 unit-variance components
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((64, 1024))[:, :256], rng.standard_normal((32, 1024))[:, :256]
    raw = q @ k.T

    def largest(divisor):
        z = raw / divisor
        p = np.exp(z - z.max(axis=1, keepdims=True))
        return (p / p.sum(axis=1, keepdims=True)).max(axis=1).mean()

    assert largest(1) > 0.9 and largest(256) < 0.05  # the bug saturates; dividing by d_k is nearly uniform (1/32)
    assert (raw / 16).var() == pytest.approx(1, abs=0.1)
    assert ex.check_scale_fix(16) and ex.check_scale_fix(np.sqrt(256)) and ex.check_scale_fix(np.float32(16))
    assert f"{largest(16):.2f}" in ex.check_scale_fix(16).message  # the check reports the rows it measured
    hints = {
        1: "no scale at all",
        256: "Too soft",
        1024: "d_model",
        32: "d_model",
        8: "still too sharp",
        64: "too soft",
    }
    for wrong, hint in hints.items():
        result = ex.check_scale_fix(wrong)
        assert not result and hint in result.message and "16" not in result.message.replace("0.16", "")
        assert f"{largest(wrong):.2f}" in result.message
    for bad in (0, -16):
        assert "positive" in ex.check_scale_fix(bad).message
    assert "Replace None" in ex.check_scale_fix(None).message


def test_score_variance():
    assert ex.check_score_variance(64 * 2 * 3)
    assert ex.check_score_variance(384.0)
    for wrong in (None, 64, 64 * 5, 6, 1, "384", [384]):
        result = ex.check_score_variance(wrong)
        assert not result and result.message and "384" not in result.message


def test_next_token_shift():
    assert ex.check_next_token_shift(np.eye(toy.MAX_LEN, k=1))
    assert ex.check_next_token_shift(np.eye(toy.MAX_LEN, k=1).tolist())
    for wrong in (None, toy.PREVIOUS, np.eye(toy.MAX_LEN), np.eye(3), "shift", np.eye(toy.MAX_LEN, k=2)):
        result = ex.check_next_token_shift(wrong)
        assert not result and result.message


def test_causal_duplicate():
    # the right answer is what the weights say, computed independently here
    best = int(np.argmax(toy.toy_weights(causal=True)[1][ex.DUPLICATE_QUERY]))
    assert best == 0
    assert ex.check_causal_duplicate(best)
    assert ex.check_causal_duplicate(np.int64(best))
    for wrong in (None, 3, 6, 9, 1, 2.5, "0"):
        result = ex.check_causal_duplicate(wrong)
        assert not result and result.message


def test_half_gain():
    # independent: solve e^(8g) / (e^(8g) + 10) = 1/2 numerically by bisection on the softmax itself
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        row = np.exp(mid * np.where(np.arange(11) == 4, 8.0, 0.0))
        lo, hi = (mid, hi) if row[4] / row.sum() < 0.5 else (lo, mid)
    assert lo == pytest.approx(np.log(10) / 8, abs=1e-9)
    assert ex.check_half_gain(lo)
    assert ex.check_half_gain(np.float32(0.288))
    hints = {
        0.0: "how many keys score 0",
        np.log(2) / 8: "how many keys score 0",
        np.log(10): "8g, not g",
        np.log(11) / 8: "count the others",
        0.5: "more than half",
        0.1: "less than half",
        5.0: "between 0 and 2",
    }
    for wrong, hint in hints.items():
        result = ex.check_half_gain(wrong)
        assert not result and hint in result.message and "0.288" not in result.message
    assert "Replace None" in ex.check_half_gain(None).message


VARIANCE, POSITION = "the variance of q·k", "a key position, an integer from 0 to 10"


@pytest.mark.parametrize(
    ("check", "answer", "message"),
    [
        (ex.check_score_variance, None, f"Replace None with {VARIANCE}."),
        (ex.check_score_variance, "384", f"Expected a number ({VARIANCE}), got str."),
        (ex.check_score_variance, [384], f"Expected a number ({VARIANCE}), got list."),
        (ex.check_score_variance, True, f"Expected a number ({VARIANCE}), got bool."),
        (ex.check_score_variance, float("nan"), f"Expected a finite number ({VARIANCE}), got nan."),
        (ex.check_causal_duplicate, None, f"Replace None with {POSITION}."),
        (ex.check_causal_duplicate, "0", f"Expected a number ({POSITION}), got str."),
        (ex.check_causal_duplicate, 2.5, f"Expected a whole number ({POSITION}), got 2.5."),
    ],
)
def test_bad_input_says_what_was_expected_and_what_arrived(check, answer, message):
    assert check(answer) == Feedback(False, message)


@pytest.mark.parametrize("answer", [0, 0.0, np.int64(0), np.float32(0)])
def test_causal_duplicate_accepts_any_whole_number(answer):
    assert ex.check_causal_duplicate(answer).correct


def test_score_variance_accepts_numpy_numbers():
    assert ex.check_score_variance(np.float32(384)).correct and ex.check_score_variance(np.int64(384)).correct


@pytest.mark.parametrize(
    "check",
    [
        ex.check_scale_fix,
        ex.check_score_variance,
        ex.check_half_gain,
        ex.check_next_token_shift,
        ex.check_causal_duplicate,
    ],
)
def test_none_gets_a_friendly_hint(check):
    assert "Replace None" in check(None).message
