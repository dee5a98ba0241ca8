"""Lesson 15's exercise checks accept the right answer and reject wrong ones with a hint.

The checks read the notebook's own numbers (corpus scores, a head's determiner arcs), so most tests feed them hand-made
arrays whose answer is known by construction; one test runs the real model to confirm that the mystery head has
exactly one name under the lesson's thresholds, and what that name is.
"""

import math

import numpy as np
import pytest

from mha_lesson import head_analysis, pretrained
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson15 as ex

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
    return head_analysis.corpus_scores([w for _, w in runs]), head_analysis.uniform_baseline([len(t) for t, _ in runs])


def test_the_mystery_head_has_one_name_on_the_real_model(minilm_scores):
    scores, baseline = minilm_scores
    assert ex.kinds_of(scores, baseline, *ex.MYSTERY_HEAD) == ["[CLS] sink"]
    layer, head = ex.MYSTERY_HEAD
    assert scores["previous"][layer, head] > 3 * baseline["previous"]  # the second habit the solution names
    assert ex.check_head_kind("[CLS] sink", scores, baseline)


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


def test_the_syntax_answer_on_the_real_model(minilm):
    from mha_lesson.demos import real_heads

    sentences = head_analysis.load_relations()
    split = real_heads.next_word_split(
        head_analysis.word_maps(minilm, sentences), sentences, ex.SYNTAX_RELATION, *ex.SYNTAX_HEAD
    )
    assert ex.check_syntax_or_next_word("syntax", split) and not ex.check_syntax_or_next_word("next word", split)
