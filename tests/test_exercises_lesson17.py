"""Lesson 17's exercise checks: right answers pass, common wrong ones get a specific hint, None is friendly;
and the buggy tiled softmax of exercise 3 goes wrong exactly when its solution says."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha_lesson as mha
from mha_lesson.exercises import lesson17 as ex


@pytest.mark.parametrize("check", [ex.check_kv_cache_size, ex.check_h_kv_budget, ex.check_diagnosis])
def test_none_gets_a_friendly_message(check):
    assert not check(None) and "Replace None" in check(None).message


@pytest.mark.parametrize("check", [ex.check_kv_cache_size, ex.check_h_kv_budget])
def test_non_numbers_are_refused(check):
    assert not check("8") and "number" in check("8").message
    assert not check(2.5) and "whole number" in check(2.5).message


def test_kv_cache_size():
    by_hand = 2 * 40 * 8192 * 8 * 128 * 2  # K and V, layers, tokens, key/value heads, d_k, bytes
    assert by_hand == ex.kv_cache_answer() == 1_342_177_280
    assert ex.check_kv_cache_size(by_hand) and ex.check_kv_cache_size(float(by_hand))
    assert "40 heads" in ex.check_kv_cache_size(by_hand * 5).message
    assert "keys and values" in ex.check_kv_cache_size(by_hand // 2).message
    assert "2 bytes" in ex.check_kv_cache_size(by_hand * 2).message
    assert "one layer" in ex.check_kv_cache_size(by_hand // 40).message
    assert "unit" in ex.check_kv_cache_size(1.25).message
    assert not ex.check_kv_cache_size(123) and "Multiply" in ex.check_kv_cache_size(123).message


def test_h_kv_budget():
    # One key/value head: 2 · 32 layers · 8192 tokens · 128 · 2 bytes · 16 sequences = 2 GiB; 24 GiB allow 12.
    assert ex.budget_bytes(1) == 2 * 2**30 and ex.best_h_kv() == 8
    assert ex.check_h_kv_budget(8) and "32 GiB" in ex.check_h_kv_budget(8).message
    assert "divide" in ex.check_h_kv_budget(12).message
    assert "more than" in ex.check_h_kv_budget(16).message and not ex.check_h_kv_budget(32)
    assert "larger h_kv also fits" in ex.check_h_kv_budget(4).message and not ex.check_h_kv_budget(1)
    assert "from 1" in ex.check_h_kv_budget(0).message and "from 1" in ex.check_h_kv_budget(64).message


def test_diagnosis():
    assert ex.check_diagnosis("b") and ex.check_diagnosis(" B ")
    for letter in "acd":
        feedback = ex.check_diagnosis(letter)
        assert not feedback and feedback.message.startswith("Try")
    assert "letters" in ex.check_diagnosis("e").message


def _ordered_inputs(rng, n, increasing):
    """One query and n keys whose scores rise (or fall) with the key index; random values."""
    q = np.ones((1, 4))
    k = np.outer(np.sort(rng.normal(size=n)) * 3, np.ones(4))
    return q, (k if increasing else k[::-1].copy()), rng.normal(size=(n, 3))


@given(st.integers(0, 2**32 - 1), st.integers(5, 30), st.integers(1, 4))
def test_buggy_tiled_is_wrong_exactly_when_the_max_moves_to_a_later_block(seed, n, block):
    rng = np.random.default_rng(seed)
    for increasing in (True, False):
        q, k, v = _ordered_inputs(rng, n, increasing)
        error = np.abs(ex.buggy_tiled(q, k, v, block) - mha.scaled_dot_product_attention(q, k, v)[0]).max()
        if increasing:  # every block raises the max: the bug shows
            assert error > 1e-6
        else:  # the first block holds the max: every factor is 1
            assert error < 1e-12
    q, k, v = _ordered_inputs(rng, n, True)
    one_block = ex.buggy_tiled(q, k, v, block=n)
    np.testing.assert_allclose(one_block, mha.scaled_dot_product_attention(q, k, v)[0], atol=1e-12)
