"""mha_lesson.circuits: the QK/OV identity, non-identifiability, effective rank, the hand-built induction head and
the head detectors, each against an independent computation (a loop, a closed form or a hand-made answer)."""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mask_sampling import random_mask

import mha_lesson as m
from mha_lesson import circuits as c


def random_params(seed, h=3, d_k=2, h_kv=None):
    return m.init_params(h * d_k, h, h_kv=h_kv, seed=seed)


# --- the two circuits -------------------------------------------------------------------------------------------


def test_circuits_are_the_products_of_the_head_blocks():
    p = random_params(0, h=3, d_k=4)
    for i in range(3):
        cols = slice(4 * i, 4 * i + 4)
        np.testing.assert_array_equal(c.qk_circuit(p, i), p.w_q[:, cols] @ p.w_k[:, cols].T)
        np.testing.assert_array_equal(c.ov_circuit(p, i), p.w_v[:, cols] @ p.w_o[cols, :])
        assert np.linalg.matrix_rank(c.qk_circuit(p, i)) == 4 and c.ov_circuit(p, i).shape == (12, 12)


def test_score_of_two_tokens_is_the_bilinear_form_of_the_qk_circuit():
    p = random_params(1, h=2, d_k=3)
    x = np.random.default_rng(1).normal(size=(5, 6))
    _, _, trace = m.multi_head_attention_loop(x, x, x, p, return_trace=True)
    for i in range(2):
        np.testing.assert_allclose(trace["scores"][i], x @ c.qk_circuit(p, i) @ x.T, rtol=0, atol=1e-12)


