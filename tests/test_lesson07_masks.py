"""Lesson 7's claims, through the helpers the notebook calls, checked against explicit loops: the causal mask's
guarantee, a padded batch with and without its mask, combined masks, a query with no key, and cross-attention
shapes and rows."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_lesson as mha
from mha_lesson.demos import connections as conn
from mha_lesson.demos import toy
from mha_lesson.widgets import connections as wc

# --- section 1: causal masking ----------------------------------------------------------------------------


@given(st.integers(1, 60))
def test_causal_mask_allows_n_times_n_plus_one_over_two_pairs(n):
    assert int(mha.causal_mask(n).sum()) == sum(range(1, n + 1)) == n * (n + 1) // 2


def test_toy_heads_with_causal_mask():
    w = toy.toy_weights(causal=True)
    assert np.all(np.triu(w, k=1) == 0)
    for i in range(len(toy.TOKENS)):
        np.testing.assert_allclose(w[3, i, : i + 1], 1 / (i + 1))  # broad head averages the prefix
    free = toy.toy_weights(causal=False)
    # The first-token and previous-token heads already looked back: they barely change, except row 0 of the
    # previous-token head, uniform without the mask (nothing behind it) and on itself with it.
    np.testing.assert_allclose(w[2], free[2], atol=1e-2)
    np.testing.assert_allclose(w[0, 1:], free[0, 1:], atol=1e-2)
    np.testing.assert_allclose(free[0, 0], 1 / len(toy.TOKENS))
    assert w[0, 0, 0] == 1.0


@given(st.integers(1, 10), st.integers(0, 1000))
def test_causal_outputs_do_not_depend_on_later_tokens(cut, seed):
    rng = np.random.default_rng(seed)
    n = 11
    x = rng.normal(size=(n, 16))
    x2 = x.copy()
    x2[cut:] = rng.normal(size=(n - cut, 16))
    p, mask = mha.init_params(16, 4, seed=seed), mha.causal_mask(n)
    a, b = (mha.multi_head_attention(z, z, z, p, mask)[0] for z in (x, x2))
    np.testing.assert_allclose(a[:cut], b[:cut], atol=1e-12)
    assert np.abs(a[cut:] - b[cut:]).max() > 1e-6


def test_lesson_future_change_numbers():
    cut = 6
    other = toy.TOKENS[:cut] + ("cat",) * (len(toy.TOKENS) - cut)
    for causal, changed in ((True, False), (False, True)):
        m = mha.causal_mask(len(toy.TOKENS)) if causal else None
        a, b = (
            mha.multi_head_attention(e, e, e, toy.toy_params(), m)[0]
            for e in map(toy.toy_embeddings, (toy.TOKENS, other))
        )
        assert bool(np.abs(a[:cut] - b[:cut]).max() > 0.1) == changed


# --- section 2: a padded batch ---------------------------------------------------------------------------


def test_padded_batch_stacks_the_sentences_and_zero_rows():
    x, lengths = conn.padded_batch()
    assert x.shape == (3, 11, 64) and lengths.tolist() == [11, 5, 3]
    for b, sentence in enumerate(conn.BATCH_SENTENCES):
        np.testing.assert_array_equal(x[b, : len(sentence)], toy.toy_embeddings(sentence))
        assert not x[b, len(sentence) :].any()
    assert conn.padded_labels(("the", "dog"), 4) == ["the", "dog", conn.PAD, conn.PAD]
    with pytest.raises(ValueError, match="n"):
        conn.padded_labels(("the", "dog"), 1)
    with pytest.raises(ValueError, match="sentences"):
        conn.padded_batch([])


def test_padding_mask_makes_each_sentence_exactly_what_it_is_alone():
    """The lesson's claim: with the mask every real row equals the sentence run alone; without it, short ones move."""
    x, lengths = conn.padded_batch()
    p = toy.toy_params()
    with_mask = mha.multi_head_attention(x, x, x, p, mha.padding_mask(lengths, 11))
    without = mha.multi_head_attention(x, x, x, p)[0]
    for b, sentence in enumerate(conn.BATCH_SENTENCES):
        e, m = toy.toy_embeddings(sentence), len(sentence)
        alone, alone_w = mha.multi_head_attention(e, e, e, p)
        np.testing.assert_allclose(with_mask[0][b, :m], alone, atol=1e-15)
        np.testing.assert_allclose(with_mask[1][b, :, :m, :m], alone_w, atol=1e-15)
        assert not with_mask[1][b, :, :, m:].any()  # no weight on a padded key, in any row
        assert (np.abs(without[b, :m] - alone).max() > 0.1) == (m < 11)


