"""Lesson 12's claims, through the helpers the notebook calls, checked against explicit loops and closed forms:
the encoder layer, and permutation equivariance with and without positional encoding. (Cross-attention and the
causal mask moved to lesson 7: tests/test_lesson07_masks.py.)"""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import mha_lesson as mha
from mha_lesson.demos import connections as conn
from mha_lesson.demos import toy
from mha_lesson.encoder import encoder_layer, feed_forward, init_encoder_layer, layer_norm
from mha_lesson.positional import sinusoidal_encoding

# --- section 1: the encoder layer -------------------------------------------------------------------------


def _lesson_layer():
    return dataclasses.replace(init_encoder_layer(64, 4, seed=0), attn=toy.toy_params())


def test_encoder_layer_is_the_two_lines_of_the_lesson():
    layer, x = _lesson_layer(), toy.toy_embeddings()
    attn = mha.multi_head_attention(x, x, x, layer.attn)[0]
    x1 = layer_norm(x + attn, layer.ln1_gamma, layer.ln1_beta, layer.eps)
    out = layer_norm(x1 + feed_forward(x1, layer.ffn), layer.ln2_gamma, layer.ln2_beta, layer.eps)
    np.testing.assert_allclose(encoder_layer(x, layer)[0], out, atol=1e-12)
    # Per token: mean 0 and std sqrt(var / (var + eps)) (gamma = 1, beta = 0), computed independently.
    z = x1 + feed_forward(x1, layer.ffn)
    var = z.var(axis=-1)
    np.testing.assert_allclose(out.mean(axis=-1), 0, atol=1e-12)
    np.testing.assert_allclose(out.std(axis=-1), np.sqrt(var / (var + layer.eps)), rtol=1e-12)
    # The stripe the lesson points at: head 2 (first token) writes "the" into column 32 for every token.
    assert np.all(attn[:, 32] > 0.99) and np.all(x1[:, 32] > 2)


def test_pre_ln_is_the_lessons_two_lines_and_leaves_the_output_unnormalised():
    """Lesson 12: pre-LN is x' = x + MHA(LN(x)), out = x' + FFN(LN(x')); its output is not normalised."""
    layer, x = _lesson_layer(), toy.toy_embeddings()
    y = layer_norm(x, layer.ln1_gamma, layer.ln1_beta, layer.eps)
    x1 = x + mha.multi_head_attention(y, y, y, layer.attn)[0]
    out = x1 + feed_forward(layer_norm(x1, layer.ln2_gamma, layer.ln2_beta, layer.eps), layer.ffn)
    np.testing.assert_allclose(encoder_layer(x, layer, norm="pre")[0], out, atol=1e-12)
    assert np.all(np.abs(out.std(axis=-1) - 1) > 0.1)  # unlike post-LN's per-token std of (just under) 1


# --- section 2: permutation equivariance and positional encoding -----------------------------------------

WORDS = toy.token_part()
RAND = mha.init_params(64, 4, seed=0)
EMBED = np.random.default_rng(1).normal(size=(len(toy.VOCAB), 64))  # the lesson's random word-embedding table


def _embed_words(tokens=toy.TOKENS):
    return toy.token_part(tokens)[:, toy.WORD] @ EMBED


def _rand_layer(z):
    return mha.multi_head_attention(z, z, z, RAND)[0]


def _moves_a_word(perm):
    return not np.array_equal(WORDS[perm], WORDS)


@given(st.permutations(range(len(toy.TOKENS))))
def test_without_positions_attention_and_the_encoder_layer_are_equivariant(perm):
    perm = np.array(perm)
    for words in (WORDS, _embed_words()):
        assert conn.permutation_errors(_rand_layer, words, perm).max() < 1e-12
    layer = init_encoder_layer(64, 4, seed=1)
    assert conn.permutation_errors(lambda z: encoder_layer(z, layer)[0], _embed_words(), perm).max() < 1e-12


@given(st.permutations(range(len(toy.TOKENS))))
def test_with_positions_attention_is_not_equivariant(perm):
    perm = np.array(perm)
    assume(_moves_a_word(perm))
    n = len(WORDS)
    sinusoidal = conn.sinusoidal_part(n)
    np.testing.assert_array_equal(sinusoidal[:, :16], 0)  # the code sits in the free columns only
    np.testing.assert_array_equal(conn.with_sinusoidal(), WORDS + sinusoidal)
    for pos in (sinusoidal, toy.positional_part(n)):
        assert conn.permutation_errors(_rand_layer, _embed_words(), perm, pos).max() > 1e-2
        assert conn.permutation_errors(_rand_layer, WORDS, perm, pos).max() > 1e-4  # one-hot words: weaker, not 0