@st.composite
def self_attention_inputs(draw):
    """Random bias-free params (h_kv | h), an input x (batched or not) and a mask or None."""
    h, d_k = draw(st.sampled_from([1, 2, 3, 4])), draw(st.integers(1, 4))
    h_kv = draw(st.sampled_from([g for g in range(1, h + 1) if h % g == 0]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    lead, n = draw(st.sampled_from([(), (2,)])), draw(st.integers(1, 6))
    x = rng.normal(size=(*lead, n, h * d_k))
    mask = random_mask(rng, (*lead, h, n, n)) if draw(st.booleans()) else None
    return x, random_params(seed, h, d_k, h_kv), mask


@given(self_attention_inputs())
def test_mha_is_the_sum_of_the_heads_ov_paths(case):
    x, p, mask = case
    out, weights = m.multi_head_attention(x, x, x, p, mask)
    np.testing.assert_allclose(c.circuit_attention(x, p, mask), weights, rtol=0, atol=1e-12)
    np.testing.assert_allclose(c.mha_from_circuits(x, p, mask), out, rtol=0, atol=1e-12)


def test_each_head_term_is_that_head_alone():
    p = random_params(3, h=3, d_k=2)
    x = np.random.default_rng(3).normal(size=(4, 6))
    terms = c.head_terms(x, p)
    for i in range(3):
        alone = p.without_heads([j for j in range(3) if j != i])  # every other head's W^O rows zeroed
        np.testing.assert_allclose(terms[i], m.multi_head_attention(x, x, x, alone)[0], rtol=0, atol=1e-12)


# --- non-identifiability ----------------------------------------------------------------------------------------


@given(st.integers(0, 2**32 - 1), st.sampled_from([(2, 2, None), (4, 2, 2), (4, 3, 1), (1, 3, None)]), st.booleans())
def test_changing_basis_inside_a_head_changes_the_weights_not_the_layer(seed, shape, bias):
    h, d_k, h_kv = shape
    rng = np.random.default_rng(seed)
    p = m.init_params(h * d_k, h, h_kv=h_kv, seed=seed, bias=bias)
    if bias:
        p = dataclasses.replace(p, **{b: rng.normal(size=getattr(p, b).shape) for b in ("b_q", "b_k", "b_v")})
    i = int(rng.integers(h))
    mq, mv = rng.normal(size=(2, d_k, d_k)) + 2 * np.eye(d_k)  # well conditioned
    q = c.reparametrize(p, i, qk=mq, ov=mv)
    x = rng.normal(size=(5, h * d_k))
    (out_p, w_p), (out_q, w_q) = (m.multi_head_attention(x, x, x, params) for params in (p, q))
    np.testing.assert_allclose(w_q, w_p, rtol=0, atol=1e-10)
    np.testing.assert_allclose(out_q, out_p, rtol=0, atol=1e-10)
    np.testing.assert_allclose(c.qk_circuit(q, i), c.qk_circuit(p, i), rtol=0, atol=1e-10)
    np.testing.assert_allclose(c.ov_circuit(q, i), c.ov_circuit(p, i), rtol=0, atol=1e-10)
    assert not np.allclose(q.w_q_head(i), p.w_q_head(i)) and not np.allclose(q.w_v_head(i), p.w_v_head(i))


def test_reparametrize_leaves_other_groups_and_the_input_alone():
    p = random_params(5, h=4, d_k=2, h_kv=2)
    before = {n: a.copy() for n, a in p.arrays().items()}
    q = c.reparametrize(p, 0, qk=np.array([[2.0, 1.0], [0.0, 1.0]]))
    for n, a in before.items():
        np.testing.assert_array_equal(getattr(p, n), a)  # the input params are untouched
    np.testing.assert_array_equal(q.w_q[:, 4:], p.w_q[:, 4:])  # heads 2, 3 read key/value head 1
    np.testing.assert_array_equal(q.w_k[:, 2:], p.w_k[:, 2:])
    assert not np.allclose(q.w_q[:, 2:4], p.w_q[:, 2:4])  # head 1 shares head 0's keys: it changes with them


# --- effective rank ---------------------------------------------------------------------------------------------


def test_circuit_singular_values_match_a_full_svd():
    p = random_params(6, h=2, d_k=3, h_kv=1)
    for i in range(2):
        for kind, w in (("qk", c.qk_circuit(p, i)), ("ov", c.ov_circuit(p, i))):
            full = np.linalg.svd(w, compute_uv=False)  # (d_model,)
            np.testing.assert_allclose(c.circuit_singular_values(p, i, kind), full[:3], rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(full[3:], 0, atol=1e-14)


def test_effective_rank_and_participation_ratio_on_known_spectra():
    assert c.effective_rank(np.ones(8)) == 8  # 7 of 8 equal values hold 87.5 % < 90 %
    assert c.effective_rank(np.ones(8), fraction=0.875) == 7
    assert c.effective_rank([3.0, 0, 0]) == 1
    assert c.effective_rank([2.0, 1.0, 1.0], fraction=0.5) == 1  # 4 of 6
    assert c.effective_rank([1.0, 2.0, 1.0], fraction=0.7) == 2  # sorted first: (4 + 1) / 6 >= 0.7
    np.testing.assert_array_equal(c.effective_rank(np.array([[1.0, 1.0], [1.0, 0.0]])), [2, 1])
    assert math.isclose(float(c.participation_ratio(np.ones(5))), 5.0)
    assert math.isclose(float(c.participation_ratio([1.0, 0.0, 0.0])), 1.0)
    s = np.array([2.0, 1.0])
    assert math.isclose(float(c.participation_ratio(s)), (4 + 1) ** 2 / (16 + 1))


# --- the hand-built induction head -------------------------------------------------------------------------------


@given(st.integers(2, 40), st.integers(0, 2**32 - 1), st.data())
def test_hand_built_model_predicts_every_predictable_token_of_the_second_copy(vocab, seed, data):
    max_len = data.draw(st.integers(4, 80))
    k = data.draw(st.integers(1, min(vocab, max_len // 2)))
    n = data.draw(st.integers(2 * k, max_len))
    model = c.hand_built_induction(vocab, max_len)
    tokens = c.repeated_sequence(np.random.default_rng(seed), vocab, k, n)
    pred = model.predict(tokens)
    # Position t of the second copy (k <= t <= 2k - 2) predicts token t + 1 = token t + 1 - k of the first copy.
    np.testing.assert_array_equal(pred[k : 2 * k - 1], tokens[k + 1 : 2 * k])
    attention = model.attention(tokens)
    assert attention.shape == (2, 1, n, n)
    assert c.induction_score(attention[1, 0], k) > 0.99
    assert c.previous_token_score(attention[0, 0]) > 0.99


def test_hand_built_model_layers_do_what_they_say():
    model = c.hand_built_induction(5, 12)
    b = model.blocks
    assert model.d_model == 3 * 5 + 12 and [s.stop - s.start for s in b.values()] == [5, 12, 5, 5]
    tokens = np.array([3, 0, 4, 1, 3, 0, 4, 1])
    streams, _ = model.residuals(tokens)
    # After layer 1 the "previous" block of position t holds (almost exactly) the one-hot of token t - 1.
    np.testing.assert_allclose(streams[0, 1:, b["previous"]], np.eye(5)[tokens[:-1]], atol=3e-3)
    # Layer 2's QK circuit, read from token (query) to previous token (key), is a scaled identity: K-composition.
    qk = c.qk_circuit(model.layers[1], 0)[b["token"], b["previous"]]
    np.testing.assert_allclose(qk / qk[0, 0], np.eye(5))
    # Its OV circuit copies tokens into the output block, and only there.
    ov = c.ov_circuit(model.layers[1], 0)
    np.testing.assert_array_equal(ov[b["token"], b["output"]], np.eye(5))
    assert np.count_nonzero(ov) == 5


def test_without_the_previous_token_head_the_induction_head_is_blind():
    model = c.hand_built_induction(6, 16)
    first, second = model.layers
    ablated = dataclasses.replace(model, layers=(first.without_heads([0]), second))
    tokens = np.array([2, 5, 1, 0, 2, 5, 1, 0])
    w = ablated.attention(tokens)[1, 0]
    # Every key but position 0 (marked down) now scores 0: query t spreads evenly over keys 1..t.
    for t in range(1, 8):
        np.testing.assert_allclose(w[t, 1 : t + 1], 1 / t, rtol=1e-2)
    assert c.induction_score(w, 4) < 0.3


# --- detectors --------------------------------------------------------------------------------------------------


def test_detectors_on_hand_made_maps():
    n, k = 6, 3  # tokens a b c a b c
    prev = np.zeros((n, n))
    prev[0, 0] = 1.0
    prev[np.arange(1, n), np.arange(n - 1)] = 1.0
    assert c.previous_token_score(prev) == 1.0
    assert math.isclose(float(c.previous_token_score(prev, all_rows=True)), 5 / 6)  # row 0 has no previous token
    uniform = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]  # causal, row t spreads over 0..t
    assert math.isclose(float(c.previous_token_score(uniform)), np.mean(1 / np.arange(2, n + 1)))
    induction = np.eye(n)  # rows 0-2 look at themselves; rows 3, 4, 5 at 1, 2, 3
    induction[3:] = np.eye(n)[[1, 2, 3]]
    assert c.induction_score(induction, k) == 1.0 and c.duplicate_token_score(induction, k) == 0.0
    assert c.induction_score(induction, k, all_rows=True) == 0.5  # TransformerLens' number
    half = 0.5 * induction + 0.5 * np.eye(n)[[0, 0, 0, 0, 1, 2]]  # second copy: half on t-k+1, half on t-k
    assert math.isclose(float(c.induction_score(half, k)), 0.5)
    assert math.isclose(float(c.duplicate_token_score(half, k)), 0.5)
    stacked = np.stack([induction, half, uniform])  # (3, n, n): one score per map
    np.testing.assert_allclose(c.induction_score(stacked, k), [1.0, 0.5, np.mean([1 / 4, 1 / 5, 1 / 6])])


def test_start_skips_a_leading_token():
    # [CLS] a b a b [SEP]: copies at 1-2 and 3-4; induction: 3 -> 2, 4 -> 3.
    w = np.eye(6)
    w[3], w[4] = np.eye(6)[2], np.eye(6)[3]
    assert c.induction_score(w, 2, start=1) == 1.0
    assert c.induction_score(w, 2) < 1.0


@given(st.integers(2, 20), st.integers(0, 2**32 - 1), st.data())
def test_token_patterns_agree_with_the_repeat_scores_on_distinct_tokens(vocab, seed, data):
    k = data.draw(st.integers(1, vocab))
    n = data.draw(st.integers(2 * k, 2 * k + 3))
    rng = np.random.default_rng(seed)
    first = rng.permutation(vocab)[:k]
    tokens = np.concatenate([first, first, vocab + np.arange(n - 2 * k)])  # a tail of fresh tokens
    a = m.softmax(np.where(np.tri(n, dtype=bool), rng.normal(size=(2, n, n)), -np.inf))
    np.testing.assert_allclose(c.detection_score(a, c.induction_pattern(tokens)), c.induction_score(a, k), atol=1e-12)
    np.testing.assert_allclose(
        c.detection_score(a, c.duplicate_token_pattern(tokens)), c.duplicate_token_score(a, k), atol=1e-12
    )


def test_token_patterns_by_hand():
    t = np.array([7, 8, 7, 8])
    dup = np.zeros((4, 4), dtype=bool)
    dup[2, 0] = dup[3, 1] = True
    np.testing.assert_array_equal(c.duplicate_token_pattern(t), dup)
    np.testing.assert_array_equal(c.duplicate_token_pattern(t, causal=False), dup | dup.T)
    ind = np.zeros((4, 4), dtype=bool)
    ind[2, 1] = ind[3, 2] = True  # after the earlier 7 comes position 1; after the earlier 8, position 2
    np.testing.assert_array_equal(c.induction_pattern(t), ind)
    bidirectional = ind.copy()
    bidirectional[0, 3] = True  # the 7 at 0 -> after the later 7 (position 2) comes position 3
    np.testing.assert_array_equal(c.induction_pattern(t, causal=False), bidirectional)


# --- bad input --------------------------------------------------------------------------------------------------


def test_bad_input_raises_value_errors_naming_the_argument():
    p = random_params(0)
    with pytest.raises(ValueError, match="params"):
        c.qk_circuit("not params", 0)
    with pytest.raises(ValueError, match="i: expected a head index"):
        c.ov_circuit(p, 3)
    with pytest.raises(ValueError, match="params: expected weights without biases"):
        c.mha_from_circuits(np.zeros((2, 6)), m.init_params(6, 3, bias=True))
    with pytest.raises(ValueError, match="x: expected shape"):
        c.head_terms(np.zeros((2, 5)), p)
    with pytest.raises(ValueError, match="qk: expected a square"):
        c.reparametrize(p, 0, qk=np.eye(3))
    with pytest.raises(ValueError, match="ov: expected an invertible"):
        c.reparametrize(p, 0, ov=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="kind"):
        c.circuit_singular_values(p, 0, "vo")
    with pytest.raises(ValueError, match="fraction"):
        c.effective_rank([1.0], fraction=0)
    with pytest.raises(ValueError, match="s: expected at least one non-zero"):
        c.participation_ratio([0.0, 0.0])
    with pytest.raises(ValueError, match="vocab_size"):
        c.hand_built_induction(0, 5)
    with pytest.raises(ValueError, match="max_len"):
        c.hand_built_induction(3, 1)
    model = c.hand_built_induction(3, 5)
    with pytest.raises(ValueError, match="tokens: expected ids in"):
        model.predict(np.array([0, 3]))
    with pytest.raises(ValueError, match="tokens: expected a 1-D integer array"):
        model.attention(np.zeros(6, dtype=int))
    with pytest.raises(ValueError, match="tokens"):
        model.predict(np.array([0.5, 1.0]))
    with pytest.raises(ValueError, match="attention: expected rows that sum to 1"):
        c.previous_token_score(np.ones((3, 3)))
    with pytest.raises(ValueError, match="attention: expected self-attention"):
        c.previous_token_score(np.ones((3, 2)) / 2)
    with pytest.raises(ValueError, match="pattern: expected a boolean"):
        c.detection_score(np.eye(3), np.eye(3))
    with pytest.raises(ValueError, match="pattern: expected at least one"):
        c.detection_score(np.eye(3), np.zeros((3, 3), dtype=bool))
    with pytest.raises(ValueError, match="k: expected the second copy"):
        c.induction_score(np.eye(4), 4)
    with pytest.raises(ValueError, match="start"):
        c.induction_score(np.eye(4), 1, start=-1)
    with pytest.raises(ValueError, match="k: expected at most"):
        c.repeated_sequence(np.random.default_rng(0), 3, 4, 8)
    with pytest.raises(ValueError, match="n: expected at least"):
        c.repeated_sequence(np.random.default_rng(0), 5, 4, 7)
