"""Softmax, masks and single-head scaled dot-product attention, checked against a per-query Python loop."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from mask_sampling import random_mask

import mha_lesson as m


def naive_attention(q, k, v, mask=None):
    """One query at a time in plain Python: q (n_q, d_k), k (n_kv, d_k), v (n_kv, d_v) -> (out, weights)."""
    n_q, n_kv = len(q), len(k)
    out, weights = np.zeros((n_q, v.shape[1])), np.zeros((n_q, n_kv))
    for i in range(n_q):
        allowed = [j for j in range(n_kv) if mask is None or mask[i, j]]
        if not allowed:
            continue  # a query with no key: zero weights and zero output (our documented choice)
        s = {j: float(q[i] @ k[j]) / math.sqrt(q.shape[1]) for j in allowed}
        top = max(s.values())
        e = {j: math.exp(s[j] - top) for j in allowed}
        total = sum(e.values())
        for j in allowed:
            weights[i, j] = e[j] / total
            out[i] += weights[i, j] * v[j]
    return out, weights


def naive_batched(q, k, v, mask=None):
    """naive_attention over every broadcast leading index."""
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    n_q, n_kv = q.shape[-2], k.shape[-2]
    q, k, v = (np.broadcast_to(a, (*lead, *a.shape[-2:])) for a in (q, k, v))
    mask = None if mask is None else np.broadcast_to(mask, (*lead, n_q, n_kv))
    out, weights = np.zeros((*lead, n_q, v.shape[-1])), np.zeros((*lead, n_q, n_kv))
    for idx in np.ndindex(lead):
        out[idx], weights[idx] = naive_attention(q[idx], k[idx], v[idx], None if mask is None else mask[idx])
    return out, weights


@st.composite
def attention_inputs(draw):
    """Random q, k, v with broadcastable batch shapes and a mask (or None) that broadcasts to the scores."""
    lead_q, lead_k, lead_v = draw(
        st.sampled_from([((), (), ()), ((2,), (2,), (2,)), ((2,), (), ()), ((), (), (3,)), ((3, 1), (2,), (1,))])
    )
    n_q, n_kv, d_k, d_v = (draw(st.integers(1, 6)) for _ in range(4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    q = rng.normal(size=(*lead_q, n_q, d_k))
    k = rng.normal(size=(*lead_k, n_kv, d_k))
    v = rng.normal(size=(*lead_v, n_kv, d_v))
    mask = None
    if draw(st.booleans()):
        target = (*np.broadcast_shapes(lead_q, lead_k, lead_v), n_q, n_kv)
        mask = random_mask(rng, target)
    return q, k, v, mask


@settings(max_examples=100)  # the central check: more examples than the profile's 60
@given(attention_inputs())
def test_scaled_dot_product_attention_matches_a_per_query_loop(inputs):
    q, k, v, mask = inputs
    out, weights = m.scaled_dot_product_attention(q, k, v, mask)
    ref_out, ref_weights = naive_batched(q, k, v, mask)
    assert out.shape == ref_out.shape and weights.shape == ref_weights.shape
    np.testing.assert_allclose(out, ref_out, rtol=0, atol=1e-12)
    np.testing.assert_allclose(weights, ref_weights, rtol=0, atol=1e-12)
    # Each row sums to 1 over the keys, or to 0 when every key is masked.
    allowed_any = np.ones(weights.shape, bool) if mask is None else np.broadcast_to(mask, weights.shape)
    np.testing.assert_allclose(weights.sum(-1), allowed_any.any(-1).astype(float), rtol=0, atol=1e-12)


def test_a_mask_that_differs_along_v_batch_dimensions_is_applied_per_batch():
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(2, 5, 6))
    mask = np.zeros((2, 3, 5), bool)
    mask[0, :, 0], mask[1, :, 4] = True, True  # batch 0 sees only key 0, batch 1 only key 4
    out, weights = m.scaled_dot_product_attention(q, k, v, mask)
    assert weights.shape == (2, 3, 5)
    np.testing.assert_array_equal(out[0], np.broadcast_to(v[0, 0], (3, 6)))
    np.testing.assert_array_equal(out[1], np.broadcast_to(v[1, 4], (3, 6)))


def test_no_keys_at_all_acts_like_a_fully_masked_row():
    q = np.random.default_rng(4).normal(size=(3, 4))
    out, weights = m.scaled_dot_product_attention(q, np.zeros((0, 4)), np.zeros((0, 2)))
    assert weights.shape == (3, 0)
    np.testing.assert_array_equal(out, np.zeros((3, 2)))


def test_causal_mask_is_lower_triangular_and_gives_zero_weight_above_the_diagonal():
    n = 6
    np.testing.assert_array_equal(m.causal_mask(n), np.tril(np.ones((n, n), bool)))
    x = np.random.default_rng(0).normal(size=(2, n, 4))
    _, weights = m.scaled_dot_product_attention(x, x, x, m.causal_mask(n))
    assert np.all(weights[..., np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] == 0)
    assert weights[..., 0, 0] == pytest.approx(1.0)  # the first token can only see itself


def test_padding_mask_hides_keys_past_each_length():
    mask = m.padding_mask([3, 0, 5], 5)
    assert mask.shape == (3, 1, 1, 5)
    for b, length in enumerate([3, 0, 5]):
        np.testing.assert_array_equal(mask[b, 0, 0], [j < length for j in range(5)])


def test_permuting_keys_and_values_together_leaves_the_output_unchanged():
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 2))
    perm_kv, perm_q = rng.permutation(6), rng.permutation(4)
    out, weights = m.scaled_dot_product_attention(q, k, v)
    out_p, weights_p = m.scaled_dot_product_attention(q[perm_q], k[perm_kv], v[perm_kv])
    np.testing.assert_allclose(out_p, out[perm_q], rtol=0, atol=1e-12)
    np.testing.assert_allclose(weights_p, weights[perm_q][:, perm_kv], rtol=0, atol=1e-12)


def test_float32_inputs_stay_float32():
    rng = np.random.default_rng(2)
    q, k, v = (rng.normal(size=(2, 5, 4)) for _ in range(3))
    out, weights = m.scaled_dot_product_attention(*(a.astype(np.float32) for a in (q, k, v)), m.causal_mask(5))
    assert out.dtype == weights.dtype == np.float32
    ref_out, ref_weights = m.scaled_dot_product_attention(q, k, v, m.causal_mask(5))
    np.testing.assert_allclose(out, ref_out, rtol=0, atol=1e-5)
    np.testing.assert_allclose(weights, ref_weights, rtol=0, atol=1e-5)


# --- softmax ---------------------------------------------------------------------------------------------

moderate = hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6), elements=st.floats(-30, 30))


@given(moderate)
def test_softmax_matches_direct_exp_over_sum_on_moderate_values(x):
    e = np.exp(x)
    np.testing.assert_allclose(m.softmax(x), e / e.sum(axis=-1, keepdims=True), rtol=1e-12, atol=0)


@given(moderate, st.floats(-1e3, 1e3))
def test_softmax_is_invariant_to_adding_a_constant(x, c):
    np.testing.assert_allclose(m.softmax(x + c), m.softmax(x), rtol=0, atol=1e-12)


@given(moderate)
def test_softmax_along_another_axis_matches_moving_that_axis_last(x):
    expected = np.moveaxis(m.softmax(np.moveaxis(x, 0, -1)), -1, 0)
    np.testing.assert_allclose(m.softmax(x, axis=0), expected, rtol=0, atol=1e-15)


def test_softmax_is_stable_at_large_logits():
    p = m.softmax(np.array([[1e4, 0.0, -1e4], [1e4, 1e4, -1e4], [-1e4, -1e4, -1e4], [-1e4, 0.0, -1e4]]))
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p, [[1, 0, 0], [0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3], [0, 1, 0]], rtol=0, atol=1e-15)


def test_softmax_gives_zero_to_minus_inf_and_zeros_to_an_all_minus_inf_row():
    p = m.softmax(np.array([[0.0, -np.inf, 0.0], [-np.inf, -np.inf, -np.inf]]))
    np.testing.assert_array_equal(p, [[0.5, 0.0, 0.5], [0.0, 0.0, 0.0]])


def test_softmax_of_an_empty_axis_is_empty():
    assert m.softmax(np.zeros((2, 0))).shape == (2, 0)


def test_softmax_keeps_float32_and_turns_integers_into_float64():
    assert m.softmax(np.array([1.0, 2.0], dtype=np.float32)).dtype == np.float32
    p = m.softmax(np.array([0, 0]))
    assert p.dtype == np.float64
    np.testing.assert_array_equal(p, [0.5, 0.5])