def test_permutation_errors_matches_a_direct_computation():
    perm = np.random.default_rng(0).permutation(len(WORDS))
    pos = toy.positional_part(len(WORDS))
    direct = np.abs(_rand_layer(WORDS[perm] + pos) - _rand_layer(WORDS + pos)[perm]).max(axis=-1)
    np.testing.assert_array_equal(conn.permutation_errors(_rand_layer, WORDS, perm, pos), direct)


def test_who_saw_whom():
    a, b = ("the", "cat", "saw", "the", "dog"), ("the", "dog", "saw", "the", "cat")
    assert np.abs(_rand_layer(_embed_words(a))[1] - _rand_layer(_embed_words(b))[4]).max() < 1e-12
    pe = conn.sinusoidal_part(5)
    assert np.abs(_rand_layer(_embed_words(a) + pe)[1] - _rand_layer(_embed_words(b) + pe)[4]).max() > 0.1


def test_sinusoidal_dot_product_depends_only_on_the_distance():
    d = conn.PE_WIDTH
    pe = sinusoidal_encoding(64, d)
    omega = 10000.0 ** (-np.arange(0, d, 2) / d)
    for o in range(-20, 21):
        closed = np.cos(o * omega).sum()
        assert pe[20] @ pe[20 + o] == pytest.approx(closed, abs=1e-9)
        assert pe[40] @ pe[40 + o] == pytest.approx(closed, abs=1e-9)
    scores = [pe[20] @ pe[20 + o] for o in range(-20, 21)]
    assert int(np.argmax(scores)) == 20 and max(scores) == pytest.approx(d / 2)


@given(st.integers(-10, 10), st.sampled_from([2, 8, 48, 64]))
def test_shift_matrix_moves_every_position_by_k(k, d):
    pe = sinusoidal_encoding(40, d)
    m = conn.shift_matrix(pe, k)
    p = np.arange(max(k, 0), 40 + min(k, 0))
    np.testing.assert_allclose(pe[p] @ m, pe[p - k], atol=1e-12)
    np.testing.assert_allclose(m @ m.T, np.eye(d), atol=1e-12)  # a rotation


def test_shift_matrix_rejects_a_shift_beyond_the_table():
    with pytest.raises(ValueError, match="k"):
        conn.shift_matrix(sinusoidal_encoding(3, 8), 3)


@pytest.mark.parametrize("offset", [-3, -1, 0, 1, 2, 3])
def test_position_head_attends_offset_tokens_back(offset):
    data = conn.position_head(offset)
    w = data["weights"]
    n = len(toy.TOKENS)
    for i in range(n):
        if 0 <= i - offset < n:
            assert w[i].argmax() == i - offset and w[i, i - offset] > 0.99
    assert data["on_target"] > 0.99
    np.testing.assert_allclose(conn.position_head(offset, "none")["weights"], 1 / n)  # no code: uniform


def test_position_head_gain_sharpens_monotonically():
    values = [conn.position_head(1, gain=g)["on_target"] for g in (0, 1, 3, 9)]
    assert values[0] == pytest.approx(1 / len(toy.TOKENS)) and np.all(np.diff(values) > 0)
    assert values[1] < 0.6 and values[3] > 0.99
    with pytest.raises(ValueError, match="offset"):
        conn.position_head(4)


def test_helpers_reject_bad_input_naming_the_argument():
    with pytest.raises(ValueError, match="perm"):
        conn.permutation_errors(_rand_layer, WORDS, np.zeros(len(WORDS), dtype=int))
    with pytest.raises(ValueError, match="gain"):
        conn.position_head(1, gain=-1.0)
    with pytest.raises(ValueError, match="encoding"):
        conn.position_head(1, encoding="learned")


def test_lesson_embedding_helpers_match_an_explicit_table_lookup():
    table = conn.random_word_table(seed=1)
    np.testing.assert_array_equal(table, EMBED)
    np.testing.assert_array_equal(conn.embed_words(toy.TOKENS, table), _embed_words())
    for i, t in enumerate(toy.TOKENS):
        np.testing.assert_array_equal(conn.embed_words(toy.TOKENS, table)[i], EMBED[toy.VOCAB.index(t)])


def test_what_each_toy_head_writes_for_cat():
    """The lesson's printout for token 1: each head's first 5 block columns hold a distribution over words."""
    x = toy.toy_embeddings()
    attn = mha.multi_head_attention(x, x, x, toy.toy_params())[0]
    w = toy.toy_weights()
    v = len(toy.VOCAB)
    for i in range(4):
        block = attn[1, i * toy.D_K : i * toy.D_K + v]
        expected = np.array([w[i, 1, [j for j, t in enumerate(toy.TOKENS) if t == word]].sum() for word in toy.VOCAB])
        np.testing.assert_allclose(block, expected, atol=1e-12)
    assert attn[1, : toy.D_K].argmax() == 0 and attn[1, 32] > 0.99  # previous word "the"; first word "the"


