"""mha_lesson.encoder against independent computations: math.erf, explicit loops over rows and positions."""

import dataclasses
import math

import numpy as np
import pytest

import mha_lesson as m
from mha_lesson import encoder as enc


@pytest.mark.parametrize(("dtype", "tol"), [(np.float64, 1e-15), (np.float32, 1e-6)])
def test_gelu_matches_the_definition_with_math_erf(dtype, tol):
    x = np.random.default_rng(0).normal(scale=3.0, size=2_000).astype(dtype)
    ref = np.array([v / 2 * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(float)])
    got = enc.gelu(x)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


def test_gelu_at_known_points():
    # GELU(0) = 0; large positive inputs pass through, large negative ones go to 0; GELU(1) = Phi(1).
    got = enc.gelu(np.array([0.0, 40.0, -40.0, 1.0]))
    np.testing.assert_allclose(got, [0.0, 40.0, 0.0, 0.8413447460685429], rtol=1e-15, atol=1e-300)


def _layer_norm_loop(x, gamma, beta, eps):
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        row = [float(v) for v in x[idx]]
        mean = sum(row) / len(row)
        var = sum((v - mean) ** 2 for v in row) / len(row)
        out[idx] = [(v - mean) / math.sqrt(var + eps) * g + b for v, g, b in zip(row, gamma, beta, strict=True)]
    return out


def test_layer_norm_matches_an_explicit_loop_over_rows():
    rng = np.random.default_rng(1)
    x = rng.normal(loc=3.0, scale=2.0, size=(2, 5, 7))
    gamma, beta = rng.normal(size=7), rng.normal(size=7)
    np.testing.assert_allclose(enc.layer_norm(x, gamma, beta, 1e-5), _layer_norm_loop(x, gamma, beta, 1e-5), atol=1e-12)


def test_layer_norm_gives_mean_0_and_variance_1_with_identity_gamma_beta():
    x = np.random.default_rng(2).normal(loc=-4.0, scale=9.0, size=(6, 16)).astype(np.float32)
    y = enc.layer_norm(x, np.ones(16, np.float32), np.zeros(16, np.float32), eps=1e-12)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.mean(axis=-1), 0.0, atol=1e-6)
    np.testing.assert_allclose(y.var(axis=-1), 1.0, atol=1e-5)


def test_layer_norm_names_a_wrong_gamma():
    with pytest.raises(ValueError, match=r"gamma: expected shape \(4,\)"):
        enc.layer_norm(np.zeros((2, 4)), np.ones(3), np.zeros(4))


