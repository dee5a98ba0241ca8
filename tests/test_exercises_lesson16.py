"""Lesson 16's exercise checks accept the right answer and reject wrong ones with a hint.

Hand-made arrays whose answer is known by construction first; one test runs the real model and the shipped pruning
results to confirm the answers the solutions give.
"""

import numpy as np

from mha_lesson import head_analysis
from mha_lesson.exercises import lesson16 as ex


def test_ablation_layer_reads_the_mean_per_layer_not_the_single_largest_head():
    cosine = np.ones((6, 12))
    cosine[2, 0] = 0.90  # the single head that moves the embedding most ...
    cosine[4] = 0.98  # ... but layer 4's heads move it most on average (0.02 against 0.1 / 12)
    assert ex.check_ablation_layer(4, cosine)
    assert ex.check_ablation_layer(np.int64(4), cosine)
    assert "single head" in ex.check_ablation_layer(2, cosine).message
    assert "Average 1 - cosine" in ex.check_ablation_layer(0, cosine).message
    assert "numbered 0 to 5; got 6" in ex.check_ablation_layer(6, cosine).message
    assert "Replace None" in ex.check_ablation_layer(None, cosine).message
    assert "whole number" in ex.check_ablation_layer(2.5, cosine).message


def made_up_pruning() -> dict[str, np.ndarray]:
    """2 layers x 3 heads over 10 sentences: (0, 0) harmless both ways, (0, 1) costs a sentence, (0, 2) only
    shrinks the margin, (1, 0) is harmless by zero- but not by mean-ablation, (1, 1) harmless, (1, 2) shrinks it."""
    return {
        "accuracy_drop_zero": np.array([[0.0, 0.1, 0.0], [0.0, 0.0, 0.0]]),
        "accuracy_drop_mean": np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]),
        "margin_drop_zero": np.array([[-0.002, 0.004, 0.003], [-0.001, 0.0, 0.002]]),
        "margin_drop_mean": np.array([[-0.001, 0.002, 0.001], [0.002, -0.003, 0.001]]),
    }


def test_prune_first_accepts_a_head_harmless_by_both_ablations():
    ref = made_up_pruning()
    assert ex.harmless_heads(ref) == [(0, 0), (1, 1)]
    right = ex.check_prune_first((0, 0), ref, 10)
    assert right and "+0.0020 (zero) and +0.0010 (mean)" in right.message
    assert ex.check_prune_first([1, 1], ref, 10)
    assert "loses 1 sentence(s) by zero-ablation" in ex.check_prune_first((0, 1), ref, 10).message
    assert "the two ablations disagree" in ex.check_prune_first((1, 0), ref, 10).message
    assert "shrinks by 0.0030 (zero) and 0.0010 (mean)" in ex.check_prune_first((0, 2), ref, 10).message
    assert "Layers go from 0 to 1 and heads from 0 to 2; got (2, 0)" in ex.check_prune_first((2, 0), ref, 10).message
    assert "Replace None" in ex.check_prune_first(None, ref, 10).message
    assert not ex.check_prune_first("(0, 0)", ref, 10)  # a string is not a pair of numbers


def made_up_sinks() -> dict:
    """Head (1, 0) puts 90% of its weight on [CLS], whose value vector is 20 times shorter than a word's."""
    attention = np.array([[0.2, 0.3], [0.9, 0.4]])
    weighted = np.array([[0.05, 0.1], [0.31, 0.1]])
    norms = {"[CLS]": np.full((2, 2), 0.2), "[SEP]": np.full((2, 2), 3.0), "other": np.full((2, 2), 4.0)}
    return {"attention": {"[CLS]": attention}, "value-norm": {"[CLS]": weighted}, "norms": norms}


def test_sink_reading():
    sinks = made_up_sinks()
    assert ex.sink_head(sinks) == (1, 0)
    right = ex.check_sink_reading("b", sinks)
    assert right and "gives [CLS] 90%" in right.message and "20 times" in right.message and "only 31%" in right.message
    assert ex.check_sink_reading(" B ", sinks)
    assert "How long is that vector" in ex.check_sink_reading("a", sinks).message
    assert "mean over all tokens" in ex.check_sink_reading("c", sinks).message
    assert "far above the others" in ex.check_sink_reading("d", sinks).message
    assert "one of the letters a, b, c, d" in ex.check_sink_reading("e", sinks).message
    assert "Replace None" in ex.check_sink_reading(None, sinks).message


def test_the_answers_on_the_real_model(minilm):
    ref = head_analysis.pruning_reference()
    n = 2 * len(head_analysis.load_paraphrases())
    assert ex.SYNTAX_HEAD in ex.harmless_heads(ref)  # the solution's remark: the determiner head is not needed
    assert "lesson 15's determiner head" in ex.check_prune_first(ex.SYNTAX_HEAD, ref, n).message
    assert not ex.check_prune_first((5, 8), ref, n)  # the last head the pruning order removes
    sinks = head_analysis.sink_scores(minilm)
    layer, head = ex.sink_head(sinks)
    assert sinks["attention"]["[CLS]"][layer, head] > 0.5 > sinks["value-norm"]["[CLS]"][layer, head]
    assert ex.check_sink_reading("b", sinks)
