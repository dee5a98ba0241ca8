"""Lesson 18's claims (RoPE, sliding windows and their cache, causal alignment of a chunk, pre-LN against post-LN),
through the helpers the notebook calls, checked against hand-built rotations, explicit intervals, finite
differences and closed forms; and the lesson's flashcards against computed numbers."""

import dataclasses
import math

import numpy as np
import pytest
from matplotlib.figure import Figure

import mha_lesson as mha
from mha_lesson.aids import flashcards as fc
from mha_lesson.demos import scale as sc
from mha_lesson.demos.toy import TOKENS
from mha_lesson.encoder import encoder_layer, layer_norm
from mha_lesson.plots import scale as ps
from mha_lesson.rope import rope_angles

# --- section 1: RoPE ------------------------------------------------------------------------------------------------


def _rotation(d_k, position, base=10000.0):
    """RoPE's (d_k, d_k) rotation for one position, half-split pairs, built entry by entry."""
    r = np.zeros((d_k, d_k))
    for j in range(d_k // 2):
        angle = position * base ** (-2 * j / d_k)
        a, b = j, j + d_k // 2
        r[a, a], r[a, b], r[b, a], r[b, b] = math.cos(angle), -math.sin(angle), math.sin(angle), math.cos(angle)
    return r


def test_rope_scores_depend_only_on_the_offset():
    q, k = np.random.default_rng(2).normal(size=(2, 16))
    table = sc.rope_score_table(q, k, 12)
    assert sc.offset_spread(table) < 1e-12
    for m, n in ((0, 5), (7, 3), (11, 11)):  # q^T R(n - m) k with a hand-built rotation
        assert table[m, n] == pytest.approx(q @ _rotation(16, n - m) @ k, abs=1e-12)
    assert sc.offset_spread(np.subtract.outer(np.arange(4.0), np.arange(4.0))) == 0  # constant diagonals
    assert sc.offset_spread(np.array([[0.0, 1.0], [2.0, 5.0]])) == 5


def test_rope_plot_spends_its_colours_on_the_scores_range():
    table = sc.rope_score_table(*np.random.default_rng(2).normal(size=(2, 16)), 24)
    fig = Figure(layout="constrained")
    ps.rope_plot(fig, table)
    image = fig.axes[0].images[0]
    assert image.get_clim() == (table.min(), table.max())  # all scores > 0 here: a ±max scale would waste half
    assert image.get_cmap().name == "viridis"  # sequential: equal scores, equal colour along each diagonal
    bar = next(ax for ax in fig.axes if ax.get_xlabel() == "score (unitless)")  # the label below the map
    assert bar.get_position().y1 < fig.axes[0].get_position().y0


def test_interleaved_rope_is_a_complex_rotation_and_a_permutation_of_half_split():
    x = np.random.default_rng(3).normal(size=(2, 6, 8))
    turned = sc.rope_interleaved(x)
    angles = rope_angles(np.arange(6), 8)  # (6, 4): pair j turns by m θ_j
    as_complex = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * angles)
    np.testing.assert_allclose(turned[..., 0::2] + 1j * turned[..., 1::2], as_complex, atol=1e-14)
    order = sc.half_split_order(8)
    assert order.tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    np.testing.assert_allclose(turned[..., order], mha.rope(x[..., order]), atol=1e-14)


def test_rope_previous_token_head_without_positions():
    w = sc.rope_previous_token_head()
    n = len(TOKENS)
    assert all(w[i].argmax() == i - 1 and w[i, i - 1] > 0.95 for i in range(1, n))
    np.testing.assert_allclose(sc.rope_previous_token_head(start=1000), w, atol=1e-12)
    flat = sc.rope_previous_token_head(use_rope=False)
    np.testing.assert_allclose(flat, mha.causal_mask(n) / np.arange(1, n + 1)[:, None], atol=1e-15)


# --- section 2: sliding windows -------------------------------------------------------------------------------------


