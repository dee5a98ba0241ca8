"""differential_attention against its formula: the difference of two softmax maps."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha_lesson as m


def softmax_rows(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@given(
    n_q=st.integers(1, 5),
    n_kv=st.integers(1, 5),
    d=st.integers(1, 4),
    per_head=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_equals_the_formula(n_q, n_kv, d, per_head, seed):
    rng = np.random.default_rng(seed)
    q1, q2 = rng.normal(size=(2, 3, n_q, d))
    k1, k2 = rng.normal(size=(2, 3, n_kv, d))
    v = rng.normal(size=(3, n_kv, 2))
    lam = rng.uniform(0, 1, size=(3, 1, 1)) if per_head else 0.8
    out, weights = m.differential_attention(q1, k1, q2, k2, v, lam)
    ref = softmax_rows(q1 @ k1.swapaxes(-1, -2) / np.sqrt(d)) - lam * softmax_rows(
        q2 @ k2.swapaxes(-1, -2) / np.sqrt(d)
    )
    np.testing.assert_allclose(weights, ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(out, ref @ v, rtol=1e-11, atol=1e-14)
    row_sums = np.broadcast_to(1 - np.broadcast_to(lam, (3, 1, 1))[..., 0], (3, n_q))
    np.testing.assert_allclose(weights.sum(-1), row_sums, rtol=1e-12, atol=1e-15)


def test_equal_maps_cancel_and_weights_can_be_negative():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 2))
    out, weights = m.differential_attention(q, k, q, k, v, 1.0)
    assert np.abs(weights).max() < 1e-15 and np.abs(out).max() < 1e-14
    _, weights = m.differential_attention(q, k, -q, k, v, 1.0)
    assert weights.min() < 0


def test_masked_keys_get_zero_weight():
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(5, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    _, weights = m.differential_attention(q, k, 2 * q, k, v, 0.5, m.causal_mask(5))
    assert (weights[~m.causal_mask(5)] == 0).all()


BAD = {
    "q2 shape": ("q2", lambda x: m.differential_attention(x, x, x[:, :2], x, x, 0.5)),
    "k2 shape": ("k2", lambda x: m.differential_attention(x, x, x, x[:2], x, 0.5)),
    "lam NaN": ("lam", lambda x: m.differential_attention(x, x, x, x, x, np.nan)),
    "lam per key": ("lam", lambda x: m.differential_attention(x, x, x, x, x, np.ones(4))),
    "k1 width": ("k", lambda x: m.differential_attention(x, x[:, :2], x, x[:, :2], x, 0.5)),
}


@pytest.mark.parametrize("name, call", BAD.values(), ids=BAD.keys())
def test_bad_input_names_the_argument(name, call):
    with pytest.raises(ValueError, match=rf"^{name}: expected .*got"):
        call(np.ones((4, 3)))
