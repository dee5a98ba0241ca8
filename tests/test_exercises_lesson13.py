"""Lesson 13's exercise checks: right answers pass, wrong answers and the None placeholder get a hint."""

import numpy as np
import pytest

from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson13 as ex

GAIN = 6 * np.sqrt(8)  # a scaled score of 6 on the wanted key


def design(gain=GAIN, *, swap=False, route=True, second=True, wrong_route=False):
    """The solution of exercise 1, or a broken variant of it."""
    w_q, w_o = np.zeros((16, 16)), np.zeros((16, 16))
    first, other = (8, 0) if swap else (0, 8)
    for p in range(8):
        if p >= 1:
            w_q[4 + p, first + p - 1] = gain
        if p >= 2 and second:
            w_q[4 + p, other + p - 2] = gain
    if route:
        w_o[0:4, 0:4] = np.eye(4)
        w_o[8:12, 4:8] = np.eye(4)
    if wrong_route:  # each head's word sent to the other head's read-out
        w_o[0:4, 4:8] = np.eye(4)
        w_o[8:12, 0:4] = np.eye(4)
    return w_q, w_o


def test_the_solution_makes_both_lookups():
    report = ex.design_report(*design())
    assert report["both"] == 1.0 and report["on_back"][0, 0] > 0.97 and report["on_back"][1, 1] > 0.97
    assert ex.check_two_head_design(*design())
    assert ex.check_two_head_design(*(m.tolist() for m in design()))  # nested lists are fine


def test_the_layer_reads_out_what_an_independent_loop_computes():
    """The check's layer, head by head in plain numpy, on one sequence."""
    w_q, w_o = design()
    words = ex.test_words()[0]
    x = ex.embed(words)  # (8, 16)
    out = np.zeros((8, 16))
    for i in range(2):
        cols = slice(8 * i, 8 * i + 8)
        scores = (x @ w_q[:, cols]) @ (x @ ex.W_K[:, cols]).T / np.sqrt(8)
        scores = np.where(np.tril(np.ones((8, 8), bool)), scores, -np.inf)
        a = np.exp(scores - scores.max(axis=1, keepdims=True))
        a /= a.sum(axis=1, keepdims=True)
        out += (a @ (x @ ex.W_V[:, cols])) @ w_o[cols]
    answers = ex.read_out(out)
    np.testing.assert_array_equal(answers[2:, 0], words[1:-1])
    np.testing.assert_array_equal(answers[2:, 1], words[:-2])


@pytest.mark.parametrize(
    ("kwargs", "hint"),
    [
        ({"gain": 1.0}, "softly"),
        ({"swap": True}, "swap them"),
        ({"route": False}, "fix W^O first"),
        ({"gain": 10.0, "route": False}, "fix W^O first"),  # right way but soft: W^O is diagnosed before the gain
        ({"gain": 10.0, "wrong_route": True}, "fix W^O first"),
        ({"second": False}, "head 1 does not look"),
        ({"gain": 0.0}, "head 0 and head 1 do not look"),
    ],
)
def test_broken_designs_get_the_hint_for_what_is_broken(kwargs, hint):
    feedback = ex.check_two_head_design(*design(**kwargs))
    assert not feedback and hint in feedback.message


def test_routing_report_matches_the_layer_with_sharp_heads():
    """W^O's routing alone agrees with the whole layer once the heads are nearly one-hot (a huge gain)."""
    for kwargs in ({}, {"route": False}, {"wrong_route": True}):
        w_q, w_o = design(gain=200.0, **kwargs)
        np.testing.assert_allclose(ex.routing_report(w_o), ex.design_report(w_q, w_o)["each"])


@pytest.mark.parametrize(
    ("w_q", "w_o", "message"),
    [
        (None, np.eye(16), "Replace None with a (16, 16) matrix for w_q."),
        (np.eye(16), None, "Replace None with a (16, 16) matrix for w_o."),
        (np.eye(8), np.eye(16), "w_q: expected shape (16, 16) (weights applied as x @ W), got (8, 8)."),
        (
            np.full((16, 16), np.inf),
            np.eye(16),
            "w_q: use finite numbers; a large gain is enough to make a head sharp.",
        ),
    ],
)
def test_bad_input_says_what_was_expected(w_q, w_o, message):
    assert ex.check_two_head_design(w_q, w_o) == Feedback(False, message)


def test_width_one_patterns_match_a_direct_search_over_heads():
    # Independent of the enumeration over orders: random width-1 heads (scores u_i v_j, Gaussian u, v) with the
    # lesson's construction added; a pattern counts as made when every query's favourite key is the wanted one.
    rng = np.random.default_rng(0)
    n = ex.ENUMERATE_N
    found = dict.fromkeys(ex.WIDTH_ONE_OPTIONS, False)
    j = np.arange(n)
    alternating = np.where(j % 2 == 1, (j + 1) // 2, -(j // 2)).astype(float)
    candidates = [(rng.normal(size=n), rng.normal(size=n)) for _ in range(20000)]
    candidates.append((np.r_[-1.0, -1.0, np.sign(alternating[1:-1])], alternating))  # section 4's construction
    for u, v in candidates:
        scores = np.outer(u, v)
        for option in ex.WIDTH_ONE_OPTIONS:
            causal = option != "e"
            ok = True
            for i in range(n):
                want = ex.wanted_key(option, i)
                if want is None:
                    continue
                row = scores[i, : i + 1] if causal else scores[i]
                ok = ok and int(np.argmax(row)) == want and np.sum(row == row.max()) == 1
            found[option] |= ok
    assert found == {"a": True, "b": True, "c": False, "d": True, "e": False}
    assert {o for o in ex.WIDTH_ONE_OPTIONS if ex.representable(o)} == {"a", "b", "d"}


def test_width_one_exercise_gives_the_specific_hint():
    assert ex.check_width_one({"a", "b", "d"}) and ex.check_width_one("abd") and ex.check_width_one(["D", "a", "b"])
    assert "2 back, v_{i-2}" in ex.check_width_one("abcd").message
    assert "no mask" in ex.check_width_one("abde").message
    assert "Section 4 built" in ex.check_width_one("ad").message
    assert "u_i = 1" in ex.check_width_one("b").message
    assert "Replace None" in ex.check_width_one(None).message
    assert not ex.check_width_one({"z"})


def simulate_streams(first, second, n=12):
    """Independent: per position, the set of absolute positions whose token the stream holds after two layers of
    sharp one-head copies (each head adds the whole stream it reads at t - offset)."""
    streams = [{t} for t in range(n)]
    for back in (first, second):
        streams = [s | (streams[t - back] if t >= back else set()) for t, s in enumerate(streams)]
    return {n - 1 - p for p in streams[n - 1]}


@pytest.mark.parametrize("first", [1, 2, 3])
@pytest.mark.parametrize("second", [1, 2, 3])
def test_stream_offsets_match_a_simulation(first, second):
    assert ex.stream_offsets(first, second) == simulate_streams(first, second)
    holds = simulate_streams(first, second)
    assert bool(ex.check_two_layer_offsets(first, second)) == ({1, 3} <= holds)


def test_two_layer_offsets_hints():
    assert ex.check_two_layer_offsets(1, 2) and ex.check_two_layer_offsets(2, 1)
    assert "Both heads look 1 back" in ex.check_two_layer_offsets(1, 1).message
    assert "which pair" in ex.check_two_layer_offsets(2, 3).message
    assert "Replace None" in ex.check_two_layer_offsets(None, 2).message
    assert "whole number from 1 to 3" in ex.check_two_layer_offsets(1.5, 2).message