@pytest.mark.parametrize("window", [2, 4, 5])
def test_receptive_field_grows_by_window_minus_one_per_layer(window):
    n = 30
    mask = mha.sliding_window_mask(n, window)
    assert mask.sum() == n * window - window * (window - 1) // 2
    for depth in range(1, 5):
        reach = mha.receptive_field(mask, depth)
        for i in range(n):  # an explicit interval for every position
            expected = np.zeros(n, bool)
            expected[max(0, i - depth * (window - 1)) : i + 1] = True
            np.testing.assert_array_equal(reach[i], expected)


# --- section 3: pre-LN against post-LN --------------------------------------------------------------------------------


def test_layer_norm_backward_against_finite_differences():
    rng = np.random.default_rng(4)
    x, gamma, g = rng.normal(size=(3, 6)), rng.normal(size=6), rng.normal(size=(3, 6))
    grad = sc.layer_norm_backward(x, gamma, g)
    eps = 1e-6
    for idx in np.ndindex(x.shape):
        dx = np.zeros_like(x)
        dx[idx] = eps
        up, down = (np.sum(g * layer_norm(x + sign * dx, gamma, 0 * gamma)) for sign in (1, -1))
        numeric = (up - down) / (2 * eps)
        assert grad[idx] == pytest.approx(numeric, abs=1e-8)


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_last_layer_step_by_step_matches_encoder_layer(norm):
    layer = sc.init_stack(1)[0]
    x = sc.stack_inputs()
    out, _, _ = sc.last_layer_ffn(x, layer, norm)
    expected, _ = encoder_layer(x, layer, norm=norm)
    if norm == "pre":  # the model's final layer norm comes after the last layer
        expected = layer_norm(expected, np.ones(sc.LN_D_MODEL), np.zeros(sc.LN_D_MODEL), layer.eps)
    np.testing.assert_allclose(out, expected, atol=1e-12)


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_last_ffn_gradient_against_finite_differences(norm):
    layers = 3
    grad = sc.last_ffn_gradient(layers, norm)
    stack = sc.init_stack(layers)
    x = sc.stack_inputs()
    for params in stack[:-1]:
        x, _ = encoder_layer(x, params, norm=norm)
    r = np.random.default_rng(1).standard_normal(x.shape)  # the read-out last_ffn_gradient uses (seed + 1)

    def loss(w_2):
        last = dataclasses.replace(stack[-1], ffn=dataclasses.replace(stack[-1].ffn, w_2=w_2))
        return np.sum(r * sc.last_layer_ffn(x, last, norm)[0])

    w_2, eps = stack[-1].ffn.w_2, 1e-6
    for idx in ((0, 0), (17, 5), (255, 63)):
        dw = np.zeros_like(w_2)
        dw[idx] = eps
        assert grad[idx] == pytest.approx((loss(w_2 + dw) - loss(w_2 - dw)) / (2 * eps), rel=1e-5, abs=1e-8)


def test_the_lessons_pre_and_post_ln_claims():
    stack = sc.init_stack(24)
    post, pre = (sc.stream_norms(sc.stack_inputs(), stack, norm) for norm in ("post", "pre"))
    np.testing.assert_allclose(post, math.sqrt(sc.LN_D_MODEL), rtol=1e-4)  # a layer norm's output, every layer
    assert pre[-1] > 3 * pre[0]
    g = {norm: [np.linalg.norm(sc.last_ffn_gradient(L, norm)) for L in (1, 32)] for norm in ("post", "pre")}
    assert g["post"][1] / g["post"][0] > 0.6  # about flat in depth
    assert g["pre"][1] / g["pre"][0] < 0.35  # falls, roughly like 1/sqrt(L) (0.18)
    with pytest.raises(ValueError, match=r"^norm: expected 'pre' or 'post'"):
        sc.last_ffn_gradient(2, "middle")


# --- causal alignment when queries and keys differ in number ------------------------------------------------------


