"""rms_norm against its closed form, and QK-norm inside multi-head attention against a per-head loop."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha_lesson as m


@given(
    shape=st.sampled_from([(1,), (5,), (3, 4), (2, 3, 6)]),
    eps=st.sampled_from([1e-6, 1e-2, 1.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_rms_norm_is_x_over_its_root_mean_square(shape, eps, seed):
    rng = np.random.default_rng(seed)
    x, w = rng.normal(scale=5, size=shape), rng.normal(size=shape[-1])
    d = shape[-1]
    for idx in np.ndindex(shape[:-1]):
        row = x[idx]
        rms = np.sqrt(sum(float(a) ** 2 for a in row) / d + eps)  # closed form, one row at a time
        np.testing.assert_allclose(m.rms_norm(x, w, eps)[idx], row / rms * w, rtol=1e-13)
        np.testing.assert_allclose(m.rms_norm(x, eps=eps)[idx], row / rms, rtol=1e-13)


def test_rms_norm_output_has_root_mean_square_one_whatever_the_scale():
    x = np.random.default_rng(0).normal(size=(4, 64))
    for scale in (1e-2, 1.0, 1e3):
        y = m.rms_norm(scale * x, eps=0.0 + 1e-12)
        np.testing.assert_allclose(np.sqrt((y**2).mean(axis=-1)), 1.0, rtol=1e-6)


def test_qk_norm_attention_equals_per_head_normalised_scores():
    rng = np.random.default_rng(1)
    p = m.init_params(12, 3, h_kv=1, seed=2)
    x = rng.normal(size=(2, 5, 12))
    qw, kw = rng.normal(size=4), rng.normal(size=4)
    out, weights = m.multi_head_attention(x, x, x, p, m.causal_mask(5), qk_norm=m.QKNorm(qw, kw, eps=1e-5))
    heads = []
    for i in range(3):
        q_i = m.rms_norm(x @ p.w_q_head(i), qw, 1e-5)  # (2, 5, 4)
        k_i = m.rms_norm(x @ p.w_k_head(i), kw, 1e-5)
        w_i = m.softmax(np.where(m.causal_mask(5), q_i @ k_i.swapaxes(-1, -2) / 2.0, -np.inf))  # √d_k = 2
        np.testing.assert_allclose(weights[:, i], w_i, rtol=1e-12)
        heads.append(w_i @ (x @ p.w_v_head(i)))
    np.testing.assert_allclose(out, np.concatenate(heads, axis=-1) @ p.w_o, rtol=1e-12, atol=1e-14)


def test_qk_norm_bounds_the_scores_whatever_the_weight_scale():
    # Without the norm, scaling W^Q and W^K by 10 multiplies scores by 100 and saturates the softmax; with it,
    # the weights do not change at all.
    p = m.init_params(8, 2, seed=3)
    x = np.random.default_rng(4).normal(size=(6, 8))
    big = m.MHAParams(w_q=10 * p.w_q, w_k=10 * p.w_k, w_v=p.w_v, w_o=p.w_o, h=2)
    _, w_small = m.multi_head_attention(x, x, x, p, qk_norm=m.QKNorm(eps=1e-12))
    _, w_big = m.multi_head_attention(x, x, x, big, qk_norm=m.QKNorm(eps=1e-12))
    np.testing.assert_allclose(w_big, w_small, rtol=1e-9)
    _, w_plain = m.multi_head_attention(x, x, x, big)
    assert w_plain.max() > 0.99 > w_small.max()


BAD = {
    "rms NaN": ("x", lambda: m.rms_norm(np.array([1.0, np.nan]))),
    "rms weight shape": ("weight", lambda: m.rms_norm(np.ones((2, 3)), np.ones(2))),
    "rms eps zero": ("eps", lambda: m.rms_norm(np.ones(3), eps=0.0)),
    "rms eps NaN": ("eps", lambda: m.rms_norm(np.ones(3), eps=np.nan)),
    "qk_norm eps": ("eps", lambda: m.QKNorm(eps=-1.0)),
    "qk_norm type": (
        "qk_norm",
        lambda: m.multi_head_attention(
            np.ones((2, 8)), np.ones((2, 8)), np.ones((2, 8)), m.init_params(8, 2), qk_norm=1e-6
        ),
    ),
    "qk_norm q_weight": (
        "qk_norm.q_weight",
        lambda: m.multi_head_attention(
            np.ones((2, 8)), np.ones((2, 8)), np.ones((2, 8)), m.init_params(8, 2), qk_norm=m.QKNorm(np.ones(8))
        ),
    ),
    "head_rms_norm h": ("h", lambda: m.head_rms_norm(np.ones((2, 8)), 3)),
}


@pytest.mark.parametrize("name, call", BAD.values(), ids=BAD.keys())
def test_bad_input_names_the_argument(name, call):
    with pytest.raises(ValueError, match=rf"^{name}: expected .*got"):
        call()
