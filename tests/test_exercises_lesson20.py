"""Lesson 20 (your own language model) exercises: right answers pass, typical wrong ones get their hint; the
prediction's answer is measured on the shipped model, and the kinds' losses recombine to the overall loss."""

import numpy as np
import pytest

from mha_lesson import lm
from mha_lesson.demos import lm as lesson
from mha_lesson.exercises import lesson20 as ex
from mha_lesson.lm import corpus


def test_ablation_prediction_is_measured_on_the_model():
    r = ex.ablation_by_kind()
    rise = r["ablated"] - r["intact"]
    assert np.argmax(rise) == 2 and rise[2] > 2 * rise[1] > 0  # the lesson's answer "c", with a wide margin
    assert ex.check_ablation_prediction("c") and ex.check_ablation_prediction(" C ")
    assert "whole word" in ex.check_ablation_prediction("b").message
    assert "hardest" in ex.check_ablation_prediction("a").message
    assert "None" in ex.check_ablation_prediction(None).message
    assert "letters" in ex.check_ablation_prediction("d").message
    # The kinds' losses, weighted by their shares, are the overall loss of the same windows (lm's own loss).
    params, config, _, _ = lesson.load_model()
    windows = lesson.windows(corpus.load()[2], 64, config.n_ctx + 1)
    loss, _ = lm.loss_and_grads(params, config, windows[:, :-1], windows[:, 1:])
    assert (r["intact"] * r["share"]).sum() == pytest.approx(loss, rel=1e-5)
    assert "| space, punctuation or newline | 24% |" in ex.ablation_table_markdown()


def test_cache_size():
    assert ex.check_cache_size(196608) and ex.check_cache_size(np.int64(196608))
    assert "key and its value" in ex.check_cache_size(98304).message
    assert "own cache" in ex.check_cache_size(32768).message
    assert "h x d_k = d_model" in ex.check_cache_size(24576).message
    assert "h x d_k = d_model" in ex.check_cache_size(12288).message
    assert "already counts every head" in ex.check_cache_size(1572864).message
    assert "Count per token" in ex.check_cache_size(1000).message
    assert "None" in ex.check_cache_size(None).message


def test_diagnosis():
    assert ex.check_diagnosis("b")
    assert "two layers" in ex.check_diagnosis("a").message
    assert "same four heads" in ex.check_diagnosis("c").message
    assert "finds copying" in ex.check_diagnosis("d").message


def test_the_ablation_table_appears_only_after_a_prediction():
    table = ex.ablation_table_markdown()
    for answer in (None, "", "d", 3):
        shown = ex.ablation_table_after(answer)
        assert "| target character |" not in shown and "prediction" in shown
    for answer in ("a", " C "):
        assert ex.ablation_table_after(answer) == table
