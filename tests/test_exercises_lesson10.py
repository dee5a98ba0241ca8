"""Lesson 10's exercise checks accept the right answer and reject wrong ones with a hint."""

import math

import numpy as np
import pytest

import mha_lesson as mha
from mha_lesson.exercises import lesson10 as ex


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
    for answer in (None, 5, (160, 191), (0, 32), (5, 6), ("a", "b")):
        assert not ex.check_rows_switched_off(answer)


@pytest.mark.parametrize("check", [ex.check_attention_parameters, ex.check_uniform_entropy, ex.check_rows_switched_off])
def test_none_gives_a_friendly_hint(check):
    feedback = check(None)
    assert not feedback and "Replace None" in feedback.message
