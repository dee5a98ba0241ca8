"""Lesson 14's exercise checks: right answers pass, wrong answers and the None placeholder get a hint."""

import numpy as np

from mha_lesson.circuits import hand_built_induction
from mha_lesson.exercises import lesson14 as ex

N = ex.MAX_LEN


def test_with_position_scores_reproduces_the_hand_built_model():
    built = hand_built_induction(ex.VOCAB, ex.MAX_LEN)
    block = built.blocks["position"]
    scores = built.layers[0].w_q[block, block] / np.sqrt(built.layers[0].d_k)
    np.testing.assert_allclose(ex.with_position_scores(scores).attention(ex.tokens()), built.attention(ex.tokens()))


def test_a_two_back_layer_1_makes_the_model_predict_one_token_ahead():
    # Independent: the attention maps of the shifted model, read directly.
    model = ex.two_back_model()
    t = ex.tokens()
    attention = model.attention(t)
    rows = np.arange(2, N)
    assert attention[0, 0, rows, rows - 2].min() > 0.99  # layer 1 looks 2 back
    queries = np.arange(ex.K, 2 * ex.K - 2)
    assert attention[1, 0, queries, queries - ex.K + 2].min() > 0.9  # layer 2: two after the earlier occurrence
    np.testing.assert_array_equal(model.predict(t)[queries], t[queries - ex.K + 2])
    assert ex.shifted_option() == "b"


def test_shifted_exercise_hints():
    assert ex.check_shifted_previous_head("b") and ex.check_shifted_previous_head(" B ")
    assert "What is that now" in ex.check_shifted_previous_head("a").message
    assert "not the query's own token" in ex.check_shifted_previous_head("c").message
    assert "still sharp" in ex.check_shifted_previous_head("d").message
    assert "Replace None" in ex.check_shifted_previous_head(None).message
    assert "Expected one of" in ex.check_shifted_previous_head("z").message


def test_same_function_options_are_measured_and_match_the_circuits():
    # Independent: an option keeps the function exactly when it keeps every head's two circuits, up to a head swap.
    from mha_lesson.circuits import ov_circuit, qk_circuit

    p = ex.layer()
    for option in ex.CHANGE_OPTIONS:
        q = ex.changed_layer(option)
        same = all(
            np.allclose(qk_circuit(q, i), qk_circuit(p, i)) and np.allclose(ov_circuit(q, i), ov_circuit(p, i))
            for i in range(2)
        )
        swapped = all(
            np.allclose(qk_circuit(q, i), qk_circuit(p, 1 - i)) and np.allclose(ov_circuit(q, i), ov_circuit(p, 1 - i))
            for i in range(2)
        )
        assert (option in ex.unchanged_options()) == (same or swapped), option
    assert ex.unchanged_options() == {"a", "b", "c", "e"}


def test_same_function_hints():
    assert ex.check_same_function({"a", "b", "c", "e"}) and ex.check_same_function("abce")
    assert "order of the terms" in ex.check_same_function("abe").message
    assert "M M^T" in ex.check_same_function("abcde").message
    assert "flips every score" in ex.check_same_function("abcef").message
    assert "option b" in ex.check_same_function("ace").message
    assert "Replace None" in ex.check_same_function(None).message


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


def test_option_c_and_the_solution_name_the_keys_the_measurement_finds():
    """Keys 1..t share the weight evenly and key 0 gets less: option (c) and the solution say 'after the first'."""
    import json
    from pathlib import Path

    w = ex.ablated_attention()
    assert all(w[t, 0] < w[t, 1] for t in range(1, N))  # key 0 is marked down, so "after the first"
    assert "after the first, up to its own" in ex.OPTIONS["c"]
    path = Path(__file__).resolve().parents[1] / "notebooks" / "14_circuits_and_induction_heads.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    prose = " ".join(" ".join("".join(c["source"]).split()) for c in cells)
    assert "spreads its attention evenly over the positions after the first, up to its own" in prose
