"""Lesson 5: the concatenation's shape, that it can be undone and a sum cannot, and that summing lets heads cancel."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from matplotlib.figure import Figure

import mha_lesson as mha
from mha_lesson.demos import toy
from mha_lesson.demos.concat import recovery_errors
from mha_lesson.plots.heads import labelled_bars, recovery_bars

SIZES = st.sampled_from([(8, 2), (12, 3), (16, 4), (24, 6), (32, 8), (6, 1)])


def trace_of(d_model, h, n, seed):
    x = np.random.default_rng(seed).normal(size=(n, d_model))
    return mha.multi_head_attention_loop(x, x, x, mha.init_params(d_model, h, seed=seed), return_trace=True)[2]


@given(SIZES, st.integers(1, 9), st.integers(0, 100))
def test_concat_is_n_by_h_d_v_equal_n_by_d_model_and_equals_merge_heads(size, n, seed):
    d_model, h = size
    trace = trace_of(d_model, h, n, seed)
    d_v = d_model // h
    assert all(head.shape == (n, d_v) for head in trace["head_i"])
    assert trace["concat"].shape == (n, h * d_v) == (n, d_model)
    np.testing.assert_array_equal(mha.merge_heads(np.stack(trace["head_i"])), trace["concat"])
    # head i is exactly columns i*d_v:(i+1)*d_v, element by element
    for i, head in enumerate(trace["head_i"]):
        for a in range(n):
            for c in range(d_v):
                assert trace["concat"][a, i * d_v + c] == head[a, c]


def test_the_sum_is_concat_times_stacked_identities_of_rank_d_v():
    trace = trace_of(16, 4, 7, 0)
    d_v, h = 4, 4
    m = np.vstack([np.eye(d_v)] * h)
    np.testing.assert_allclose(trace["concat"] @ m, sum(trace["head_i"]))
    assert np.linalg.matrix_rank(m) == d_v
    # a direction in the null space: +z on head 0, -z on head 1 changes the heads but not the sum
    z = np.random.default_rng(1).normal(size=(7, d_v))
    moved = [trace["head_i"][0] + z, trace["head_i"][1] - z, *trace["head_i"][2:]]
    np.testing.assert_allclose(sum(moved), sum(trace["head_i"]))
    assert not np.allclose(np.concatenate(moved, axis=1), trace["concat"])


def test_recovery_from_concat_is_exact_and_from_the_sum_is_not():
    trace = trace_of(64, 4, 200, 0)  # the lesson's setup
    errors = recovery_errors(trace["head_i"])
    assert np.all(errors["concat"] == 0)
    assert np.all(errors["sum"] > 0.4)


def test_sum_recovery_error_is_the_least_squares_optimum():
    heads = [np.random.default_rng(i).normal(size=(50, 3)) for i in range(3)]
    errors = recovery_errors(heads)
    total = sum(heads)
    rng = np.random.default_rng(9)
    for i, head in enumerate(heads):
        # any other linear read-out does at least as badly as the fitted one
        for _ in range(20):
            b = rng.normal(size=(3, 3))
            assert np.linalg.norm(total @ b - head) / np.linalg.norm(head) >= errors["sum"][i] - 1e-12
    # independent heads of equal size: the best read-out of one from the sum of three leaves about sqrt(2/3)
    np.testing.assert_allclose(errors["sum"], np.sqrt(2 / 3), atol=0.15)


def test_recovery_errors_rejects_bad_input():
    with pytest.raises(ValueError, match="^heads:"):
        recovery_errors([np.zeros((3, 2))])
    with pytest.raises(ValueError, match="^heads:"):
        recovery_errors([np.zeros((3, 2)), np.zeros((3, 3))])


@given(st.integers(0, 50), st.integers(1, 8))
def test_summing_lets_two_heads_cancel_but_the_concat_keeps_them(seed, n):
    p = toy.cancelling_pair(d_model=8, seed=seed)
    x = np.random.default_rng(seed + 1).normal(size=(n, 8))
    _, _, trace = mha.multi_head_attention_loop(x, x, x, p, return_trace=True)
    h0, h1 = trace["head_i"]
    np.testing.assert_allclose(h0 + h1, 0.0, atol=1e-14)
    assert np.linalg.norm(trace["concat"]) > 0.1 * np.sqrt(n)
    # head 0 is still recoverable from the concatenation
    np.testing.assert_array_equal(trace["concat"][:, :4], h0)


def test_bar_plots_draw_the_given_values():
    fig = Figure()
    ax = fig.subplots()
    bars = labelled_bars(ax, ["a", "b", "c"], [1.0, 0.0, 2.5], title="t", xlabel="x", ylabel="y")
    assert [b.get_height() for b in bars] == [1.0, 0.0, 2.5]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    ax2 = fig.add_subplot(2, 1, 2)
    errors = {"concat": np.zeros(3), "sum": np.array([0.5, 0.6, 0.7])}
    recovery_bars(ax2, errors)
    heights = [p.get_height() for p in ax2.patches]
    assert heights == [0.0, 0.0, 0.0, 0.5, 0.6, 0.7]
    # every bar printed with its value, at 9 pt (10 px on a laptop, lesson 5's figure being 7 in wide)
    assert [t.get_text() for t in ax2.texts] == ["0.00", "0.00", "0.00", "0.50", "0.60", "0.70"]
    assert {t.get_fontsize() for t in [*ax2.texts, *ax2.get_legend().get_texts()]} == {9}
    assert ax2.get_title() and ax2.get_ylabel() and ax2.get_xlabel()


def test_per_head_maps_keep_what_the_raw_sum_cancels():
    """Lesson 5: Concat·W^O = Σ head_i W^O_i is a sum too, but of per-head maps; the cancelling pair survives it,
    unless W^O chooses W^O_1 = W^O_0."""
    pc = toy.cancelling_pair(d_model=8, seed=0)
    x = np.random.default_rng(1).normal(size=(5, 8))
    out, _, trace = mha.multi_head_attention_loop(x, x, x, pc, return_trace=True)
    h0, h1 = trace["head_i"]
    assert np.abs(h0 + h1).max() == 0.0
    mapped = h0 @ pc.w_o_head(0) + h1 @ pc.w_o_head(1)
    np.testing.assert_allclose(mapped, out, atol=1e-12)
    assert np.linalg.norm(mapped) > 1.0
    w_o = pc.w_o.copy()
    w_o[4:] = w_o[:4]  # W^O_1 = W^O_0: the learned map itself adds the two heads
    same = mha.multi_head_attention(x, x, x, dataclasses.replace(pc, w_o=w_o))[0]
    assert np.abs(same).max() < 1e-12


@given(SIZES, st.integers(1, 9), st.integers(0, 100))
def test_section_1s_swap_and_reshape_lays_the_heads_side_by_side(size, n, seed):
    """The notebook's two steps by hand: (h, n, d_v) -> (n, h, d_v) -> (n, h*d_v), against np.concatenate."""
    d_model, h = size
    heads = trace_of(d_model, h, n, seed)["head_i"]
    merged = np.stack(heads).swapaxes(0, 1).reshape(n, d_model)
    np.testing.assert_array_equal(merged, np.concatenate(heads, axis=1))
    np.testing.assert_array_equal(merged, mha.merge_heads(np.stack(heads)))
