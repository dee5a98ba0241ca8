"""Batched multi-head attention against the loop over heads, and the properties the lessons state."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mask_sampling import random_mask

import mha_lesson as m
from mha_lesson.demos.examples import TOKENS, worked_example


def with_random_biases(p, rng):
    """p with non-zero biases (init_params starts them at zero, which would hide bias bugs)."""
    return dataclasses.replace(p, **{n: rng.normal(size=p.d_model) for n in ("b_q", "b_k", "b_v", "b_o")})


@st.composite
def mha_inputs(draw):
    """Random q, k, v, params and mask: batched or not, self- or cross-attention, with or without biases."""
    h, d_k = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    d = h * d_k
    lead_q, lead_kv = draw(st.sampled_from([((), ()), ((2,), (2,)), ((2,), ()), ((), (3,)), ((2, 1), (3,))]))
    cross = draw(st.booleans())
    n_q = draw(st.integers(1, 5))
    n_kv = draw(st.integers(1, 6)) if cross else n_q
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    p = m.init_params(d, h, seed=seed)
    if draw(st.booleans()):
        p = with_random_biases(p, rng)
    if cross:
        q, k, v = rng.normal(size=(*lead_q, n_q, d)), *rng.normal(size=(2, *lead_kv, n_kv, d))
    else:
        q = k = v = rng.normal(size=(*lead_q, n_q, d))
    mask = None
    if draw(st.booleans()):
        lead = np.broadcast_shapes(lead_q, lead_kv if cross else lead_q)
        target = (*lead, h, n_q, n_kv)
        mask = random_mask(rng, target)
    return q, k, v, p, mask


@settings(max_examples=100)  # the central check: more examples than the profile's 60
@given(mha_inputs())
def test_batched_matches_the_loop_over_heads(inputs):
    q, k, v, p, mask = inputs
    out, weights = m.multi_head_attention(q, k, v, p, mask)
    out_loop, weights_loop = m.multi_head_attention_loop(q, k, v, p, mask)
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    assert out.shape == (*lead, q.shape[-2], p.d_model)
    assert weights.shape == (*lead, p.h, q.shape[-2], k.shape[-2])
    np.testing.assert_allclose(out, out_loop, rtol=0, atol=1e-12)
    np.testing.assert_allclose(weights, weights_loop, rtol=0, atol=1e-12)
    out_only, none = m.multi_head_attention(q, k, v, p, mask, need_weights=False)
    assert none is None
    np.testing.assert_allclose(out_only, out, rtol=0, atol=1e-12)
    # Rows of weights sum to 1, or to 0 for a query whose keys are all masked.
    seen = np.ones(weights.shape, bool) if mask is None else np.broadcast_to(mask, weights.shape)
    np.testing.assert_allclose(weights.sum(-1), seen.any(-1).astype(float), rtol=0, atol=1e-12)
    assert np.all(weights[~seen] == 0)


@pytest.mark.parametrize(("lead", "h", "n_q", "n_kv"), [((), 2, 1030, 1100), ((2,), 3, 600, 600)])
def test_long_sequences_match_the_loop(lead, h, n_q, n_kv):
    """Big enough (8 MiB of scores and up) that the batched version works on blocks of heads, not all at once."""
    rng = np.random.default_rng(0)
    p = with_random_biases(m.init_params(2 * h, h, seed=1), rng)
    q, k, v = rng.normal(size=(*lead, n_q, 2 * h)), *rng.normal(size=(2, *lead, n_kv, 2 * h))
    mask = (rng.random((*lead, h, n_q, n_kv)) < 0.5) & m.causal_mask(max(n_q, n_kv))[:n_q, :n_kv]
    out, weights = m.multi_head_attention(q, k, v, p, mask)
    out_loop, weights_loop = m.multi_head_attention_loop(q, k, v, p, mask)
    np.testing.assert_allclose(out, out_loop, rtol=0, atol=1e-12)
    np.testing.assert_allclose(weights, weights_loop, rtol=0, atol=1e-12)
    np.testing.assert_allclose(m.multi_head_attention(q, k, v, p, mask, need_weights=False)[0], out, atol=1e-12)


@given(st.integers(0, 2**32 - 1), st.sampled_from([(), (2,)]), st.integers(1, 6), st.sampled_from([(4, 1), (6, 3)]))
def test_self_attention_without_mask_is_permutation_equivariant(seed, lead, n, dh):
    rng = np.random.default_rng(seed)
    p = with_random_biases(m.init_params(*dh, seed=seed), rng)
    x, perm = rng.normal(size=(*lead, n, dh[0])), rng.permutation(n)
    out, weights = m.multi_head_attention(x, x, x, p)
    out_p, weights_p = m.multi_head_attention(x[..., perm, :], x[..., perm, :], x[..., perm, :], p)
    np.testing.assert_allclose(out_p, out[..., perm, :], rtol=0, atol=1e-12)
    np.testing.assert_allclose(weights_p, weights[..., perm, :][..., perm], rtol=0, atol=1e-12)


def test_trace_follows_the_derivation_step_by_step():
    rng = np.random.default_rng(1)
    p = with_random_biases(m.init_params(12, 3, seed=2), rng)
    q, k, v = rng.normal(size=(2, 4, 12)), *rng.normal(size=(2, 2, 6, 12))
    mask = m.padding_mask([6, 3], 6)
    out, weights, t = m.multi_head_attention_loop(q, k, v, p, mask, return_trace=True)
    for i in range(3):
        np.testing.assert_allclose(t["Q_i"][i], q @ p.w_q_head(i) + p.b_head("b_q", i), atol=1e-12)
        np.testing.assert_allclose(t["K_i"][i], k @ p.w_k_head(i) + p.b_head("b_k", i), atol=1e-12)
        np.testing.assert_allclose(t["V_i"][i], v @ p.w_v_head(i) + p.b_head("b_v", i), atol=1e-12)
        np.testing.assert_allclose(t["scores"][i], t["Q_i"][i] @ t["K_i"][i].swapaxes(-1, -2), atol=1e-12)
        seen = np.broadcast_to(mask[:, 0], t["scores"][i].shape)
        np.testing.assert_allclose(t["scaled_scores"][i][seen], t["scores"][i][seen] / 2, atol=1e-12)  # sqrt(4)
        np.testing.assert_allclose(t["head_i"][i], t["weights"][i] @ t["V_i"][i], atol=1e-12)
    np.testing.assert_array_equal(np.stack(t["weights"], axis=-3), weights)
    np.testing.assert_array_equal(t["concat"], m.merge_heads(np.stack(t["head_i"], axis=-3)))
    np.testing.assert_array_equal(t["output"], out)
    # Concat then W^O is the same as adding each head's own contribution head_i @ W_i^O.
    per_head = sum(t["head_i"][i] @ p.w_o_head(i) for i in range(3))
    np.testing.assert_allclose(t["concat"] @ p.w_o, per_head, rtol=0, atol=1e-12)
    np.testing.assert_allclose(out, per_head + p.b_o, rtol=0, atol=1e-12)


def test_one_head_is_single_head_attention_on_the_full_projections():
    rng = np.random.default_rng(3)
    p = with_random_biases(m.init_params(6, 1, seed=4), rng)
    q, k, v = rng.normal(size=(2, 3, 6)), *rng.normal(size=(2, 2, 5, 6))
    mask = rng.random((2, 3, 5)) < 0.6
    head, w = m.scaled_dot_product_attention(q @ p.w_q + p.b_q, k @ p.w_k + p.b_k, v @ p.w_v + p.b_v, mask)
    out, weights = m.multi_head_attention(q, k, v, p, mask[:, None])
    np.testing.assert_allclose(weights[:, 0], w, rtol=0, atol=1e-12)
    np.testing.assert_allclose(out, head @ p.w_o + p.b_o, rtol=0, atol=1e-12)


def test_causal_mask_gives_zero_weight_above_the_diagonal_in_every_head():
    p = m.init_params(8, 4, seed=5)
    x = np.random.default_rng(5).normal(size=(3, 7, 8))
    _, weights = m.multi_head_attention(x, x, x, p, m.causal_mask(7))
    assert np.all(weights * ~m.causal_mask(7) == 0)
    np.testing.assert_allclose(weights.sum(-1), 1, rtol=0, atol=1e-12)


@pytest.mark.parametrize("f", [m.multi_head_attention, m.multi_head_attention_loop])
def test_no_keys_at_all_leaves_only_the_output_bias(f):
    rng = np.random.default_rng(7)
    p = with_random_biases(m.init_params(8, 2, seed=7), rng)
    out, weights = f(rng.normal(size=(3, 8)), np.zeros((0, 8)), np.zeros((0, 8)), p)
    assert weights.shape == (2, 3, 0)
    np.testing.assert_allclose(out, np.broadcast_to(p.b_o, (3, 8)), rtol=0, atol=1e-12)


def test_float32_stays_float32():
    rng = np.random.default_rng(6)
    p = with_random_biases(m.init_params(8, 2, seed=6), rng)
    x = rng.normal(size=(2, 5, 8))
    x32, p32 = x.astype(np.float32), p.astype(np.float32)
    out, weights = m.multi_head_attention(x32, x32, x32, p32, m.causal_mask(5))
    assert out.dtype == weights.dtype == np.float32
    assert m.multi_head_attention(x32, x32, x32, p32, need_weights=False)[0].dtype == np.float32
    out_loop, weights_loop, trace = m.multi_head_attention_loop(x32, x32, x32, p32, return_trace=True)
    assert out_loop.dtype == weights_loop.dtype == np.float32
    assert all(a.dtype == np.float32 for name in ("Q_i", "scores", "weights", "head_i") for a in trace[name])
    ref_out, ref_weights = m.multi_head_attention(x, x, x, p, m.causal_mask(5))
    np.testing.assert_allclose(out, ref_out, rtol=0, atol=1e-5)
    np.testing.assert_allclose(weights, ref_weights, rtol=0, atol=1e-5)


def test_worked_example_is_hand_computable_and_its_heads_attend_differently():
    x, p = worked_example()
    assert x.shape == (len(TOKENS), 8) and (p.d_model, p.h, p.d_k) == (8, 2, 4)
    assert x.dtype == p.dtype == np.float64 and not p.has_bias
    for a in (x, *p.arrays().values()):
        np.testing.assert_array_equal(a, np.round(a, 1))  # one decimal at most
    _, weights, t = m.multi_head_attention_loop(x, x, x, p, return_trace=True)
    for s in t["scaled_scores"]:
        np.testing.assert_array_equal(s, np.round(s))  # whole numbers: only the softmax needs a calculator
    assert not np.array_equal(weights[0].argmax(-1), weights[1].argmax(-1))
    np.testing.assert_array_equal(worked_example()[0], x)  # deterministic


@pytest.mark.parametrize("scale", [1e-3, 1.0, 50.0, 1e4])
def test_huge_and_tiny_scores_stay_finite_and_agree_with_the_loop(scale):
    # Scores of +-1e4 need the max-shift before exp(); small ones take the shortcut without it.
    rng = np.random.default_rng(3)
    p = m.init_params(16, 2, seed=3)
    x = scale * rng.normal(size=(2, 7, 16))
    for need_weights in (True, False):
        out, w = m.multi_head_attention(x, x, x, p, need_weights=need_weights)
        ref_out, ref_w = m.multi_head_attention_loop(x, x, x, p)
        assert np.isfinite(out).all()
        np.testing.assert_allclose(out, ref_out, rtol=1e-10, atol=1e-10 * scale)
        if need_weights:
            np.testing.assert_allclose(w, ref_w, atol=1e-12)