def _ffn(d_model=8, d_ff=32, seed=3, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return enc.FeedForwardParams(
        w_1=rng.normal(size=(d_model, d_ff)).astype(dtype),
        b_1=rng.normal(size=d_ff).astype(dtype),
        w_2=rng.normal(size=(d_ff, d_model)).astype(dtype),
        b_2=rng.normal(size=d_model).astype(dtype),
    )


def _ffn_loop(x, p):
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        hidden = [sum(x[idx][i] * p.w_1[i, j] for i in range(p.d_model)) + p.b_1[j] for j in range(p.d_ff)]
        act = [v / 2 * (1 + math.erf(v / math.sqrt(2))) for v in hidden]
        out[idx] = [sum(act[j] * p.w_2[j, k] for j in range(p.d_ff)) + p.b_2[k] for k in range(p.d_model)]
    return out


def test_feed_forward_matches_a_loop_over_positions_across_block_edges(monkeypatch):
    p = _ffn()
    x = np.random.default_rng(4).normal(size=(2, 5, 8))
    ref = _ffn_loop(x, p)
    np.testing.assert_allclose(enc.feed_forward(x, p), ref, rtol=1e-12, atol=1e-12)
    monkeypatch.setattr(enc, "FFN_BLOCK_ROWS", 3)  # 10 rows in blocks of 3, 3, 3, 1
    np.testing.assert_allclose(enc.feed_forward(x, p), ref, rtol=1e-12, atol=1e-12)


def test_feed_forward_checks_shapes():
    with pytest.raises(ValueError, match=r"x: expected shape \(\.\.\., d_model=8\)"):
        enc.feed_forward(np.zeros((3, 7)), _ffn())
    with pytest.raises(ValueError, match="w_2: expected shape"):
        enc.FeedForwardParams(w_1=np.zeros((4, 6)), b_1=np.zeros(6), w_2=np.zeros((4, 6)), b_2=np.zeros(4))


def _layer(seed=5, d_model=8, h=2, dtype=np.float64):
    """A layer with every parameter random, so that no term of the computation can hide."""
    rng = np.random.default_rng(seed)
    attn = m.init_params(d_model, h, bias=True, seed=seed, dtype=dtype)
    attn = attn.__class__(
        h=h, **{n: a + rng.normal(scale=0.1, size=a.shape).astype(dtype) for n, a in attn.arrays().items()}
    )
    gamma_1, beta_1, gamma_2, beta_2 = rng.normal(size=(4, d_model)).astype(dtype)
    ffn = _ffn(d_model, 4 * d_model, seed, dtype)
    return enc.EncoderLayerParams(
        attn=attn, ffn=ffn, ln1_gamma=gamma_1, ln1_beta=beta_1, ln2_gamma=gamma_2, ln2_beta=beta_2, eps=1e-6
    )


def test_encoder_layer_is_post_ln_attention_then_feed_forward():
    p = _layer()
    x = np.random.default_rng(6).normal(size=(2, 5, 8))
    mask = m.padding_mask([5, 3], 5)
    attn, w_ref = m.multi_head_attention_loop(x, x, x, p.attn, mask)
    y = _layer_norm_loop(x + attn, p.ln1_gamma, p.ln1_beta, p.eps)
    ref = _layer_norm_loop(y + _ffn_loop(y, p.ffn), p.ln2_gamma, p.ln2_beta, p.eps)
    out, weights = enc.encoder_layer(x, p, mask, need_weights=True)
    np.testing.assert_allclose(out, ref, atol=1e-11)
    np.testing.assert_allclose(weights, w_ref, atol=1e-12)
    assert enc.encoder_layer(x, p, mask)[1] is None


def test_padded_positions_do_not_change_the_real_ones():
    p = _layer(dtype=np.float32)
    x = np.random.default_rng(7).normal(size=(1, 6, 8)).astype(np.float32)
    mask = m.padding_mask([4], 6)
    noisy = x.copy()
    noisy[:, 4:] = 100.0  # garbage in the two padded positions
    a, _ = enc.encoder_layer(x, p, mask)
    b, _ = enc.encoder_layer(noisy, p, mask)
    assert a.dtype == np.float32
    np.testing.assert_allclose(a[:, :4], b[:, :4], atol=1e-6)


def test_without_heads_switches_off_exactly_that_heads_rows_of_w_o():
    p = _layer()
    q = p.without_heads([1])
    np.testing.assert_array_equal(q.attn.w_o[4:], 0.0)
    np.testing.assert_array_equal(q.attn.w_o[:4], p.attn.w_o[:4])
    assert q.ffn is p.ffn


def test_encoder_layer_params_check_widths():
    p = _layer()
    with pytest.raises(ValueError, match=r"ln2_beta: expected shape \(8,\)"):
        enc.EncoderLayerParams(attn=p.attn, ffn=p.ffn, ln1_gamma=p.ln1_gamma, ln1_beta=p.ln1_beta,
                               ln2_gamma=p.ln2_gamma, ln2_beta=np.zeros(7))  # fmt: skip
    with pytest.raises(ValueError, match="ffn: expected d_model=8"):
        enc.EncoderLayerParams(attn=p.attn, ffn=_ffn(6), ln1_gamma=p.ln1_gamma, ln1_beta=p.ln1_beta,
                               ln2_gamma=p.ln2_gamma, ln2_beta=p.ln2_beta)  # fmt: skip
    with pytest.raises(ValueError, match="params: expected an EncoderLayerParams"):
        enc.encoder_layer(np.zeros((2, 8)), p.attn)


def test_init_encoder_layer_is_seeded_and_runs():
    a, b = enc.init_encoder_layer(16, 4, seed=3), enc.init_encoder_layer(16, 4, seed=3)
    assert a.ffn.d_ff == 64
    np.testing.assert_array_equal(a.ffn.w_1, b.ffn.w_1)
    np.testing.assert_array_equal(a.attn.w_q, b.attn.w_q)
    x = np.random.default_rng(0).normal(size=(3, 16))
    out, _ = enc.encoder_layer(x, a)
    np.testing.assert_allclose(out.mean(axis=-1), 0.0, atol=1e-12)  # gamma = 1, beta = 0: plain normalisation


def test_pre_ln_matches_a_hand_computation():
    # Pre-LN (GPT-2): x1 = x + MHA(LN1(x)); out = x1 + FFN(LN2(x1)), with loops for LN, MHA and FFN.
    p = _layer()
    x = np.random.default_rng(8).normal(size=(2, 5, 8))
    mask = m.causal_mask(5)
    y = _layer_norm_loop(x, p.ln1_gamma, p.ln1_beta, p.eps)
    attn, w_ref = m.multi_head_attention_loop(y, y, y, p.attn, mask)
    x1 = x + attn
    ref = x1 + _ffn_loop(_layer_norm_loop(x1, p.ln2_gamma, p.ln2_beta, p.eps), p.ffn)
    out, weights = enc.encoder_layer(x, p, mask, need_weights=True, norm="pre")
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-11)
    np.testing.assert_allclose(weights, w_ref, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(enc.encoder_layer(x, p, mask)[0], enc.encoder_layer(x, p, mask, norm="post")[0])


def test_pre_ln_keeps_an_identity_path_that_post_ln_normalises():
    # Sub-layers that output zero: pre-LN passes x through untouched, post-LN normalises it twice.
    p = _layer()
    zero_attn = dataclasses.replace(p.attn, w_o=np.zeros((8, 8)), b_o=np.zeros(8))
    zero_ffn = dataclasses.replace(p.ffn, w_2=np.zeros_like(p.ffn.w_2), b_2=np.zeros(8))
    q = dataclasses.replace(p, attn=zero_attn, ffn=zero_ffn)
    x = np.random.default_rng(9).normal(loc=3.0, scale=5.0, size=(4, 8))
    np.testing.assert_array_equal(enc.encoder_layer(x, q, norm="pre")[0], x)
    once = _layer_norm_loop(x, p.ln1_gamma, p.ln1_beta, p.eps)
    np.testing.assert_allclose(enc.encoder_layer(x, q)[0], _layer_norm_loop(once, p.ln2_gamma, p.ln2_beta, p.eps),
                               rtol=0, atol=1e-12)  # fmt: skip


def test_norm_must_be_post_or_pre():
    with pytest.raises(ValueError, match=r"^norm: expected 'post' or 'pre', got 'mid'"):
        enc.encoder_layer(np.zeros((2, 8)), _layer(), norm="mid")