def test_position_head_gain_times_the_dot_product_gap():
    """Scaled score = gain * PE[i - 1] . PE[j]: the gap to the neighbours is gain * (24 - sum_i cos w_i)."""
    d = conn.PE_WIDTH
    omega = 10000.0 ** (-np.arange(0, d, 2) / d)
    gap = d / 2 - np.cos(omega).sum()
    pe = sinusoidal_encoding(64, d)
    s = np.array([pe[20] @ pe[20 + o] for o in range(-20, 21)])
    assert s.max() - np.sort(s)[-2] == pytest.approx(gap)
    x = conn.with_sinusoidal()
    for gain in (1.0, 3.0, 9.0):
        q = x @ conn.position_head_params(1, gain).w_q
        scores = q @ x.T / math.sqrt(64)
        np.testing.assert_allclose(scores[5], gain * pe[4] @ pe[: len(x)].T, atol=1e-9)
        assert scores[5, 4] - np.sort(scores[5])[-2] == pytest.approx(gain * gap)


def test_plots_equivariance_bars_and_shift_scores():
    from matplotlib.figure import Figure

    from mha_lesson.plots import connections as pc

    fig = Figure()
    ax = fig.subplots()
    errors = {"a": np.array([0.0, 1e-16, 2e-16]), "b": np.array([0.1, 0.2, 0.3])}
    pc.equivariance_bars(ax, errors, ["x", "y", "z"])
    heights = [p.get_height() for p in ax.patches]
    np.testing.assert_allclose(heights, [1e-18, 1e-16, 2e-16, 0.1, 0.2, 0.3])  # zeros floored for the log axis
    assert ax.get_yscale() == "log" and ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    fig.draw_without_rendering()
    legend, axes_box = ax.get_legend().get_window_extent(), ax.get_window_extent()
    assert legend.y1 < axes_box.y0  # below the axes, off the bars
    fig = Figure()
    ax = fig.subplots()
    offsets = np.arange(-2, 3)
    pc.shift_scores(ax, offsets, {"p": offsets**2.0, "q": offsets**2.0})
    lines = ax.get_lines()[:2]
    assert lines[0].get_linestyle() != lines[1].get_linestyle()  # coinciding curves stay distinguishable
    np.testing.assert_array_equal(lines[1].get_ydata(), offsets**2.0)


def test_feature_heatmaps_share_one_scale_and_name_the_features_once():
    from matplotlib.figure import Figure

    from mha_lesson.plots import connections as pc

    fig = Figure()
    a, b = np.array([[1.0, -3.0]]), np.array([[0.5, 2.0]])
    images = pc.feature_heatmaps(fig, {"a": a, "b": b}, ["t"])
    assert [im.get_clim() for im in images] == [(-3.0, 3.0)] * 2  # the largest |value| of all stages
    assert fig.get_supxlabel() == "feature (column of d_model)"
    assert [ax.get_xlabel() for ax in fig.axes[:2]] == ["", ""]


def test_feature_heatmaps_give_a_one_hot_stage_its_own_scale_and_mark_the_blocks():
    from matplotlib.figure import Figure

    from mha_lesson.plots import connections as pc

    fig = Figure()
    x, y = np.array([[1.0, 0.0, 0.0, 1.0]]), np.array([[0.5, -4.0, 2.0, 0.0]])
    images = pc.feature_heatmaps(fig, {"x": x, "y": y}, ["t"], one_hot=["x"], col_edges=[2], block_names=["h0", "h1"])
    assert [im.get_clim() for im in images] == [(0.0, 1.0), (-4.0, 4.0)]  # y alone sets the shared scale
    assert images[0].get_cmap()(1.0) == (0.0, 0.0, 0.0, 1.0)  # a one is black, not a pale tint of red
    for ax in fig.axes[:2]:
        assert [line.get_xdata()[0] for line in ax.get_lines()] == [1.5]  # between the blocks' columns 1 and 2
        assert list(ax.get_xticks()) == [0, 2]
        top = ax.child_axes[0]
        assert [t.get_text() for t in top.get_xticklabels()] == ["h0", "h1"]
        assert list(top.get_xticks()) == [0.5, 2.5]
    with pytest.raises(ValueError, match="one_hot"):
        pc.feature_heatmaps(Figure(), {"y": y}, ["t"], one_hot=["y"])
    with pytest.raises(ValueError, match="block_names"):
        pc.feature_heatmaps(Figure(), {"y": y}, ["t"], col_edges=[2], block_names=["h0"])
