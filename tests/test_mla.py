"""Multi-head latent attention: the paper's equations head by head, absorbed against explicit, decoding against
the full causal output, the cache's size, and Hugging Face transformers' DeepseekV3Attention (fixture)."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha_lesson as m
from mha_lesson.mla import MLACache, MLAParams, init_mla_params, mla_attention, mla_decode_step

FIXTURE = Path(__file__).parent / "reference" / "deepseek_v3_mla.npz"


def paper_equations(x, p):
    """DeepSeek-V2 eqs. (9)-(19) for one sequence x (n, d_model), one head and one query at a time."""
    n, d_h, d_r = x.shape[0], p.d_head, p.d_rope
    c = x @ p.w_dkv  # (9) the latent
    if p.latent_norm is not None:
        c = m.rms_norm(c, p.latent_norm)
    k_r = m.rope(x @ p.w_kr, base=p.rope_base)  # (14) one RoPE key for all heads
    heads = []
    for i in range(p.h):
        cols = slice(i * d_h, (i + 1) * d_h)
        k_i = np.concatenate([c @ p.w_uk[:, cols], k_r], axis=1)  # (10), (15)
        v_i = c @ p.w_uv[:, cols]  # (11)
        q_r = m.rope(x @ p.w_qr[:, i * d_r : (i + 1) * d_r], base=p.rope_base)  # (13)
        q_i = np.concatenate([x @ p.w_q[:, cols], q_r], axis=1)  # (12), (16)
        o_i = np.zeros((n, d_h))
        for t in range(n):  # (17): query t sees tokens 0..t
            s = k_i[: t + 1] @ q_i[t] / np.sqrt(d_h + d_r)
            w = np.exp(s - s.max())
            o_i[t] = (w / w.sum()) @ v_i[: t + 1]
        heads.append(o_i)
    return np.concatenate(heads, axis=1) @ p.w_o  # (18)


SIZES = st.sampled_from([(8, 1, 3, 2), (8, 2, 4, 2), (12, 3, 2, 4), (16, 4, 6, 4)])  # d_model, h, d_c, d_rope


@given(sizes=SIZES, n=st.integers(1, 10), norm=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_explicit_and_absorbed_equal_the_paper_equations(sizes, n, norm, seed):
    d, h, d_c, d_r = sizes
    rng = np.random.default_rng(seed)
    p = init_mla_params(d, h, d_c, d_r, seed=seed % 1000)
    if norm:
        p = dataclasses.replace(p, latent_norm=rng.uniform(0.5, 2, d_c), rope_base=500.0)
    x = rng.normal(size=(n, d))
    ref = paper_equations(x, p)
    explicit, w_explicit = mla_attention(x, p)
    absorbed, w_absorbed = mla_attention(x, p, absorb=True)
    np.testing.assert_allclose(explicit, ref, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(absorbed, ref, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(w_absorbed, w_explicit, rtol=1e-11, atol=1e-15)
    assert w_explicit.shape == (h, n, n) and (np.triu(w_explicit, 1) == 0).all()


@given(sizes=SIZES, n=st.integers(1, 40), batch=st.sampled_from([(), (2,)]), seed=st.integers(0, 2**32 - 1))
def test_decoding_token_by_token_equals_the_full_causal_output(sizes, n, batch, seed):
    p = init_mla_params(*sizes, seed=seed % 1000)
    x = np.random.default_rng(seed).normal(size=(*batch, n, sizes[0]))
    full, _ = mla_attention(x, p)
    cache = MLACache()
    got = np.stack([mla_decode_step(x[..., t, :], p, cache) for t in range(n)], axis=-2)
    np.testing.assert_allclose(got, full, rtol=1e-11, atol=1e-13)
    # d_c + d_rope numbers per token: the latent and the shared RoPE key, nothing per head.
    assert cache.latents.shape == (*batch, n, sizes[2]) and cache.rope_keys.shape == (*batch, n, sizes[3])


def test_the_cache_is_the_latent_and_the_rope_key():
    p = init_mla_params(8, 2, 3, 2, seed=1)
    x = np.random.default_rng(2).normal(size=(5, 8))
    cache = MLACache()
    for t in range(5):
        mla_decode_step(x[t], p, cache)
    np.testing.assert_allclose(cache.latents, x @ p.w_dkv, rtol=1e-14)
    np.testing.assert_allclose(cache.rope_keys, m.rope(x @ p.w_kr), rtol=1e-13)  # positions 0..4, absolute
    assert len(MLACache()) == 0 and MLACache().latents is None


def test_a_mask_restricts_the_causal_mask_further():
    p = init_mla_params(8, 2, 4, 2, seed=3)
    x = np.random.default_rng(4).normal(size=(6, 8))
    window = m.sliding_window_mask(6, 2)
    for absorb in (False, True):
        _, w = mla_attention(x, p, np.ones((6, 6), bool), absorb=absorb)
        _, w_win = mla_attention(x, p, window, absorb=absorb)
        assert (w_win[:, ~window] == 0).all() and not (w[:, ~window] == 0).all()


def test_matches_hugging_face_deepseek_v3_attention():
    # tests/reference/make_deepseek_v3_fixture.py copies transformers' DeepseekV3Attention weights (no q_lora,
    # interleaved RoPE undone by permuting the RoPE projections' columns) into MLAParams. HF computes the RoPE
    # angles, the latent's RMSNorm and the softmax in float32, hence tolerances near float32's 1e-7.
    with np.load(FIXTURE) as f:
        arrays = {name: f[name] for name in ("w_dkv", "w_uk", "w_uv", "w_kr", "w_q", "w_qr", "w_o", "latent_norm")}
        p = MLAParams(h=int(f["h"]), rope_base=float(f["rope_base"]), **arrays)
        for absorb in (False, True):
            out, weights = mla_attention(f["x"], p, absorb=absorb)
            np.testing.assert_allclose(out, f["out"], rtol=1e-5, atol=2e-6)
            np.testing.assert_allclose(weights, f["weights"], rtol=1e-5, atol=1e-6)


BAD = {
    "d_c zero": ("d_c", lambda: init_mla_params(8, 2, 0, 2)),
    "d_rope odd": ("d_rope", lambda: init_mla_params(8, 2, 4, 3)),
    "d_rope zero": ("d_rope", lambda: init_mla_params(8, 2, 4, 0)),
    "h": ("h", lambda: init_mla_params(8, 3, 4, 2)),
    "w_uk shape": ("w_uk", lambda: dataclasses.replace(init_mla_params(8, 2, 4, 2), w_uk=np.zeros((4, 6)))),
    "w_o NaN": ("w_o", lambda: dataclasses.replace(init_mla_params(8, 2, 4, 2), w_o=np.full((8, 8), np.nan))),
    "latent_norm": ("latent_norm", lambda: dataclasses.replace(init_mla_params(8, 2, 4, 2), latent_norm=np.ones(3))),
    "x width": ("x", lambda: mla_attention(np.zeros((3, 6)), init_mla_params(8, 2, 4, 2))),
    "x NaN": ("x", lambda: mla_attention(np.full((3, 8), np.nan), init_mla_params(8, 2, 4, 2))),
    "params": ("params", lambda: mla_attention(np.zeros((3, 8)), m.init_params(8, 2))),
    "absorb": ("absorb", lambda: mla_attention(np.zeros((3, 8)), init_mla_params(8, 2, 4, 2), absorb="yes")),
    "mask": ("mask", lambda: mla_attention(np.zeros((3, 8)), init_mla_params(8, 2, 4, 2), np.ones((4, 4), bool))),
    "decode x_t": ("x_t", lambda: mla_decode_step(np.zeros(6), init_mla_params(8, 2, 4, 2), MLACache())),
    "decode cache": ("cache", lambda: mla_decode_step(np.zeros(8), init_mla_params(8, 2, 4, 2), m.KVCache())),
}


@pytest.mark.parametrize("name, call", BAD.values(), ids=BAD.keys())
def test_bad_input_names_the_argument(name, call):
    with pytest.raises(ValueError, match=rf"^{name}: expected .*got"):
        call()


def test_decoding_with_other_params_is_refused():
    cache = MLACache()
    mla_decode_step(np.zeros(8), init_mla_params(8, 2, 4, 2), cache)
    with pytest.raises(ValueError, match=r"^params: expected d_c=4 and d_rope=2 like the params that filled the cache"):
        mla_decode_step(np.zeros(8), init_mla_params(8, 2, 6, 2), cache)
    with pytest.raises(ValueError, match=r"^x_t: expected batch shape \(\) like the cached tokens, got \(2, 8\)"):
        mla_decode_step(np.zeros((2, 8)), init_mla_params(8, 2, 4, 2), cache)


CACHE_BAD = {
    "c_t None": ("c_t", lambda c: c.append(None, np.zeros(2))),
    "c_t a string": ("c_t", lambda c: c.append("abc", np.zeros(2))),
    "c_t complex": ("c_t", lambda c: c.append(np.zeros(4) + 1j, np.zeros(2))),
    "c_t NaN": ("c_t", lambda c: c.append(np.full(4, np.nan), np.zeros(2))),
    "c_t empty": ("c_t", lambda c: c.append(np.zeros(0), np.zeros(2))),
    "k_r_t inf": ("k_r_t", lambda c: c.append(np.zeros(4), np.full(2, np.inf))),
    "k_r_t odd": ("k_r_t", lambda c: c.append(np.zeros(4), np.zeros(3))),
    "k_r_t another batch": ("k_r_t", lambda c: c.append(np.zeros((2, 4)), np.zeros((3, 2)))),
}


@pytest.mark.parametrize("name, call", CACHE_BAD.values(), ids=CACHE_BAD.keys())
def test_a_bad_append_names_the_argument_and_stores_nothing(name, call):
    cache = MLACache()
    with pytest.raises(ValueError, match=rf"^{name}: expected .*got"):
        call(cache)
    assert len(cache) == 0 and cache.latents is None


def test_an_append_unlike_the_cached_tokens_is_refused_and_stores_nothing():
    cache = MLACache()
    cache.append(np.full(4, 0.5), np.full(2, 0.25))
    with pytest.raises(ValueError, match=r"^c_t: expected shape \(4,\) like the cached tokens, got \(6,\)"):
        cache.append(np.zeros(6), np.zeros(2))
    with pytest.raises(ValueError, match=r"^k_r_t: expected shape \(2,\) like the cached tokens, got \(4,\)"):
        cache.append(np.zeros(4), np.zeros(4))
    with pytest.raises(ValueError, match=r"^c_t: expected shape \(4,\) like the cached tokens, got \(2, 4\)"):
        cache.append(np.zeros((2, 4)), np.zeros((2, 2)))
    assert len(cache) == 1 and cache.latents.tolist() == [[0.5] * 4] and cache.rope_keys.tolist() == [[0.25] * 2]