def test_combined_mask_is_the_and_of_both_and_right_padding_is_already_behind_every_real_query():
    lengths = np.array([11, 5, 3])
    both = mha.causal_mask(11) & mha.padding_mask(lengths, 11)
    assert both.shape == (3, 1, 11, 11)
    for b, m in enumerate(lengths):
        for i in range(11):
            assert both[b, 0, i].tolist() == [j <= i and j < m for j in range(11)]
            if i < m:  # a real query: the causal mask alone already hides the padding after it
                assert both[b, 0, i].tolist() == mha.causal_mask(11)[i].tolist()


def test_a_query_with_no_key_gets_zero_weights_where_the_textbook_softmax_gives_nan():
    row = np.full(4, -np.inf)
    with np.errstate(invalid="ignore"):
        assert np.isnan(np.exp(row) / np.exp(row).sum()).all()
    assert not mha.softmax(row).any()


def _explicit_cross_attention(y, x, params):
    """Multi-head attention with Python loops over heads, queries and keys (no matrix products of q and k)."""
    d_k = params.d_k
    n_q, n_kv = len(y), len(x)
    weights = np.zeros((params.h, n_q, n_kv))
    concat = np.zeros((n_q, params.d_model))
    for i in range(params.h):
        Q, K, V = y @ params.w_q_head(i), x @ params.w_k_head(i), x @ params.w_v_head(i)
        for a in range(n_q):
            s = np.array([sum(Q[a, c] * K[b, c] for c in range(d_k)) / math.sqrt(d_k) for b in range(n_kv)])
            e = np.exp(s - s.max())
            weights[i, a] = e / e.sum()
            concat[a, i * d_k : (i + 1) * d_k] = weights[i, a] @ V
    return concat @ params.w_o, weights


# --- section 3: cross-attention ---------------------------------------------------------------------------


def test_translation_example_shapes_and_alignment():
    y, x = conn.translation_inputs()
    out, w = mha.multi_head_attention(y, x, x, conn.translation_params())
    assert y.shape == (4, 16) and x.shape == (6, 16) and w.shape == (2, 4, 6) and out.shape == (4, 16)
    ref_out, ref_w = _explicit_cross_attention(y, x, conn.translation_params())
    np.testing.assert_allclose(w, ref_w, atol=1e-12)
    np.testing.assert_allclose(out, ref_out, atol=1e-12)
    # Head 0: each English word's weight goes to the French word(s) with its meaning; "the" splits over both "le".
    for i, word in enumerate(conn.DECODER_TOKENS):
        french = conn.FRENCH[conn.ENGLISH.index(word)]
        targets = [j for j, t in enumerate(conn.ENCODER_TOKENS) if t == french]
        assert w[0, i, targets].sum() > 0.99
        np.testing.assert_allclose(w[0, i, targets], w[0, i, targets[0]])
        assert out[i, conn.FRENCH.index(french)] > 0.99  # head 0's output row reports that French word
    np.testing.assert_allclose(w[1], 1 / 6)  # head 1: W^Q = 0, uniform


def test_changing_one_decoder_token_changes_only_its_row():
    y, x = conn.translation_inputs()
    p = conn.translation_params()
    y2 = y.copy()
    y2[2] = 0.0
    y2[2, conn.ENGLISH.index("has")] = 1.0
    changed = np.abs(mha.multi_head_attention(y2, x, x, p)[0] - mha.multi_head_attention(y, x, x, p)[0]).max(-1)
    assert changed[2] > 0.9 and np.all(np.delete(changed, 2) == 0)


@settings(max_examples=15)  # the explicit loop is slow; 15 shapes cover the range
@given(st.integers(1, wc.MAX_LEN), st.integers(1, wc.MAX_LEN), st.integers(0, 5))
def test_attention_shapes_match_an_explicit_loop(n_q, n_kv, seed):
    data = wc.attention_shapes(n_q, n_kv, "cross-attention", seed=seed)
    rng = np.random.default_rng(seed)
    decoder, encoder = rng.normal(size=(2, wc.MAX_LEN, conn.X_DMODEL))
    out, w = _explicit_cross_attention(
        decoder[:n_q], encoder[:n_kv], mha.init_params(conn.X_DMODEL, conn.X_H, seed=seed)
    )
    np.testing.assert_allclose(data["weights"], w, atol=1e-12)
    np.testing.assert_allclose(data["output"], out, atol=1e-12)
    assert data["shapes"]["weights"] == (conn.X_H, n_q, n_kv) and data["shapes"]["output"] == (n_q, conn.X_DMODEL)
    assert len(data["q_labels"]) == n_q and len(data["k_labels"]) == n_kv


