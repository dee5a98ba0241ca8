"""Lesson 12's exercise checks: right answers pass, wrong answers and the None placeholder get a hint."""

import numpy as np
import pytest

from mha_lesson.circuits import hand_built_induction, previous_token_score
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson12 as ex

N = ex.MAX_LEN


def test_a_designed_previous_token_head_passes_and_works():
    good = 10.0 * np.eye(N, k=-1)  # row i scores key i - 1 at 10, every other key at 0
    assert ex.check_previous_token_scores(good)
    assert ex.check_previous_token_scores(good.tolist())
    assert ex.check_previous_token_scores(good - 5.0)  # adding a constant to every score changes nothing
    model = ex.with_position_scores(good)
    t = ex.tokens()
    assert previous_token_score(model.attention(t)[0, 0]) > 0.99
    np.testing.assert_array_equal(model.predict(t)[ex.K : 2 * ex.K - 1], t[ex.K + 1 : 2 * ex.K])


def test_with_position_scores_reproduces_the_hand_built_model():
    built = hand_built_induction(ex.VOCAB, ex.MAX_LEN)
    block = built.blocks["position"]
    scores = built.layers[0].w_q[block, block] / np.sqrt(built.layers[0].d_k)
    np.testing.assert_allclose(ex.with_position_scores(scores).attention(ex.tokens()), built.attention(ex.tokens()))


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (3.0 * np.eye(N, k=-1), "too soft"),
        (10.0 * np.eye(N), "own position"),
        (10.0 * np.eye(N, k=1), "causal mask hides it"),
        (np.zeros((N, N)), "only 0."),
        (10.0 * np.eye(N, k=-2), "only 0."),
        (np.zeros((N, N - 1)), "Expected one row per query position"),
        (np.full((N, N), np.inf), "finite"),
        (None, "Replace None"),
        ("eye", "Expected a"),
    ],
)
def test_wrong_previous_token_designs_get_a_hint(answer, hint):
    feedback = ex.check_previous_token_scores(answer)
    assert not feedback and hint in feedback.message


def test_key_weights_exercise():
    w_k = ex.layer().w_k_head(0)
    assert ex.check_key_weights(w_k @ np.linalg.inv(ex.M).T)
    assert "M M^T" in ex.check_key_weights(w_k @ ex.M).message
    assert "transposed" in ex.check_key_weights(w_k @ np.linalg.inv(ex.M)).message
    assert "scores changed" in ex.check_key_weights(w_k).message
    assert "shape" in ex.check_key_weights(np.zeros((4, 8))).message
    assert ex.check_key_weights(None) == Feedback(False, "Replace None with head 0's new key weights, shape (8, 4).")


def test_ablation_answer_is_measured():
    assert ex.measured_option() == "c"
    w = ex.ablated_attention()
    for t in range(1, N):  # every query spreads evenly over keys 1..t (key 0 is marked down)
        np.testing.assert_allclose(w[t, 1 : t + 1], 1 / t, rtol=1e-2)
    assert ex.check_ablation("c") and ex.check_ablation(" C ")
    assert "what layer 1 wrote" in ex.check_ablation("a").message
    assert "previous token" in ex.check_ablation("b").message
    assert "marked down" in ex.check_ablation("d").message
    assert "Expected one of the letters" in ex.check_ablation("e").message
    assert "Replace None" in ex.check_ablation(None).message
