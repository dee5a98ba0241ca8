"""Lesson 11: every mistake's check FAILS on its buggy function and PASSES on the correct core, and the lesson's
numbers and pictures measure what they claim (checked against explicit loops and closed forms)."""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha_lesson as mha
from mha_lesson.demos import mistakes as mk
from mha_lesson.exercises import lesson11 as ex

MISTAKES = list(mk.MISTAKES.values())
IDS = [m.name for m in MISTAKES]


@pytest.mark.parametrize("mistake", MISTAKES, ids=IDS)
def test_check_catches_the_buggy_function(mistake):
    result = mistake.check(mistake.buggy)
    assert not result.passed, result.symptom
    assert str(result).startswith("FAIL: ")


@pytest.mark.parametrize("mistake", MISTAKES, ids=IDS)
def test_check_passes_the_correct_core(mistake):
    result = mistake.check(mistake.correct)
    assert result.passed, result.symptom
    assert str(result).startswith("PASS: ")


@pytest.mark.parametrize("mistake", MISTAKES, ids=IDS)
def test_correct_function_is_from_the_core_and_symptom_states_a_number(mistake):
    assert mistake.correct.__module__.startswith("mha_lesson.") and mistake.correct.__module__ != mk.__name__
    assert mistake.buggy.__module__ == mk.__name__
    assert any(ch.isdigit() for ch in mistake.check(mistake.buggy).symptom)


def test_registry_names_are_its_keys_and_cover_the_issue_list():
    assert all(name == m.name for name, m in mk.MISTAKES.items())
    assert len(mk.MISTAKES) == 12


def test_buggy_functions_are_silent_same_shapes_as_the_core():
    """The point of the lesson: each bug runs and returns arrays of the correct shape."""
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(5, 4)), rng.normal(size=(7, 4)), rng.normal(size=(7, 3))
    mask = np.ones((5, 7), dtype=bool)
    ref = [a.shape for a in mha.scaled_dot_product_attention(q, k, v, mask)]
    for fn in (
        mk.attention_no_scale,
        mk.attention_wrong_axis,
        mk.attention_mask_after_softmax,
        mk.attention_mask_with_zero,
        mk.attention_flipped_mask,
    ):
        assert [a.shape for a in fn(q, k, v, mask)] == ref
    x, params = rng.normal(size=(6, 8)), mha.init_params(8, 2, seed=0)
    ref = [a.shape for a in mha.multi_head_attention(x, x, x, params)]
    for fn in (
        mk.mha_reshape_only,
        mk.mha_scale_d_model,
        mk.mha_same_projection,
        mk.mha_without_w_o,
        mk.mha_stacked_concat,
        ex.mystery_mha,
    ):
        assert [np.shape(a) for a in fn(x, x, x, params)] == ref


def _explicit_attention(q, k, v, scale, axis):
    """softmax(q kᵀ * scale) along axis, with plain Python loops over the scores."""
    s = np.array([[sum(qi * ki for qi, ki in zip(qr, kr, strict=True)) * scale for kr in k] for qr in q])
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    w = e / e.sum(axis=axis, keepdims=True)
    return w @ v, w


def test_no_scale_and_wrong_axis_compute_exactly_their_bug():
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(5, 4)), rng.normal(size=(7, 4)), rng.normal(size=(7, 3))
    for fn, scale, axis in ((mk.attention_no_scale, 1.0, -1), (mk.attention_wrong_axis, 0.5, 0)):
        for got, want in zip(fn(q, k, v), _explicit_attention(q, k, v, scale, axis), strict=True):
            np.testing.assert_allclose(got, want, atol=1e-12)


def test_masking_bugs_against_the_closed_form():
    """Mask after softmax: row i keeps sum_{j<=i} of the unmasked weights. Mask with 0: scores 0 on the future."""
    rng = np.random.default_rng(2)
    q, k, v = rng.normal(size=(3, 5, 4))
    causal = mha.causal_mask(5)
    full = mha.scaled_dot_product_attention(q, k, v)[1]
    np.testing.assert_allclose(mk.attention_mask_after_softmax(q, k, v, causal)[1].sum(-1), np.tril(full).sum(-1))
    scores = np.where(causal, q @ k.T / 2.0, 0.0)
    np.testing.assert_allclose(mk.attention_mask_with_zero(q, k, v, causal)[1], mha.softmax(scores), atol=1e-12)