def test_growing_a_sequence_keeps_the_existing_rows():
    a, b = wc.attention_shapes(3, 5), wc.attention_shapes(6, 5)
    np.testing.assert_allclose(b["weights"][:, :3], a["weights"])


def test_self_attention_mode_uses_one_sequence_and_causal_needs_it():
    data = wc.attention_shapes(5, 9, "self-attention", causal=True)
    assert data["weights"].shape == (conn.X_H, 5, 5)
    assert np.all(np.triu(data["weights"], k=1) == 0)
    with pytest.raises(ValueError, match="causal"):
        wc.attention_shapes(4, 4, "cross-attention", causal=True)
    with pytest.raises(ValueError, match="n_kv"):
        wc.attention_shapes(4, 0)
    with pytest.raises(ValueError, match="mode"):
        wc.attention_shapes(mode="sideways")


# --- going deeper: the toy heads under the causal mask ----------------------------------------------------


def test_causal_toy_heads_lesson_claims():
    """Only row 0 of the previous-token head moves; the same-word head falls back on itself at first occurrences."""
    causal, free = toy.toy_weights(causal=True), toy.toy_weights()
    moved = np.abs(causal - free).max(axis=-1)  # (h, n)
    assert np.flatnonzero(moved[0] > 0.01).tolist() == [0] and not np.any(moved[2] > 0.01)
    first = [i for i, t in enumerate(toy.TOKENS) if t not in toy.TOKENS[:i]]
    assert [i for i in range(len(toy.TOKENS)) if causal[1, i].argmax() == i] == first == [0, 1, 2, 4, 5]


# --- the lesson's flashcards, recomputed ---------------------------------------------------------------------


def _card(question_part):
    from mha_lesson.aids.flashcards import load_deck

    found = [c for c in load_deck() if question_part in c.question]
    assert len(found) == 1, question_part
    return found[0]


def test_lesson_07_and_09_cards_state_what_the_library_does():
    assert _card("when the mask hides all of its keys").section.startswith("Lesson 07")
    x = np.random.default_rng(3).normal(size=(2, 5, 8))
    p = mha.init_params(8, 2, seed=3)
    mask = mha.causal_mask(5) & mha.padding_mask([5, 0], 5)  # sequence 1 is all padding: no key anywhere
    assert mask.shape == (2, 1, 5, 5)
    assert "(batch, 1, n, n)" in _card("How do a causal mask and a padding mask combine").answer
    out, w = mha.multi_head_attention(x, x, x, p, mask)
    assert not w[1].any() and np.isfinite(out).all()
    assert "all zeros" in _card("when the mask hides all of its keys").answer
    capstone = _card("K.swapaxes(-1, -2) rather than K.T")
    assert capstone.section.startswith("Lesson 09")
    k = np.zeros((2, 3, 5, 4))
    assert k.T.shape == (4, 5, 3, 2) and k.swapaxes(-1, -2).shape == (2, 3, 4, 5)


def test_the_core_of_lesson_7_shows_the_causal_map_and_the_rules_the_capstone_needs():
    """The newcomer review: a causally masked map in the core, masks combining with & and broadcasting to
    (batch, h, n_q, n_kv) said in the core, cross-attention (and its padding mask) in the core; left-padding and the
    explorer optional."""
    from mha_lesson.aids import lessons as ls

    nb = ls.load(ls.NOTEBOOKS / "07_causal_mask.ipynb")
    core = ls.worked_cells(nb)
    deeper = nb["cells"][len(core) :]

    def text(cells, kind):
        return "\n".join(ls.cell_text(c) for c in cells if c["cell_type"] == kind)

    assert "toy.toy_weights(causal=True)" in text(core, "code") and "heatmap_grid" in text(core, "code")
    prose = text(core, "markdown")
    assert "combine with `&`" in prose and "(batch, $h$, $n_q$, $n_{kv}$)" in prose
    assert "## 3. Self-attention and cross-attention" in prose
    # The capstone's stage 2 has a cross-attention case and a padded batch whose keys have another length.
    assert "mha.multi_head_attention(x, x_kv, x_kv, params)" in text(core, "code")
    assert "(batch, 1, 1, $n_{kv}$)" in prose
    assert "check_decoder_mask" in text(deeper, "code") and "cross_attention_explorer()" in text(deeper, "code")
    assert "check_decoder_mask" not in text(core, "code")
