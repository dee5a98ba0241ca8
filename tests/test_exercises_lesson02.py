"""Lesson 2's exercise checks: the right answer passes, wrong ones get a hint that does not give it away."""

import pytest

import mha_lesson as mha
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson02 as ex

NAIVE_PARAMS = 4 * 12 * 768**2  # each head three 768x768 matrices, W^O of (12*768, 768)

# Exercise 1 by hand, from the shapes (d_model = 512, n = 128, h = 8 -> 16): d_k = d_model / h, the products keep
# h*d_k = d_model, every head keeps its own n x n map.
DOUBLING_H = {"d_k": "half", "attention flops": "same", "weight memory": "double"}


def test_naive_params():
    assert ex.check_naive_params(NAIVE_PARAMS).correct
    for answer, hint in [
        (4 * 768**2, "split design"),
        (3 * 12 * 768**2, "W^O is missing"),
        (3 * 12 * 768**2 + 768**2, "concatenation"),
        (123, "Count per head"),
    ]:
        feedback = ex.check_naive_params(answer)
        assert not feedback.correct and hint in feedback.message and f"{NAIVE_PARAMS}" not in feedback.message
    assert "Replace None" in ex.check_naive_params(None).message
    assert not ex.check_naive_params("12").correct


def test_doubling_h_matches_the_cost_model_and_the_hand_count():
    assert ex.predicted_changes() == DOUBLING_H
    before, after = ex.layer_costs(512, 8, 128), ex.layer_costs(512, 16, 128)
    assert after["d_k"] == before["d_k"] / 2 == 32
    assert after["attention flops"] == before["attention flops"] == 16 * 2 * (2 * 128 * 128 * 32)
    assert after["weight memory"] == 2 * before["weight memory"] == 16 * 128 * 128 * 4
    assert ex.check_doubling_h(DOUBLING_H).correct
    # Words are read loosely: case and spacing do not matter, keys neither.
    assert ex.check_doubling_h({k.upper(): f" {v.upper()} " for k, v in DOUBLING_H.items()}).correct


@pytest.mark.parametrize(
    ("key", "value", "hint"),
    [
        ("attention flops", "double", "h·d_k"),
        ("weight memory", "same", "whatever its width"),
        ("d_k", "double", "d_k = d_model / h"),
    ],
)
def test_doubling_h_hints_name_the_first_wrong_quantity(key, value, hint):
    feedback = ex.check_doubling_h(DOUBLING_H | {key: value})
    assert not feedback.correct and f"'{key}'" in feedback.message and hint in feedback.message
    assert "1 of 3" in feedback.message


def test_doubling_h_with_three_wrong_items_names_each_with_its_hint():
    answer = {"d_k": "double", "attention flops": "half", "weight memory": "same"}
    feedback = ex.check_doubling_h(answer)
    assert not feedback.correct and "3 of 3" in feedback.message
    for key in ("d_k", "attention flops", "weight memory"):
        assert f"'{key}': {ex.EXERCISE_2_HINTS[key]}" in feedback.message


def test_doubling_h_with_two_wrong_items_names_only_those():
    feedback = ex.check_doubling_h(DOUBLING_H | {"d_k": "same", "weight memory": "half"})
    assert not feedback.correct and "2 of 3" in feedback.message
    assert "'d_k'" in feedback.message and "'weight memory'" in feedback.message
    assert "'attention flops'" not in feedback.message


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (None, "Replace None with a dict"),
        (["same"] * 3, "got list"),
        ({"d_k": "half"}, "missing ['attention flops'"),
        (DOUBLING_H | {"heads": "double"}, "unexpected ['heads']"),
        (DOUBLING_H | {"d_k": "quarter"}, "got ['quarter']"),
    ],
)
def test_doubling_h_says_what_shape_of_answer_it_expects(answer, fragment):
    feedback = ex.check_doubling_h(answer)
    assert not feedback.correct and fragment in feedback.message


def test_mystery_layer_is_four_full_width_heads_counted_by_hand():
    d, n, h = 256, 64, 4
    layer = ex.mystery_layer()
    # By hand, from the shapes of h full-width heads (d_k = d_model):
    assert layer["softmax"] == 5 * h * n * n
    assert layer["scores"] == layer["weighted_sum"] == h * 2 * n * n * d
    assert layer["projections"] == 3 * 2 * n * d * (h * d)
    assert layer["output_projection"] == 2 * n * (h * d) * d
    assert layer["total"] == sum(layer[p] for p in mha.cost.PARTS)
    # What the solution reads off the table:
    assert layer["softmax"] // (5 * n * n) == h and layer["scores"] // (h * 2 * n * n) == d


def test_mystery_layer_right_and_typical_wrong_answers():
    assert ex.check_mystery_layer({"h": 4, "d_k": 256})
    assert ex.check_mystery_layer({"h": 4.0, "d_k": 256.0})
    split = ex.check_mystery_layer({"h": 4, "d_k": 64})  # assumed d_k = d_model / h
    assert not split and "assumes split heads" in split.message
    assert "solve that for d_k" in ex.check_mystery_layer({"h": 4, "d_k": 128}).message
    for h in (1, 16, 8):  # one head; the naive 16 = scores / one head's; a guess
        feedback = ex.check_mystery_layer({"h": h, "d_k": 256})
        assert not feedback and "Start from the softmax" in feedback.message
    assert "Replace None" in ex.check_mystery_layer(None).message
    assert "Expected a dict" in ex.check_mystery_layer({"h": 4}).message
    assert "Expected a number" in ex.check_mystery_layer({"h": "4", "d_k": 256}).message


@pytest.mark.parametrize("check", [ex.check_naive_params, ex.check_doubling_h, ex.check_mystery_layer])
def test_every_check_returns_feedback_and_never_the_answer(check):
    feedback = check({"A": "x"} if check is not ex.check_naive_params else 1)
    assert isinstance(feedback, Feedback) and not feedback.correct
    for value in ("split", "naive", "double", "half"):
        assert f"'{value}'" not in feedback.message or "Use only" in feedback.message
