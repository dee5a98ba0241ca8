"""The toy's hand-made heads do what their docstrings claim, on the lesson's sentence and on any other one."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha_lesson as mha
from mha_lesson.demos import toy

SENTENCES = st.lists(st.sampled_from(toy.VOCAB), min_size=2, max_size=toy.MAX_LEN).map(tuple)


def run(tokens=toy.TOKENS, causal=False):
    x = toy.toy_embeddings(tokens)
    mask = mha.causal_mask(len(tokens)) if causal else None
    return mha.multi_head_attention_loop(x, x, x, toy.toy_params(), mask, return_trace=True)


def test_embedding_is_token_part_plus_positional_part():
    x = toy.toy_embeddings()
    n = len(toy.TOKENS)
    np.testing.assert_array_equal(x, toy.token_part() + toy.positional_part(n))
    assert x.shape == (n, toy.D_MODEL)
    assert (x.sum(axis=1) == 2).all() and set(np.unique(x)) == {0.0, 1.0}  # one word, one position
    tok, pos = toy.token_part(), toy.positional_part(n)
    for i, a in enumerate(toy.TOKENS):
        for j, b in enumerate(toy.TOKENS):
            assert (tok[i] @ tok[j] == 1) == (a == b)  # same word <=> same token part
    np.testing.assert_array_equal(pos @ pos.T, np.eye(n))  # positions are orthonormal
    assert not (tok * pos).any()  # the two parts use different columns


@given(SENTENCES)
def test_previous_token_head_puts_over_0_9_on_i_minus_1(tokens):
    _, w, _ = run(tokens)
    for i in range(1, len(tokens)):
        assert w[0, i, i - 1] > 0.9
    np.testing.assert_allclose(w[0, 0], 1 / len(tokens))  # no previous token: uniform


@given(SENTENCES)
def test_duplicate_token_head_looks_at_the_other_occurrences_of_the_same_word(tokens):
    _, w, _ = run(tokens)
    for i, word in enumerate(tokens):
        others = [j for j, other in enumerate(tokens) if other == word and j != i]
        if others:
            assert w[1, i, others].sum() > 0.9, (tokens, i)
            assert w[1, i, i] < 0.1
        else:  # a word that occurs once falls back on itself
            assert np.argmax(w[1, i]) == i
            assert w[1, i, i] > 0.8


@given(SENTENCES)
def test_first_token_head_and_broad_head(tokens):
    _, w, _ = run(tokens)
    n = len(tokens)
    assert (w[2, :, 0] > 0.9).all()
    np.testing.assert_allclose(w[3], 1 / n)
    entropy = -(w[3] * np.log(w[3])).sum(axis=1)
    np.testing.assert_allclose(entropy, math.log(n))


@given(SENTENCES)
def test_scaled_scores_are_exactly_the_planned_values(tokens):
    _, _, trace = run(tokens)
    n = len(tokens)
    prev = np.array([[toy.SHARP if j == i - 1 else 0.0 for j in range(n)] for i in range(n)])
    duplicate = np.array(
        [[toy.SHARP * (tokens[i] == tokens[j]) - toy.SELF * (i == j) for j in range(n)] for i in range(n)]
    )
    first = np.array([[toy.SHARP if j == 0 else 0.0 for j in range(n)] for _ in range(n)])
    for got, want in zip(trace["scaled_scores"], (prev, duplicate, first, np.zeros((n, n))), strict=True):
        np.testing.assert_allclose(got, want, atol=1e-12)


def test_the_four_heads_attend_to_different_places():
    w = toy.toy_weights()
    for a in range(4):
        for b in range(a + 1, 4):
            assert np.abs(w[a] - w[b]).max() > 0.5


def test_intended_keys_match_the_measured_argmax():
    w = toy.toy_weights()
    keys = toy.intended_keys()
    share = (w[:3] * keys).sum(axis=-1)
    assert (share[0, 1:] > 0.9).all() and (share[1:] > 0.8).all()
    assert not keys[0, 0].any()  # row 0 of the previous-token head has no target
    assert keys[1, 5, 5] and keys[1, 5].sum() == 1  # "and" occurs once: it is its own target


def test_with_a_causal_mask_the_backward_looking_heads_still_work():
    _, w, _ = run(causal=True)
    n = len(toy.TOKENS)
    assert np.all(np.triu(w, k=1) == 0)
    assert all(w[0, i, i - 1] > 0.9 for i in range(1, n))
    assert (w[2, :, 0] > 0.9).all()
    # query 3 (the second "the") may only see the first "the" among its other occurrences
    assert w[1, 3, 0] > 0.9
    # lesson 4's printed changes: beyond row 0, heads 0 and 2 barely move; heads 1 and 3 do
    change = np.abs(toy.toy_weights() - w)[:, 1:].max(axis=(1, 2))  # (h,)
    assert change[0] < 0.01 and change[2] < 0.01 and change[1] > 0.5 and change[3] > 0.3


def test_values_copy_the_word_of_the_attended_token():
    out, w, trace = run()
    v = len(toy.VOCAB)
    words = [toy.VOCAB.index(t) for t in toy.TOKENS]
    head0 = trace["head_i"][0][:, :v]
    assert [int(np.argmax(row)) for row in head0[1:]] == words[:-1]  # the previous word
    np.testing.assert_array_equal(out, trace["concat"])  # W^O = I


@given(SENTENCES)
def test_first_query_of_the_previous_token_head_reports_word_frequencies(tokens):
    """Lesson 4: row 0 has no previous token, attends uniformly, so its word columns are the word counts / n."""
    _, w, trace = run(tokens)
    n = len(tokens)
    np.testing.assert_allclose(w[0, 0], np.full(n, 1 / n))
    counts = np.array([tokens.count(word) for word in toy.VOCAB]) / n
    np.testing.assert_allclose(trace["head_i"][0][0, : len(toy.VOCAB)], counts)


def test_shift_argument_builds_other_positional_heads():
    x = toy.toy_embeddings()
    w = mha.multi_head_attention(x, x, x, toy.toy_params(shift=np.eye(toy.MAX_LEN, k=1)))[1]
    n = len(toy.TOKENS)
    assert all(w[0, i, i + 1] > 0.9 for i in range(n - 1))


def test_cancelling_pair_has_opposite_heads_with_equal_weights():
    p = toy.cancelling_pair(d_model=8, seed=3)
    x = np.random.default_rng(0).normal(size=(6, 8))
    _, w, trace = mha.multi_head_attention_loop(x, x, x, p, return_trace=True)
    np.testing.assert_allclose(w[0], w[1])
    np.testing.assert_allclose(trace["head_i"][1], -trace["head_i"][0], atol=1e-15)
    assert np.linalg.norm(trace["head_i"][0]) > 0.1


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: toy.toy_embeddings(["the", "fish"]), "tokens"),
        (lambda: toy.toy_embeddings("the cat"), "tokens"),
        (lambda: toy.toy_embeddings(["the"] * (toy.MAX_LEN + 1)), "tokens"),
        (lambda: toy.toy_embeddings([]), "tokens"),
        (lambda: toy.positional_part(0), "n"),
        (lambda: toy.positional_part(toy.MAX_LEN + 1), "n"),
        (lambda: toy.toy_params(shift=np.eye(3)), "shift"),
        (lambda: toy.toy_params(shift=np.full((toy.MAX_LEN, toy.MAX_LEN), np.nan)), "shift"),
        (lambda: toy.cancelling_pair(d_model=7), "h"),
    ],
)
def test_bad_input_raises_a_value_error_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=rf"^{name}:"):
        call()
