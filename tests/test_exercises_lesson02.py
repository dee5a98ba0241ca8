"""Lesson 2's exercise checks: the right answer passes, wrong ones get a hint that does not give it away."""

import pytest

import mha_lesson as mha
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson02 as ex

NAIVE_PARAMS = 4 * 12 * 768**2  # each head three 768x768 matrices, W^O of (12*768, 768)
# BERT-base on 512 tokens, counted part by part: every naive part is h times one head's; split heads differ
# from one head only in the softmax, (h - 1) * 5 * n^2 more (an independent closed form, not flop_count).
D, H, N = 768, 12, 512
ONE = 2 * (3 * N) * D * D + 2 * N * N * D + 5 * N * N + 2 * N * N * D + 2 * N * D * D
RATIO = H * ONE / (ONE + (H - 1) * 5 * N * N)
MEMORY = 12 * 512 * 512 * 4


@pytest.mark.parametrize(
    ("check", "answer"),
    [(ex.check_naive_params, NAIVE_PARAMS), (ex.check_flop_ratio, round(RATIO, 2)), (ex.check_memory_bytes, MEMORY)],
)
def test_the_solution_is_right(check, answer):
    feedback = check(answer)
    assert isinstance(feedback, Feedback) and feedback.correct, feedback.message


@pytest.mark.parametrize("check", [ex.check_naive_params, ex.check_flop_ratio, ex.check_memory_bytes])
@pytest.mark.parametrize("answer", [None, "12", [1], True])
def test_a_placeholder_or_a_non_number_gets_a_friendly_hint(check, answer):
    feedback = check(answer)
    assert not feedback.correct
    assert ("Replace None" in feedback.message) == (answer is None)


@pytest.mark.parametrize(
    ("check", "answer", "hint"),
    [
        (ex.check_naive_params, 4 * 768**2, "split design"),
        (ex.check_naive_params, 3 * 12 * 768**2, "W^O is missing"),
        (ex.check_naive_params, 3 * 12 * 768**2 + 768**2, "concatenation"),
        (ex.check_naive_params, 123, "Count per head"),
        (ex.check_flop_ratio, 12, "not exactly h"),
        (ex.check_flop_ratio, 7.98, "flop_count"),  # the worked case printed in the lesson
        (ex.check_flop_ratio, 1 / RATIO, "split over naive"),
        (ex.check_flop_ratio, 7.5, "flop_count"),
        (ex.check_memory_bytes, 512 * 512 * 4, "one head"),
        (ex.check_memory_bytes, 2 * MEMORY, "4 bytes"),
        (ex.check_memory_bytes, MEMORY // 4, "number of weights"),
        (ex.check_memory_bytes, 1, "(query, key) pair"),
    ],
)
def test_wrong_answers_get_a_hint_without_the_answer(check, answer, hint):
    feedback = check(answer)
    assert not feedback.correct and hint in feedback.message
    for number in (NAIVE_PARAMS, MEMORY):
        assert f"{number}" not in feedback.message and f"{number:,}" not in feedback.message
    assert f"{RATIO:.2f}" not in feedback.message


def test_the_ratio_is_bert_bases_and_matches_flop_count():
    assert RATIO == pytest.approx(
        mha.cost.flop_count(N, N, D, H, split=False)["total"] / mha.cost.flop_count(N, N, D, H)["total"], rel=1e-12
    )
    assert 11.9 < RATIO < 12


def test_the_ratio_is_checked_to_two_decimals():
    assert ex.check_flop_ratio(RATIO).correct and ex.check_flop_ratio(RATIO + 0.004).correct
    assert not ex.check_flop_ratio(RATIO - 0.01).correct
