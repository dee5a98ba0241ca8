"""The backward pass against PyTorch autograd, central finite differences, and what a masked row must give."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mask_sampling import random_mask

import mha_lesson as m
from mha_lesson import gradients

FIXTURE = Path(__file__).parent / "reference" / "torch_grads.npz"
with np.load(FIXTURE) as _data:
    DATA = dict(_data)
CASES = sorted({key.split("__")[0] for key in DATA})


def load(case):
    """(q, k, v, params, mask or None, grad_output, torch's output, torch's gradients) of one saved case."""
    f = {key.split("__", 1)[1]: a for key, a in DATA.items() if key.startswith(case + "__")}
    params = m.MHAParams(h=int(f["h"]), h_kv=int(f["h_kv"]), **{n: a for n, a in f.items() if n[:2] in ("w_", "b_")})
    torch_grads = {key.removeprefix("grad__"): a for key, a in f.items() if key.startswith("grad__")}
    return f["q"], f["k"], f["v"], params, f.get("mask"), f["grad_output"], f["out"], torch_grads


def loss(q, k, v, p, mask, grad_output):
    """The scalar whose gradients multi_head_attention_grads returns."""
    return float(np.sum(m.multi_head_attention(q, k, v, p, mask)[0] * grad_output))


def test_fixture_covers_the_cases_the_issue_asks_for():
    assert {"self_causal_bias", "cross_bias", "batched_padding", "single_head", "grouped_query"} == set(CASES)
    assert DATA["single_head__h"] == 1 and DATA["grouped_query__h_kv"] < DATA["grouped_query__h"]
    assert DATA["cross_bias__q"].shape[-2] != DATA["cross_bias__k"].shape[-2]
    assert np.array_equal(DATA["self_causal_bias__q"], DATA["self_causal_bias__k"])
    assert all(a.dtype in (np.float64, np.bool_) or a.ndim == 0 for a in DATA.values())
    assert FIXTURE.stat().st_size < 200 * 1024


@pytest.mark.parametrize("case", CASES)
def test_matches_torch_autograd(case):
    q, k, v, p, mask, grad_output, out, torch_grads = load(case)
    np.testing.assert_allclose(m.multi_head_attention(q, k, v, p, mask)[0], out, rtol=0, atol=1e-12)
    ours = m.multi_head_attention_grads(q, k, v, p, grad_output, mask)
    assert ours.keys() == torch_grads.keys()
    for name, g in torch_grads.items():
        assert ours[name].shape == g.shape, name
        np.testing.assert_allclose(ours[name], g, rtol=0, atol=1e-10, err_msg=name)


def test_self_attention_gradient_is_the_sum_of_the_three_roles():
    q, _, _, p, mask, grad_output, _, torch_grads = load("self_causal_bias")
    ours = m.multi_head_attention_grads(q, q, q, p, grad_output, mask)
    d_x = ours["q"] + ours["k"] + ours["v"]
    np.testing.assert_allclose(d_x, torch_grads["q"] + torch_grads["k"] + torch_grads["v"], rtol=0, atol=1e-10)
    # Central differences on x used in all three roles at once.
    eps, i = 1e-6, (3, 5)
    plus, minus = q.copy(), q.copy()
    plus[i] += eps
    minus[i] -= eps
    fd = (loss(plus, plus, plus, p, mask, grad_output) - loss(minus, minus, minus, p, mask, grad_output)) / (2 * eps)
    assert abs(fd - d_x[i]) < 1e-7


@st.composite
def grad_inputs(draw):
    """Small random cases: batched or not, broadcast batches, cross-attention, biases, masks, grouped heads."""
    h_kv, group, d_k = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    h = h_kv * group
    d = h * d_k
    lead_q, lead_kv = draw(st.sampled_from([((), ()), ((2,), (2,)), ((2,), ()), ((), (2,)), ((2, 1), (3,))]))
    n_q, n_kv = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    p = m.init_params(d, h, h_kv=h_kv, bias=draw(st.booleans()), seed=seed)
    p = dataclasses.replace(p, **{n: rng.normal(size=a.shape) for n, a in p.arrays().items()})
    q, (k, v) = rng.normal(size=(*lead_q, n_q, d)), rng.normal(size=(2, *lead_kv, n_kv, d))
    lead = np.broadcast_shapes(lead_q, lead_kv)
    mask = random_mask(rng, (*lead, h, n_q, n_kv)) if draw(st.booleans()) else None
    return q, k, v, p, mask, rng.normal(size=(*lead, n_q, d)), rng


@given(grad_inputs())
def test_directional_derivatives_match_central_differences(inputs):
    q, k, v, p, mask, grad_output, rng = inputs
    grads = m.multi_head_attention_grads(q, k, v, p, grad_output, mask)
    arrays = {"q": q, "k": k, "v": v, **p.arrays()}
    assert grads.keys() == arrays.keys()
    # One random direction through every input and weight at once: 2 forward passes, not 2 per number.
    step = {name: rng.normal(size=a.shape) for name, a in arrays.items()}
    eps = 1e-5

    def at(t):
        moved = {name: a + t * step[name] for name, a in arrays.items()}
        params = dataclasses.replace(p, **{n: moved[n] for n in p.arrays()})
        return loss(moved["q"], moved["k"], moved["v"], params, mask, grad_output)

    fd = (at(eps) - at(-eps)) / (2 * eps)
    analytic = sum(float(np.sum(grads[name] * step[name])) for name in arrays)
    assert abs(fd - analytic) <= 1e-6 * (1 + abs(analytic))
    for name, a in arrays.items():
        assert grads[name].shape == a.shape and np.isfinite(grads[name]).all()


def test_every_entry_matches_central_differences_on_one_case():
    rng = np.random.default_rng(7)
    p = m.init_params(6, 3, bias=True, seed=7)
    p = dataclasses.replace(p, **{n: rng.normal(size=a.shape) for n, a in p.arrays().items()})
    q, k, v = rng.normal(size=(2, 3, 6)), rng.normal(size=(2, 4, 6)), rng.normal(size=(2, 4, 6))
    mask, grad_output = rng.random((2, 3, 3, 4)) < 0.7, rng.normal(size=(2, 3, 6))
    grads = m.multi_head_attention_grads(q, k, v, p, grad_output, mask)
    for name, a in {"q": q, "k": k, "v": v, **p.arrays()}.items():
        fd = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            old = a[i]
            a[i] = old + 1e-6
            up = loss(q, k, v, p, mask, grad_output)
            a[i] = old - 1e-6
            fd[i] = (up - loss(q, k, v, p, mask, grad_output)) / 2e-6
            a[i] = old
        np.testing.assert_allclose(grads[name], fd, rtol=0, atol=1e-7, err_msg=name)


def test_a_fully_masked_query_row_gets_zero_gradient_not_nan():
    q, k, v, p, _, grad_output, _, _ = load("cross_bias")
    mask = np.ones((q.shape[0], p.h, q.shape[-2], k.shape[-2]), dtype=bool)
    mask[1, :, 2] = False  # query 2 of sequence 1 may attend to nothing, in every head
    grads = m.multi_head_attention_grads(q, k, v, p, grad_output, mask)
    assert all(np.isfinite(g).all() for g in grads.values())
    assert np.all(grads["q"][1, 2] == 0)
    assert np.any(grads["q"][1, :2] != 0)
    # That row's output is b_o alone, so its grad_output reaches only W^O's bias.
    other = grad_output.copy()
    other[1, 2] = np.random.default_rng(0).normal(size=p.d_model)
    moved = m.multi_head_attention_grads(q, k, v, p, other, mask)
    for name in grads:
        same = np.array_equal(moved[name], grads[name])
        assert same == (name != "b_o"), name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_with_cache_matches_multi_head_attention(dtype):
    q, k, v, p, mask, *_ = load("grouped_query")
    q, k, v, p = q.astype(dtype), k.astype(dtype), v.astype(dtype), p.astype(dtype)
    out, cache = gradients.forward(q, k, v, p, mask)
    ref, weights = m.multi_head_attention(q, k, v, p, mask)
    assert out.dtype == dtype and cache.weights.dtype == dtype
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-5 if dtype == np.float32 else 1e-13)
    np.testing.assert_allclose(cache.weights, weights, rtol=0, atol=1e-6 if dtype == np.float32 else 1e-14)


def test_softmax_backward_is_the_jacobian_times_the_vector():
    rng = np.random.default_rng(1)
    a = m.softmax(rng.normal(size=5))
    d_a = rng.normal(size=5)
    jacobian = np.diag(a) - np.outer(a, a)  # d a_i / d s_j
    np.testing.assert_allclose(gradients.softmax_backward(d_a, a), jacobian.T @ d_a, rtol=0, atol=1e-15)


def test_large_scores_take_the_shifted_path_and_stay_finite():
    # Scores far above exp()'s range: the weights must still be a softmax, and the gradient finite.
    p = m.init_params(4, 1, seed=0)
    x = np.array([[30.0, 0, 0, 0], [0, 30.0, 0, 0], [0, 0, 30.0, 0]])
    _, weights = m.multi_head_attention(x, x, x, p)
    out, cache = gradients.forward(x, x, x, p, None)
    assert np.abs(cache.Q @ cache.K.swapaxes(-1, -2)).max() > gradients.SAFE_EXP_ARGUMENT
    np.testing.assert_allclose(cache.weights, weights, rtol=0, atol=1e-12)
    grads = m.multi_head_attention_grads(x, x, x, p, np.ones_like(x))
    assert all(np.isfinite(g).all() for g in grads.values())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_masked_scores_do_not_shift_the_allowed_ones_out_of_range(dtype):
    # A row's max must be taken over its allowed keys: shifted by a large masked score (here 141 above the
    # allowed ones), every allowed weight underflowed to 0 in float32 and the row came out all zeros.
    p = m.MHAParams(h=1, w_q=np.eye(2), w_k=np.eye(2), w_v=np.eye(2), w_o=np.eye(2)).astype(dtype)
    x = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 200.0]], dtype=dtype)  # masked key 2 scores 141 against query 1
    mask = m.causal_mask(3)
    _, weights = m.multi_head_attention(x, x, x, p, mask)
    out, cache = gradients.forward(x, x, x, p, mask)
    assert (cache.Q @ cache.K.swapaxes(-1, -2)).max() > 10 * gradients.SAFE_EXP_ARGUMENT
    np.testing.assert_allclose(cache.weights, weights, rtol=0, atol=1e-6)
    np.testing.assert_allclose(cache.weights.sum(axis=-1), 1.0, rtol=1e-6)


@pytest.mark.parametrize(
    ("change", "argument"),
    [
        ({"grad_output": np.zeros((3, 8))}, "grad_output"),
        ({"grad_output": np.zeros((2, 3, 7))}, "grad_output"),
        ({"grad_output": np.full((2, 3, 8), np.nan)}, "grad_output"),
        ({"grad_output": np.zeros((2, 3, 8), dtype=complex)}, "grad_output"),
        ({"q": np.zeros((2, 3, 5))}, "q"),
        ({"v": np.zeros((2, 5, 8))}, "v"),
        ({"mask": np.ones((3, 3), dtype=bool)}, "mask"),
        ({"mask": np.ones((3, 6), dtype=int)}, "mask"),
        ({"params": "weights"}, "params"),
    ],
)
def test_bad_input_names_the_argument(change, argument):
    q, k, v, p, _, grad_output, _, _ = load("cross_bias")
    args = {"q": q, "k": k, "v": v, "params": p, "grad_output": grad_output, "mask": None} | change
    with pytest.raises(ValueError, match=rf"^{argument}:"):
        m.multi_head_attention_grads(**args)


def test_no_keys_at_all_acts_like_a_fully_masked_row():
    p = m.init_params(4, 2, bias=True, seed=0)
    q, k = np.ones((2, 3, 4)), np.ones((2, 0, 4))
    grads = m.multi_head_attention_grads(q, k, k, p, np.ones((2, 3, 4)))
    assert grads["k"].shape == (2, 0, 4)
    assert all(np.all(g == 0) for name, g in grads.items() if name != "b_o")
    np.testing.assert_array_equal(grads["b_o"], np.full(4, 6.0))  # 2 sequences * 3 queries