def test_flipped_mask_attends_exactly_where_the_mask_forbids():
    """The flipped convention is the correct function given the inverted mask (PyTorch's attn_mask, read here)."""
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(3, 5, 4))
    causal = mha.causal_mask(5)
    for got, want in zip(
        mk.attention_flipped_mask(q, k, v, causal), mha.scaled_dot_product_attention(q, k, v, ~causal), strict=True
    ):
        np.testing.assert_allclose(got, want, atol=1e-12)
    assert not mk.attention_flipped_mask(q, k, v, causal)[1][-1].any()  # the last query may see nothing: zeros


@pytest.mark.parametrize("h", [1, 2, 4, 8])
def test_scale_d_model_is_attention_at_temperature_sqrt_h(h):
    """√d_model = √h · √d_k: the bug equals correct attention on queries shrunk by 1/√h, so h = 1 hides it."""
    rng = np.random.default_rng(h)
    x, p = rng.normal(size=(5, 16)), mha.init_params(16, h, seed=h)
    shrunk = dataclasses.replace(p, w_q=p.w_q / math.sqrt(h))
    for got, want in zip(mk.mha_scale_d_model(x, x, x, p), mha.multi_head_attention(x, x, x, shrunk), strict=True):
        np.testing.assert_allclose(got, want, atol=1e-12)


def test_head_scale_measures_the_factor_before_the_softmax():
    """1 for the core, 1/√h for √d_model, √d_k for no scale at all (the check's case: d_model 16, h 4)."""
    assert mk.head_scale(mha.multi_head_attention) == pytest.approx(1.0, abs=1e-9)
    assert mk.head_scale(mk.mha_scale_d_model) == pytest.approx(0.5, abs=1e-9)

    def unscaled(q, k, v, params):
        Q, K, V = (mha.split_heads(a @ w, params.h) for a, w in ((q, params.w_q), (k, params.w_k), (v, params.w_v)))
        w = mha.softmax(Q @ K.swapaxes(-1, -2), axis=-1)
        return mha.merge_heads(w @ V) @ params.w_o, w

    assert mk.head_scale(unscaled) == pytest.approx(2.0, abs=1e-9)


