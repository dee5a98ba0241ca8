"""Lesson 8's exercise checks: right answers pass, common wrong ones get a specific hint, None is friendly."""

import numpy as np
import pytest

from mha_lesson.exercises import lesson08 as ex


@pytest.mark.parametrize("check", [ex.check_param_count, ex.check_crossover, ex.check_memory_bytes])
def test_none_and_non_numbers_get_a_friendly_message(check):
    assert not check(None) and "Replace None" in check(None).message
    assert not check("12") and "number" in check("12").message
    assert not check(float("nan"))


def test_param_count():
    assert ex.check_param_count(4 * 1280**2) and ex.check_param_count(6_553_600)
    assert ex.check_param_count(float(4 * 1280**2))
    assert "biases" in ex.check_param_count(4 * 1280**2 + 4 * 1280).message
    assert "W^O" in ex.check_param_count(3 * 1280**2).message
    assert "full width" in ex.check_param_count(20 * 4 * 1280**2).message
    assert "one head" in ex.check_param_count(4 * 1280 * 64).message
    assert not ex.check_param_count(4 * 1024**2)  # the table's BERT-large row is a different layer
    assert not ex.check_param_count(123)


def test_crossover():
    exact = 8 * 2048**2 / (4 * 2048 + 5 * 16)  # 33,554,432 / 8,272 = 4056.4
    assert round(exact) == 4056
    for answer in (4056, 4057, exact, round(exact)):
        assert ex.check_crossover(answer), answer
    assert "softmax" in ex.check_crossover(4096).message
    assert "solve" in ex.check_crossover(2048).message
    assert "solve" in ex.check_crossover(1000).message and not ex.check_crossover(1000)


def test_memory_bytes():
    assert ex.check_memory_bytes(16 * 4096**2 * 2)
    assert "float32" in ex.check_memory_bytes(16 * 4096**2 * 4).message
    assert "one head" in ex.check_memory_bytes(4096**2 * 2).message
    assert "bytes" in ex.check_memory_bytes(16 * 4096**2).message
    assert "n × n" in ex.check_memory_bytes(16 * 4096 * 2).message
    assert not ex.check_memory_bytes(np.int64(7))
