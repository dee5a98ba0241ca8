"""Lesson 1's exercise checks: right answers pass, wrong answers and the None placeholder get a hint."""

import numpy as np
import pytest

from mha_lesson.demos import one_head as oh
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson01 as ex

TASK = oh.binding_task()


def test_same_map_exercise_answer_is_computed():
    assert oh.best_single_head(TASK.a, TASK.a) == pytest.approx((0.5, 1.0))
    assert ex.check_same_map((1.0, 0.5)) and ex.check_same_map([1, 0.5]) and ex.check_same_map(np.array([1.0, 0.5]))
    assert "independent A and B" in ex.check_same_map((0.5, 0.5)).message
    assert "proportion" in ex.check_same_map((1.0, 1.0)).message
    assert not ex.check_same_map((0.8, 0.5))


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (None, "Replace None with a pair (R², α), e.g. (0.7, 0.25)."),
        ("1, 0.5", "Expected a pair (R², α), got '1, 0.5'."),
        (1.0, "Expected a pair (R², α), got 1.0."),
        ((1.0, 0.5, 0.0), "Expected a pair (R², α), got (1.0, 0.5, 0.0)."),
        (("1", 0.5), "Expected a number (R²), got str."),
        ((1.0, None), "Replace None with α."),
    ],
)
def test_same_map_bad_input_says_what_was_expected(answer, message):
    assert ex.check_same_map(answer) == Feedback(False, message)


SENTENCE_ANSWER = [
    {"gave": "Sara", "her": "Sara", "he": "brother", "asked": "he", "book": "old"},
    {"gave": "book"},
    {"gave": "brother"},
]


def test_sentence_heads_fewest_is_the_busiest_query_counted_by_hand():
    # By hand: "gave" needs Sara, book and brother at once; every other query needs one key.
    assert ex.fewest_heads() == 3
    assert ex.fewest_heads({"a": ("b",), "c": ("d",)}) == 1
    assert set(ex.SENTENCE_NEEDS) <= set(ex.SENTENCE)
    assert all(set(keys) <= set(ex.SENTENCE) for keys in ex.SENTENCE_NEEDS.values())


def test_head_count_right_answer_is_the_busiest_query_counted_by_hand():
    # By hand: "gave" needs three keys at once (Sara, book, brother), so 3 heads.
    assert ex.check_head_count(3) and ex.check_head_count(3.0)
    assert "busiest query" in ex.check_head_count(3).message


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (1, "hands over a blend"),  # one head for everything
        (2, "'gave' gets 2 rows of weights for its 3 keys"),
        (7, "7 is one head per lookup"),  # counted the lookups: 3 + 1 + 1 + 1 + 1
        (5, "5 is one head per query"),  # counted the queries
        (4, "enough, but not the fewest"),
        (0, "at least one head"),
        (None, "Replace None with a whole number of heads"),
        (2.5, "Expected a whole number"),
        ("3", "got str"),
    ],
)
def test_head_count_typical_wrong_answers_get_their_hint(answer, fragment):
    feedback = ex.check_head_count(answer)
    assert not feedback and fragment in feedback.message


def test_sentence_heads_right_answers_pass():
    assert ex.check_sentence_heads(SENTENCE_ANSWER)
    assert ex.check_sentence_heads(tuple(reversed(SENTENCE_ANSWER)))  # heads in any order
    spread = [
        {"gave": "book", "her": "Sara"},
        {"gave": "Sara", "he": "brother"},
        {"gave": "brother", "asked": "he", "book": "old"},
    ]
    assert ex.check_sentence_heads(spread)
    assert "busiest query" in ex.check_sentence_heads(SENTENCE_ANSWER).message


@pytest.mark.parametrize(
    ("heads", "fragment"),
    [
        # one head that asks for all of a query's keys at once: the blend
        ({"gave": ("Sara", "book", "brother"), "her": "Sara", "he": "brother", "asked": "he", "book": "old"}, "blend"),
        ([{"gave": ["Sara", "book"]}, {"gave": "brother"}], "blend"),
        # one head per lookup: right, but not the fewest
        ([{q: k} for q, keys in ex.SENTENCE_NEEDS.items() for k in keys], "with 7 heads"),
        ([*SENTENCE_ANSWER, {"her": "Sara"}], "with 4 heads"),
        # two heads: something is left out
        (SENTENCE_ANSWER[:2], "Not covered yet: gave -> brother"),
        ([{"gave": "Sara"}], "her -> Sara"),
        # a lookup that is not needed
        ([*SENTENCE_ANSWER[:2], {"gave": "brother", "he": "Sara"}], "'he' -> 'Sara'"),
    ],
)
def test_sentence_heads_typical_wrong_answers_get_their_hint(heads, fragment):
    feedback = ex.check_sentence_heads(heads)
    assert not feedback and fragment in feedback.message


@pytest.mark.parametrize(
    ("heads", "fragment"),
    [(None, "Replace None with a list of dicts"), (3, "got int"), (["gave"], "got list"), ("gave", "got str")],
)
def test_sentence_heads_bad_input_says_what_was_expected(heads, fragment):
    feedback = ex.check_sentence_heads(heads)
    assert not feedback and fragment in feedback.message


def test_dip_exercise_answer_is_measured():
    assert oh.fit_heads(TASK, (0.5, 0.5)).r2 == pytest.approx(oh.fit_heads(TASK, (0.5,)).r2, abs=1e-10)
    assert ex.check_dip("b") and ex.check_dip("B ") and ex.check_dip(["b"])
    # One head's own curve is lowest right of 0.5 (|A| < |B| tilts the sag): the message keeps the two apart.
    alphas = np.linspace(0, 1, 101)
    low = alphas[np.array([oh.fit_heads(TASK, (a,)).r2 for a in alphas]).argmin()]
    assert 0.55 < low < 0.7 and f"lowest at α = {low:.2f}" in ex.check_dip("b").message
    assert "exactly at 0.5" in ex.check_dip("b").message
    for letter in "acd":
        feedback = ex.check_dip(letter)
        assert not feedback and feedback.message
    assert "Choose one letter" in ex.check_dip({"a", "b"}).message
    assert ex.check_dip(None) == Feedback(False, "Replace None with one letter, e.g. 'a'.")
    assert not ex.check_dip("z")