def test_causal_alignment_top_left_for_tiled_attention_bottom_right_for_the_kv_cache():
    assert sc.aligned_causal_mask(2, 5, "top-left").astype(int).tolist() == [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0]]
    # FlashAttention's own example (flash_attn_interface docstring): seqlen_q = 2, seqlen_k = 5.
    assert sc.aligned_causal_mask(2, 5, "bottom-right").astype(int).tolist() == [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]
    np.testing.assert_array_equal(sc.aligned_causal_mask(6, 6, "bottom-right"), mha.causal_mask(6))
    with pytest.raises(ValueError, match="^corner"):
        sc.aligned_causal_mask(2, 5, "middle")
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 7, 8))
    q = q[:3]  # 3 queries, 7 keys
    tiled = mha.tiled_attention(q, k, v, block=2, causal=True)
    top_left, _ = mha.scaled_dot_product_attention(q, k, v, sc.aligned_causal_mask(3, 7, "top-left"))
    np.testing.assert_allclose(tiled, top_left, atol=1e-12)
    # A chunk of 3 new tokens after a cached prefix of 4: each sees the prefix and itself (bottom-right).
    params = mha.init_params(16, 4, seed=1)
    x = rng.normal(size=(7, 16))
    chunk = sc.decode_chunk(x[:4], x[4:], params)
    bottom_right, _ = mha.multi_head_attention(x[4:], x, x, params, sc.aligned_causal_mask(3, 7, "bottom-right"))
    np.testing.assert_allclose(chunk, bottom_right, atol=1e-12)
    wrong, _ = mha.multi_head_attention(x[4:], x, x, params, sc.aligned_causal_mask(3, 7, "top-left"))
    assert np.abs(chunk - wrong).max() > 1e-3


def test_rope_base_sets_the_slowest_wavelength_the_lesson_prints():
    for base, turn in ((10_000, 54_410), (500_000, 2_559_196)):
        slowest = rope_angles(np.array([1.0]), 128, base)[0, -1]
        assert slowest == pytest.approx(base ** (-126 / 128), rel=1e-12)  # pair j = 63 of 64
        assert round(2 * math.pi / slowest) == turn


def test_rolling_buffer_caps_the_cache_at_the_window():
    m = sc.MODEL_7B
    d_k = m["d_model"] // m["h"]
    whole = {n: mha.cost.kv_cache_bytes(m["layers"], n, 8, d_k, np.float16) for n in (4096, 32768)}
    assert whole == {4096: 2**29, 32768: 2**32}  # 0.5 GiB and 4 GiB
    # A rolling buffer of W slots: position i overwrites slot i mod W. Once query i's own key is written, the
    # buffer holds positions i - W + 1 .. i, exactly the keys a causal window of W keys lets query i see.
    for w, n in ((4096, 32768), (8, 45)):
        slots = np.full(w, -1)
        for i in range(n + 1):
            slots[i % w] = i
        assert sorted(slots) == list(range(n - w + 1, n + 1))
    assert mha.sliding_window_mask(46, 8)[45].nonzero()[0].tolist() == list(range(38, 46))


def test_the_lessons_flashcards_state_computed_numbers():
    cards = {c.question: c.answer for c in fc.load_deck() if c.section.startswith("Lesson 18: Positions")}
    assert len(cards) >= 6
    reach = next(a for q, a in cards.items() if "sliding-window" in q)
    assert f"{32 * 4096:,}" in reach
    base = next(a for q, a in cards.items() if "RoPE's base" in q)
    assert "54,000" in base and "2.6 million" in base
    assert round(2 * math.pi * 10_000 ** (126 / 128), -3) == 54_000
    assert round(2 * math.pi * 500_000 ** (126 / 128) / 1e6, 1) == 2.6
    buffer = next(a for q, a in cards.items() if "rolling buffer" in q)
    assert "0.5 GiB" in buffer and "4 GiB" in buffer
    m = sc.MODEL_7B
    assert mha.cost.kv_cache_bytes(m["layers"], 32768, 8, m["d_model"] // m["h"], np.float16) == 4 * 2**30
