"""Lesson 19 (attention in today's models) exercises: right answers pass, typical wrong ones get their hint."""

import math

import numpy as np

from mha_lesson.exercises import lesson19 as ex


def test_sink_logit():
    assert ex.check_sink_logit(math.log(7))
    assert "logarithm" in ex.check_sink_logit(7).message
    assert "7/8" in ex.check_sink_logit(0).message
    assert "negative" in ex.check_sink_logit(-math.log(7)).message
    assert "None" in ex.check_sink_logit(None).message


def test_latent_width():
    assert ex.check_latent_width(768)
    assert "RoPE" in ex.check_latent_width(832).message
    assert "twice" in ex.check_latent_width(320).message
    assert "does not fit" in ex.check_latent_width(896).message
    assert "multiple" in ex.check_latent_width(700).message
    assert "larger" in ex.check_latent_width(640).message


def delta_step(S, k, v, beta):
    """The right answer, written independently of the library: S (I - β k kᵀ) + β v kᵀ."""
    return S @ (np.eye(len(k)) - beta * np.outer(k, k)) + beta * np.outer(v, k)


def test_delta_step():
    assert ex.check_delta_step(delta_step)
    assert "additive" in ex.check_delta_step(lambda S, k, v, b: S + b * np.outer(v, k)).message
    assert "β_t" in ex.check_delta_step(lambda S, k, v, b: S + np.outer(v - S @ k, k)).message
    assert "towards v" in ex.check_delta_step(lambda S, k, v, b: S - b * np.outer(v - S @ k, k)).message
    assert "np.outer" in ex.check_delta_step(lambda S, k, v, b: S + b * np.outer(k, v - S @ k)).message  # transposed
    assert "differ" in ex.check_delta_step(lambda S, k, v, b: 0.5 * S + b * np.outer(v - S @ k, k)).message
    assert "Replace None" in ex.check_delta_step(None).message
    assert "returned None" in ex.check_delta_step(lambda S, k, v, b: None).message
    assert "function" in ex.check_delta_step(3).message


def test_in_place_steps_are_accepted():
    def in_place(S, k, v, beta):
        S += beta * np.outer(v - S @ k, k)
        return S

    assert ex.check_delta_step(in_place)
