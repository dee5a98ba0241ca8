"""Lesson 3's exercise checks accept the solutions and reject typical wrong answers with a hint."""

import numpy as np
import pytest

from mha_lesson import toy
from mha_lesson.exercises import lesson03 as ex


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


def test_causal_coref():
    # the right answer is what the weights say, computed independently here
    best = int(np.argmax(toy.toy_weights(causal=True)[1][ex.COREF_QUERY]))
    assert best == 0
    assert ex.check_causal_coref(best)
    assert ex.check_causal_coref(np.int64(best))
    for wrong in (None, 3, 6, 9, 1, 2.5, "0"):
        result = ex.check_causal_coref(wrong)
        assert not result and result.message


@pytest.mark.parametrize("check", [ex.check_score_variance, ex.check_next_token_shift, ex.check_causal_coref])
def test_none_gets_a_friendly_hint(check):
    assert "Replace None" in check(None).message
