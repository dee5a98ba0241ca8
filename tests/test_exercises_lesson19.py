"""Lesson 19 (attention in today's models) exercises: right answers pass, typical wrong ones get their hint."""

import math

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


def test_cache_share():
    assert ex.check_cache_share((8 * 131072 + 40 * 4096) / (48 * 131072))
    assert "bug" in ex.check_cache_share(1.0).message
    assert "add them" in ex.check_cache_share(8 / 48).message
    assert "percentage" in ex.check_cache_share(19.27).message
