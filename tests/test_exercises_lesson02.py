"""Lesson 2's exercise checks: the right answer passes, wrong ones get a hint that does not give it away."""

import pytest

import mha_lesson as mha
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson02 as ex

NAIVE_PARAMS = 4 * 12 * 768**2  # each head three 768x768 matrices, W^O of (12*768, 768)

# Exercise 2 by hand, from the shapes (d_model = 512, n = 128, h = 8 -> 16): the matrices are re-sliced, the
# products keep h*d_k = d_model, every head keeps its own n x n map, d_k = d_model / h.
DOUBLING_H = {
    "parameters": "same",
    "attention flops": "same",
    "softmax flops": "double",
    "weight memory": "double",
    "d_k": "half",
}
COLUMNS = {"A": "split", "B": "naive", "C": "one head"}


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
    assert after["parameters"] == before["parameters"] == 4 * 512**2
    assert after["softmax flops"] == 2 * before["softmax flops"] == 5 * 16 * 128**2
    assert after["weight memory"] == 16 * 128 * 128 * 4
    assert ex.check_doubling_h(DOUBLING_H).correct
    # Words are read loosely: case and spacing do not matter, keys neither.
    assert ex.check_doubling_h({k.upper(): f" {v.upper()} " for k, v in DOUBLING_H.items()}).correct


@pytest.mark.parametrize(
    ("key", "value", "hint"),
    [
        ("parameters", "double", "change shape"),
        ("attention flops", "double", "h·d_k"),
        ("softmax flops", "same", "How many n × n weight maps"),
        ("weight memory", "same", "whatever its width"),
        ("d_k", "double", "d_k = d_model / h"),
    ],
)
def test_doubling_h_hints_name_the_first_wrong_quantity(key, value, hint):
    feedback = ex.check_doubling_h(DOUBLING_H | {key: value})
    assert not feedback.correct and f"'{key}'" in feedback.message and hint in feedback.message
    assert "1 of 5" in feedback.message


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (None, "Replace None with a dict"),
        (["same"] * 5, "got list"),
        ({"parameters": "same"}, "missing ['attention flops'"),
        (DOUBLING_H | {"heads": "double"}, "unexpected ['heads']"),
        (DOUBLING_H | {"d_k": "quarter"}, "got ['quarter']"),
    ],
)
def test_doubling_h_says_what_shape_of_answer_it_expects(answer, fragment):
    feedback = ex.check_doubling_h(answer)
    assert not feedback.correct and fragment in feedback.message


def test_mystery_table_columns_are_the_three_designs():
    table = ex.mystery_table()
    one, split, naive = (mha.cost.flop_count(128, 128, 512, h, split=s) for h, s in ((1, True), (8, True), (8, False)))
    assert table == {"A": split, "B": naive, "C": one}
    # The pattern the solution reads: B = 8 C in every part; A = C except the softmax (8 times C's).
    assert all(table["B"][p] == 8 * table["C"][p] for p in mha.cost.PARTS)
    assert [p for p in mha.cost.PARTS if table["A"][p] != table["C"][p]] == ["softmax"]


def test_mystery_columns_right_and_wrong():
    assert ex.check_mystery_columns(COLUMNS).correct
    assert ex.check_mystery_columns({"a": "Split", "b": "naive", "c": "one head"}).correct
    swapped = ex.check_mystery_columns({"A": "one head", "B": "naive", "C": "split"})
    assert not swapped.correct and "agree in all but one part" in swapped.message
    naive_wrong = ex.check_mystery_columns({"A": "naive", "B": "split", "C": "one head"})
    assert not naive_wrong.correct and "copies a head h times" in naive_wrong.message
    twice = ex.check_mystery_columns({"A": "naive", "B": "naive", "C": "one head"})
    assert not twice.correct and "exactly one column" in twice.message
    assert "Replace None" in ex.check_mystery_columns(None).message


@pytest.mark.parametrize("check", [ex.check_naive_params, ex.check_doubling_h, ex.check_mystery_columns])
def test_every_check_returns_feedback_and_never_the_answer(check):
    feedback = check({"A": "x"} if check is not ex.check_naive_params else 1)
    assert isinstance(feedback, Feedback) and not feedback.correct
    for value in ("split", "naive", "double", "half"):
        assert f"'{value}'" not in feedback.message or "Use only" in feedback.message
