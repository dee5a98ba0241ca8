"""linear_attention: the recurrence against a plain Python loop, against (Q Kᵀ ⊙ causal) V, and chunked against both."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha_lesson as m


def python_loop(q, k, v, beta=None, decay=None):
    """The issue's update rule, one sequence, one token and one state entry at a time, in Python floats."""
    n, d_k = q.shape
    d_v = v.shape[1]
    S = [[0.0] * d_k for _ in range(d_v)]
    out = np.zeros((n, d_v))
    for t in range(n):
        a = 1.0 if decay is None else float(decay[t])
        b = None if beta is None else float(beta[t])
        Sk = [sum(S[i][j] * k[t, j] for j in range(d_k)) for i in range(d_v)]  # S_{t-1} k_t
        for i in range(d_v):
            for j in range(d_k):
                if b is None:  # S_t = α S + v kᵀ
                    S[i][j] = a * S[i][j] + v[t, i] * k[t, j]
                else:  # S_t = α S (I - β k kᵀ) + β v kᵀ, entry (i, j): α (S_ij - β (S k)_i k_j) + β v_i k_j
                    S[i][j] = a * (S[i][j] - b * Sk[i] * k[t, j]) + b * v[t, i] * k[t, j]
        out[t] = [sum(S[i][j] * q[t, j] for j in range(d_k)) for i in range(d_v)]
    return out


def inputs(seed, batch, n, d_k, d_v):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(2, *batch, n, d_k))
    k /= np.linalg.norm(k, axis=-1, keepdims=True)  # the delta rule assumes unit-length keys
    return q, k, rng.normal(size=(*batch, n, d_v)), rng


RULES = st.sampled_from(["additive", "decay", "delta", "gated delta"])


def rates(rule, rng, shape):
    beta = rng.uniform(size=shape) if "delta" in rule else None
    decay = rng.uniform(size=shape) if rule in ("decay", "gated delta") else None
    if decay is not None:
        decay[..., rng.integers(shape[-1])] = rng.choice([0.0, 1.0])  # the ends of [0, 1] too
    return beta, decay


@given(rule=RULES, n=st.integers(1, 12), d_k=st.integers(1, 4), d_v=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_recurrence_equals_a_python_loop(rule, n, d_k, d_v, seed):
    q, k, v, rng = inputs(seed, (3,), n, d_k, d_v)
    beta, decay = rates(rule, rng, (3, n))
    got = m.linear_attention(q, k, v, beta=beta, decay=decay)
    for b in range(3):
        ref = python_loop(q[b], k[b], v[b], None if beta is None else beta[b], None if decay is None else decay[b])
        np.testing.assert_allclose(got[b], ref, rtol=1e-10, atol=1e-12)


@given(
    rule=RULES,
    n=st.integers(1, 40),
    chunk=st.integers(1, 50),
    d_k=st.integers(1, 6),
    d_v=st.integers(1, 4),
    batch=st.sampled_from([(), (2,), (2, 3)]),
    seed=st.integers(0, 2**32 - 1),
)
def test_chunked_equals_the_recurrence(rule, n, chunk, d_k, d_v, batch, seed):
    q, k, v, rng = inputs(seed, batch, n, d_k, d_v)
    beta, decay = rates(rule, rng, (*batch, n))
    ref = m.linear_attention(q, k, v, beta=beta, decay=decay)
    got = m.linear_attention(q, k, v, beta=beta, decay=decay, chunk=chunk)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-11)


def test_additive_rule_is_causal_attention_without_softmax():
    q, k, v, _ = inputs(0, (2,), 9, 4, 3)
    ref = (q @ k.swapaxes(-1, -2) * m.causal_mask(9)) @ v  # (Q Kᵀ ⊙ causal) V
    np.testing.assert_allclose(m.linear_attention(q, k, v), ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(m.linear_attention(q, k, v, chunk=4), ref, rtol=1e-12, atol=1e-14)


def test_decay_is_causal_attention_with_a_decay_mask():
    # With scalar decays, o_t = sum_{s<=t} (prod_{r=s+1..t} α_r) (q_t·k_s) v_s: a decayed causal mask.
    q, k, v, rng = inputs(1, (), 7, 3, 2)
    a = rng.uniform(0.5, 1, size=7)
    D = np.array([[np.prod(a[s + 1 : t + 1]) if s <= t else 0.0 for s in range(7)] for t in range(7)])
    np.testing.assert_allclose(m.linear_attention(q, k, v, decay=a), (q @ k.T * D) @ v, rtol=1e-12)


def test_delta_rule_with_beta_one_recalls_the_latest_value_for_a_key():
    # Orthonormal keys, β = 1: writing key 0 twice replaces its value instead of adding to it.
    k = np.eye(3)[[0, 1, 0]]  # keys e0, e1, e0
    v = np.array([[1.0], [2.0], [5.0]])
    q = np.eye(3)[[0, 0, 0]]  # every step reads key e0
    delta = m.linear_attention(q, k, v, beta=np.ones(3))
    additive = m.linear_attention(q, k, v)
    assert delta[:, 0].tolist() == [1.0, 1.0, 5.0] and additive[:, 0].tolist() == [1.0, 1.0, 6.0]


BAD = {
    "beta above 1": ("beta", lambda q: m.linear_attention(q, q, q, beta=np.full(5, 1.5))),
    "beta negative": ("beta", lambda q: m.linear_attention(q, q, q, beta=np.full(5, -0.1))),
    "beta NaN": ("beta", lambda q: m.linear_attention(q, q, q, beta=np.full(5, np.nan))),
    "beta shape": ("beta", lambda q: m.linear_attention(q, q, q, beta=np.full(4, 0.5))),
    "decay above 1": ("decay", lambda q: m.linear_attention(q, q, q, decay=np.full(5, 1.01))),
    "decay inf": ("decay", lambda q: m.linear_attention(q, q, q, decay=np.inf)),
    "k width": ("k", lambda q: m.linear_attention(q, q[:, :2], q)),
    "k length": ("k", lambda q: m.linear_attention(q, q[:4], q)),
    "v length": ("v", lambda q: m.linear_attention(q, q, q[:4])),
    "q NaN": ("q", lambda q: m.linear_attention(np.full((5, 3), np.nan), q, q)),
    "q 1-D": ("q", lambda q: m.linear_attention(q[0], q, q)),
    "chunk zero": ("chunk", lambda q: m.linear_attention(q, q, q, chunk=0)),
}


@pytest.mark.parametrize("name, call", BAD.values(), ids=BAD.keys())
def test_bad_input_names_the_argument(name, call):
    with pytest.raises(ValueError, match=rf"^{name}: expected .*got"):
        call(np.ones((5, 3)))