def test_ownership_maps_match_the_index_formulas():
    n, d_model, h = 6, 8, 2
    d_k = d_model // h
    t, j = np.indices((n, d_model))
    np.testing.assert_array_equal(mk.head_ownership_of_split(mha.split_heads, n, d_model, h), j // d_k)
    # reshape(h, n, d_k) hands out the flat memory in h consecutive chunks of n*d_k entries.
    np.testing.assert_array_equal(
        mk.head_ownership_of_split(mk.split_heads_reshape_only, n, d_model, h), (t * d_model + j) // (n * d_k)
    )
    # Integer division: feature 9 of 10 reaches no head (-1).
    owner = mk.head_ownership_of_split(mk.split_heads_int_division, 3, 10, 3)
    np.testing.assert_array_equal(owner[0], [0, 0, 0, 1, 1, 1, 2, 2, 2, -1])
    _, c = np.indices((4, 8))
    np.testing.assert_array_equal(mk.head_ownership_of_merge(mha.merge_heads, 4, 2, 4), c // 4)
    np.testing.assert_array_equal(mk.head_ownership_of_merge(mk.merge_heads_stacked, 4, 2, 4), c % 2)


def test_stacked_concat_equals_the_core_with_w_o_rows_permuted():
    """The lesson's claim: the interleaving is a fixed permutation that a freshly trained W^O would absorb."""
    rng = np.random.default_rng(5)
    x, p = rng.normal(size=(6, 8)), mha.init_params(8, 2, seed=5)
    perm = np.array([(c % 2) * 4 + c // 2 for c in range(8)])
    assert perm.tolist() == [0, 4, 1, 5, 2, 6, 3, 7]
    w_o = np.empty_like(p.w_o)
    w_o[perm] = p.w_o
    p2 = mha.MHAParams(w_q=p.w_q, w_k=p.w_k, w_v=p.w_v, w_o=w_o, h=2)
    np.testing.assert_allclose(
        mk.mha_stacked_concat(x, x, x, p)[0], mha.multi_head_attention(x, x, x, p2)[0], atol=1e-12
    )


def test_head_influence_is_block_diagonal_without_w_o_and_dense_with_it():
    rng = np.random.default_rng(5)
    x, p = rng.normal(size=(6, 8)), mha.init_params(8, 2, seed=5)
    buggy = mk.head_influence(mk.mha_without_w_o, p, x)
    block = np.kron(np.eye(2), np.ones((1, 4))).astype(bool)  # head i -> features 4i..4i+3
    assert np.all(buggy[~block] == 0) and np.all(buggy[block] > 0)
    assert np.all(mk.head_influence(mha.multi_head_attention, p, x) > 0)


def test_average_row_max_limits():
    """d_k = 1 with identical keys would be uniform; here: scaled stays below 0.5 for every d_k, unscaled tends to 1."""
    scaled = [mk.average_row_max(mha.scaled_dot_product_attention, d) for d in (1, 4, 16, 64, 256)]
    unscaled = [mk.average_row_max(mk.attention_no_scale, d) for d in (1, 4, 16, 64, 256)]
    assert max(scaled) < 0.5
    assert unscaled[0] == pytest.approx(scaled[0])  # d_k = 1: sqrt(d_k) = 1, the two agree
    assert unscaled[-1] > 0.9 and np.all(np.diff(unscaled) > 0)


def test_lesson_numbers_dot_product_variance_and_overflow_thresholds():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 10_000, 64))
    dots = (q * k).sum(axis=-1)
    assert dots.var() == pytest.approx(64, rel=0.1)
    assert (dots / 8).var() == pytest.approx(1, rel=0.1)
    thresholds = {dt: math.log(float(np.finfo(dt).max)) for dt in (np.float64, np.float32, np.float16)}
    assert [round(t, 2) for t in thresholds.values()] == [709.78, 88.72, 11.09]
    with np.errstate(over="ignore"):
        for dt, t in thresholds.items():
            assert np.isfinite(np.exp(dt(t * 0.999))) and np.isinf(np.exp(dt(t * 1.01)))


@given(st.integers(0, 10_000), st.floats(-500, 500))
def test_stable_softmax_check_is_shift_invariant_for_the_core(seed, shift):
    x = np.random.default_rng(seed).normal(size=6) * 30
    np.testing.assert_allclose(mha.softmax(x + shift), mha.softmax(x), atol=1e-12)


@given(st.integers(0, 10_000))
def test_core_is_permutation_equivariant_and_reshape_only_is_not(seed):
    rng = np.random.default_rng(seed)
    x, p = rng.normal(size=(6, 8)), mha.init_params(8, 2, seed=seed % 97)
    perm = rng.permutation(6)
    out = mha.multi_head_attention(x, x, x, p)[0]
    np.testing.assert_allclose(mha.multi_head_attention(x[perm], x[perm], x[perm], p)[0], out[perm], atol=1e-12)
    # Reshape-only hands tokens 0-2 to "head" 0 and 3-5 to "head" 1, and attends inside each group, so it stays
    # equivariant to permutations that move whole groups. Make this one carry a token across the groups.
    if set(perm[:3].tolist()) in ({0, 1, 2}, {3, 4, 5}):
        perm[[2, 3]] = perm[[3, 2]]
    buggy = mk.mha_reshape_only(x, x, x, p)[0]
    assert np.abs(mk.mha_reshape_only(x[perm], x[perm], x[perm], p)[0] - buggy[perm]).max() > 1e-6


def test_mystery_fails_exactly_the_head_block_check():
    failed = [m.name for m in MISTAKES if m.correct is mha.multi_head_attention and not m.check(ex.mystery_mha)]
    assert failed == ["concat_order"]


def test_indivisible_check_requires_a_value_error_naming_h():
    def raises_without_naming(x, h):
        if x.shape[-1] % h:
            raise ValueError("bad shape")
        return mha.split_heads(x, h)

    assert not mk.check_rejects_indivisible(raises_without_naming)
    assert not mk.check_rejects_indivisible(lambda x, h: np.zeros((h, 1, 4)))  # wrong split of a valid case


@given(st.integers(1, 6), st.integers(1, 6))
def test_stacked_column_order_matches_the_ownership_of_each_column(h, d_k):
    """Column c of the stacked merge holds head owner[c]'s feature c // h, i.e. merge_heads' column perm[c]."""
    perm = mk.stacked_column_order(h, d_k)
    owner = mk.head_ownership_of_merge(mk.merge_heads_stacked, n=1, h=h, d_k=d_k)[0]
    np.testing.assert_array_equal(perm, owner * d_k + np.arange(h * d_k) // h)
    assert sorted(perm.tolist()) == list(range(h * d_k))
    heads = np.random.default_rng(h * 10 + d_k).normal(size=(h, 3, d_k))
    np.testing.assert_array_equal(mk.merge_heads_stacked(heads), mha.merge_heads(heads)[:, perm])


def test_lesson_reorders_w_o_with_argsort_of_the_column_order():
    """The lesson's one line, w_o[np.argsort(perm)], equals the explicit 'row perm[c] <- row c' assignment."""
    rng = np.random.default_rng(5)
    x, p = rng.normal(size=(6, 8)), mha.init_params(8, 2, seed=5)
    perm = mk.stacked_column_order(p.h, p.d_k)
    w_o = np.empty_like(p.w_o)
    w_o[perm] = p.w_o
    np.testing.assert_array_equal(p.w_o[np.argsort(perm)], w_o)
    p2 = dataclasses.replace(p, w_o=p.w_o[np.argsort(perm)])
    np.testing.assert_allclose(
        mk.mha_stacked_concat(x, x, x, p)[0], mha.multi_head_attention(x, x, x, p2)[0], atol=1e-12
    )


def test_no_scale_figure_uses_the_checks_input():
    """The lesson draws average_row_max's own input: its maps give exactly the numbers the check prints."""
    q, k, v = np.random.default_rng(0).normal(size=(3, 16, 64))
    for fn in (mk.attention_no_scale, mha.scaled_dot_product_attention):
        assert fn(q, k, v)[1].max(axis=-1).mean() == mk.average_row_max(fn, d_k=64)


def test_ownership_map_colours_and_legend():
    from matplotlib.figure import Figure

    from mha_lesson.plots import mistakes as pm

    fig = Figure()
    ax = fig.subplots()
    owner = mk.head_ownership_of_split(mk.split_heads_int_division, 3, 10, 3)
    im = pm.ownership_map(ax, owner, title="t", xlabel="x", ylabel="y")
    np.testing.assert_array_equal(im.get_array(), owner)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["no head", "head 0", "head 1", "head 2"]
    assert im.cmap(im.norm(-1)) != im.cmap(im.norm(0))  # a dropped feature is not coloured like head 0
    fig = Figure()
    ax = fig.subplots()
    pm.ownership_map(ax, mk.head_ownership_of_merge(mha.merge_heads, 2, 2, 3), title="t", xlabel="x", ylabel="y")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["head 0", "head 1"]
    fig = Figure()
    ax = fig.subplots()
    pm.ownership_map(ax, np.zeros((2, 2), dtype=int), title="t", xlabel="x", ylabel="y", legend=False)
    assert ax.get_legend() is None


def test_softmax_of_a_fully_masked_row():
    np.testing.assert_array_equal(mha.softmax(np.full(3, -np.inf)), np.zeros(3))
    with np.errstate(invalid="ignore"):
        assert np.isnan(mk.softmax_naive(np.full(3, -np.inf))).all()


def test_compare_maps_names_the_queries_once_and_labels_every_row_sum_column():
    from matplotlib.figure import Figure

    from mha_lesson.plots import mistakes as pm

    w = np.array([[0.5, 0.25], [0.0, 0.75]])
    fig = Figure()
    pm.compare_maps(fig, {"a": w, "b": w * 0.4}, ["q0", "q1"], ["k0", "k1"], annotate=True)
    left, right = fig.axes[:2]
    assert left.get_ylabel() == "query (attending)" and right.get_ylabel() == ""
    sums = [[t.get_text() for t in ax.child_axes[0].get_yticklabels()] for ax in (left, right)]
    assert sums == [["0.75", "0.75"], ["0.30", "0.30"]]  # w.sum(axis=-1) = [0.75, 0.75], times 0.4: 0.3
    assert [ax.child_axes[0].get_ylabel() for ax in (left, right)] == ["row sum", "row sum (must be 1)"]
    assert {t.get_fontsize() for t in left.texts} == {9}  # the weights in the cells, readable on a laptop
