"""Lesson 13's exercise checks accept the right answer and reject wrong ones with a hint.

The checks read the notebook's own numbers (corpus scores, ablation cosines), so most tests feed them hand-made
arrays whose answer is known by construction; one test runs the real model to confirm that the mystery head has
exactly one name under the lesson's thresholds, and what that name is.
"""

import math

import numpy as np
import pytest

from mha_lesson import headscores, pretrained
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson13 as ex

KEYS = ("previous", "next", "self", "[CLS]", "[SEP]", "entropy")
BASELINE = {"previous": 0.07, "next": 0.07, "self": 0.07, "[CLS]": 0.07, "[SEP]": 0.07, "entropy": 2.6}


def made_up_scores(**mystery: float) -> dict[str, np.ndarray]:
    """(6, 12) score arrays at the baseline everywhere, except the mystery head's given scores."""
    scores = {key: np.full((6, 12), BASELINE[key]) for key in KEYS}
    scores["entropy"][:] = 1.5  # below 80% of 2.6: no head is broad unless made so
    for key, value in mystery.items():
        scores[key.replace("CLS", "[CLS]").replace("SEP", "[SEP]")][ex.MYSTERY_HEAD] = value
    return scores


@pytest.mark.parametrize(
    ("scores", "kinds"),
    [
        ({"CLS": 0.7, "previous": 0.32}, ["[CLS] sink"]),
        ({"previous": 0.9}, ["previous token"]),
        ({"next": 0.6, "SEP": 0.55}, ["next token", "[SEP] sink"]),
        ({"entropy": 2.5}, ["broad"]),
        ({}, []),
    ],
)
def test_kinds_follow_the_lesson_thresholds(scores, kinds):
    assert ex.kinds_of(made_up_scores(**scores), BASELINE, *ex.MYSTERY_HEAD) == kinds


def test_head_kind_right_and_wrong():
    scores = made_up_scores(CLS=0.7, previous=0.32)
    right = ex.check_head_kind("[CLS] sink", scores, BASELINE)
    assert right and "0.70" in right.message and "0.32" in right.message
    assert ex.check_head_kind("  [cls]   SINK ", scores, BASELINE)
    secondary = ex.check_head_kind("previous token", scores, BASELINE)
    assert not secondary and "well above the uniform baseline" in secondary.message
    assert "passes its threshold" in ex.check_head_kind("broad", scores, BASELINE).message
    assert ex.check_head_kind(None, scores, BASELINE) == Feedback(
        False, "Replace None with one of 'previous token', 'next token', '[CLS] sink', '[SEP] sink', 'broad'."
    )
    assert "got 'sink'" in ex.check_head_kind("sink", scores, BASELINE).message
    ambiguous = made_up_scores(next=0.6, SEP=0.55)
    assert "no single name" in ex.check_head_kind("next token", ambiguous, BASELINE).message


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


def test_uniform_entropy():
    w = np.full(8, 1 / 8)
    assert ex.check_uniform_entropy(float(-(w * np.log(w)).sum()))
    for answer in (None, "x", math.log2(8), 1 / 8, 1.0):
        assert not ex.check_uniform_entropy(answer)
    assert "bits" in ex.check_uniform_entropy(math.log2(8)).message


ENTROPY = "the entropy in nats: use the natural logarithm"


def test_bad_entropy_input_says_what_was_expected_and_what_arrived():
    assert ex.check_uniform_entropy(None) == Feedback(False, f"Replace None with {ENTROPY}.")
    assert ex.check_uniform_entropy("2.08") == Feedback(False, f"Expected a number ({ENTROPY}), got str.")


@pytest.fixture(scope="module")
def minilm_scores(minilm):
    runs = minilm.attentions_many(pretrained.corpus())
    return headscores.corpus_scores([w for _, w in runs]), headscores.uniform_baseline([len(t) for t, _ in runs])


def test_the_mystery_head_has_one_name_on_the_real_model(minilm_scores):
    scores, baseline = minilm_scores
    assert ex.kinds_of(scores, baseline, *ex.MYSTERY_HEAD) == ["[CLS] sink"]
    layer, head = ex.MYSTERY_HEAD
    assert scores["previous"][layer, head] > 3 * baseline["previous"]  # the second habit the solution names
    assert ex.check_head_kind("[CLS] sink", scores, baseline)


# Interpreting syntax heads, pruning and value norms -------------------------------------------------------------


def test_syntax_or_next_word_reads_the_arcs_whose_noun_is_further_away():
    syntax = {"next word": (10, 10), "further away": (8, 10)}
    assert ex.check_syntax_or_next_word("syntax", syntax)
    assert ex.check_syntax_or_next_word(" Syntax ", syntax)
    hint = ex.check_syntax_or_next_word("next-word", syntax)
    assert not hint and "'further away' group" in hint.message
    positional = {"next word": (10, 10), "further away": (1, 10)}  # only the next-word cases: position explains it
    assert ex.check_syntax_or_next_word("next word", positional)
    assert not ex.check_syntax_or_next_word("syntax", positional)
    assert "Replace None" in ex.check_syntax_or_next_word(None, syntax).message
    assert "got 'semantic'" in ex.check_syntax_or_next_word("semantic", syntax).message


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


def test_the_interpretation_answers_on_the_real_model(minilm):
    from mha_lesson.demos import real_heads

    sentences = headscores.load_relations()
    split = real_heads.next_word_split(
        headscores.word_maps(minilm, sentences), sentences, ex.SYNTAX_RELATION, *ex.SYNTAX_HEAD
    )
    assert ex.check_syntax_or_next_word("syntax", split) and not ex.check_syntax_or_next_word("next word", split)
    ref = headscores.pruning_reference()
    n = 2 * len(headscores.load_paraphrases())
    assert ex.SYNTAX_HEAD in ex.harmless_heads(ref)  # the solution's remark: the determiner head is not needed
    assert "section 7's determiner head" in ex.check_prune_first(ex.SYNTAX_HEAD, ref, n).message
    assert not ex.check_prune_first((5, 8), ref, n)  # the last head the pruning order removes
    sinks = headscores.sink_scores(minilm)
    layer, head = ex.sink_head(sinks)
    assert sinks["attention"]["[CLS]"][layer, head] > 0.5 > sinks["value-norm"]["[CLS]"][layer, head]
    assert ex.check_sink_reading("b", sinks)
