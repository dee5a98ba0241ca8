"""Decoding with a KV cache against causal multi-head attention over the whole sequence, and the cache's size."""

import dataclasses
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha_lesson as m
from mha_lesson.cost import kv_cache_bytes
from mha_lesson.kv_cache import KVCache, decode_step


def random_params(d_model, h, h_kv, seed):
    """init_params with random non-zero biases, so that every bias is exercised."""
    p = m.init_params(d_model, h, h_kv=h_kv, seed=seed)
    rng = np.random.default_rng(seed + 1)
    # Bias b_x has one entry per column of w_x: h_kv * d_k for b_k and b_v, d_model for b_q and b_o.
    biases = {"b" + w[1:]: rng.normal(size=getattr(p, w).shape[1]) for w in ("w_q", "w_k", "w_v", "w_o")}
    return dataclasses.replace(p, **biases)


def decode_all(x, p):
    """Feed x (..., n, d_model) one token at a time; stack the outputs to (..., n, d_model)."""
    cache = KVCache()
    return np.stack([decode_step(x[..., t, :], p, cache) for t in range(x.shape[-2])], axis=-2), cache


@given(
    hk=st.sampled_from([(1, 1), (2, 1), (2, 2), (4, 1), (4, 2), (4, 4), (6, 3)]),
    d_k=st.integers(1, 3),
    n=st.integers(1, 40),  # past 16 tokens the cache doubles its arrays at least once
    batch=st.sampled_from([(), (3,)]),
    seed=st.integers(0, 2**32 - 1),
)
def test_token_by_token_equals_causal_multi_head_attention(hk, d_k, n, batch, seed):
    h, h_kv = hk
    p = random_params(h * d_k, h, h_kv, seed)
    x = np.random.default_rng(seed).normal(size=(*batch, n, h * d_k))
    ref, _ = m.multi_head_attention(x, x, x, p, m.causal_mask(n))
    got, cache = decode_all(x, p)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    assert len(cache) == n and cache.keys.shape == (*batch, h_kv, n, d_k)


def test_the_cache_holds_the_projected_keys_and_values_of_every_token():
    p = random_params(8, 4, 2, seed=0)
    x = np.random.default_rng(1).normal(size=(2, 20, 8))
    _, cache = decode_all(x, p)
    K, V = x @ p.w_k + p.b_k, x @ p.w_v + p.b_v  # (2, 20, h_kv * d_k)
    np.testing.assert_allclose(cache.keys, m.split_heads(K, 2), rtol=0, atol=1e-15)
    np.testing.assert_allclose(cache.values, m.split_heads(V, 2), rtol=0, atol=1e-15)
    assert KVCache().keys is None and len(KVCache()) == 0


def test_the_first_token_attends_only_to_itself():
    # One key: weight 1, so the output is x W^V W^O (+ biases) whatever the query.
    p = random_params(6, 3, 1, seed=2)
    x = np.random.default_rng(3).normal(size=6)
    v = x @ p.w_v + p.b_v  # (d_k,), shared by all three heads
    np.testing.assert_allclose(decode_step(x, p, KVCache()), np.tile(v, 3) @ p.w_o + p.b_o, rtol=0, atol=1e-14)


def test_kv_cache_bytes_of_a_7b_class_model_is_2_gib():
    # 32 layers, d_model 4096, 32 heads (d_k 128), 4,096 tokens, float16: 2 * 32 * 4096 * 32 * 128 * 2 bytes.
    assert kv_cache_bytes(32, 4096, 32, 128, np.float16) == 2 * 2**30
    assert kv_cache_bytes(32, 4096, 8, 128, np.float16, batch=4) == 2 * 2**30  # 4 times fewer kv heads, batch 4


def test_kv_cache_bytes_is_the_size_of_the_cached_arrays():
    p = random_params(12, 6, 2, seed=4)
    _, cache = decode_all(np.zeros((3, 7, 12)), p)
    assert kv_cache_bytes(1, 7, 2, 2, np.float64, batch=3) == cache.keys.nbytes + cache.values.nbytes


BAD = {
    "x_t wrong width": ("x_t", lambda p, c: decode_step(np.zeros(5), p, c)),
    "x_t 3-D": ("x_t", lambda p, c: decode_step(np.zeros((1, 1, 8)), p, c)),
    "x_t NaN": ("x_t", lambda p, c: decode_step(np.full(8, np.nan), p, c)),
    "params": ("params", lambda p, c: decode_step(np.zeros(8), p.arrays(), c)),
    "cache": ("cache", lambda p, c: decode_step(np.zeros(8), p, [])),
    "kv_cache_bytes layers": ("layers", lambda p, c: kv_cache_bytes(0, 4, 1, 2, np.float16)),
    "kv_cache_bytes h_kv": ("h_kv", lambda p, c: kv_cache_bytes(1, 4, 1.5, 2, np.float16)),
}


@pytest.mark.parametrize("name, call", BAD.values(), ids=BAD.keys())
def test_bad_input_names_the_argument(name, call):
    with pytest.raises(ValueError, match=rf"^{name}: expected .*got"):
        call(m.init_params(8, 4, h_kv=2), KVCache())


def test_a_token_of_another_batch_shape_is_refused():
    p, cache = m.init_params(8, 4, h_kv=2), KVCache()
    decode_step(np.zeros((2, 8)), p, cache)
    with pytest.raises(ValueError, match=r"^x_t: expected batch shape \(2,\) like the cached tokens, got"):
        decode_step(np.zeros(8), p, cache)


@pytest.mark.parametrize(
    "d_model, h, h_kv, x_width",
    [
        (8, 4, 4, 8),  # other h_kv, same d_k and d_model: x_t fits both
        (16, 4, 2, 16),  # other d_model and d_k, same h_kv: x_t fits the new params
        (16, 4, 2, 8),  # other d_model and d_k, x_t of the old width
        (8, 2, 2, 8),  # other h and d_k, same h_kv and d_model
        (8, 8, 8, 8),  # other h_kv and d_k
    ],
)
def test_decoding_with_other_params_blames_params(d_model, h, h_kv, x_width):
    p, cache = m.init_params(8, 4, h_kv=2), KVCache()  # the cache holds h_kv=2 heads of d_k=2
    decode_step(np.zeros((2, 8)), p, cache)
    with pytest.raises(ValueError, match=r"^params: expected h_kv=2 key/value heads of d_k=2 like the params that"):
        decode_step(np.zeros((2, x_width)), m.init_params(d_model, h, h_kv=h_kv), cache)
    assert len(cache) == 1  # nothing was appended
    # The cache holds keys and values only: params whose keys and values have its shapes fit (other weights, or
    # other query heads sharing them), and decode_step cannot tell.
    decode_step(np.zeros((2, 8)), m.init_params(8, 4, h_kv=2, seed=1), cache)


def window_mask(n, window, sinks):
    """Key j visible to query i iff j <= i and (j < sinks or i - j < window): StreamingLLM's attention pattern."""
    i, j = np.arange(n)[:, None], np.arange(n)
    return (j <= i) & ((j < sinks) | (i - j < window))


@given(
    window=st.integers(1, 6),
    sinks=st.integers(0, 3),
    n=st.integers(1, 30),
    hk=st.sampled_from([(1, 1), (2, 1), (4, 2)]),
    batch=st.sampled_from([(), (2,)]),
    seed=st.integers(0, 2**32 - 1),
)
def test_windowed_cache_equals_attention_with_the_sink_and_window_mask(window, sinks, n, hk, batch, seed):
    h, h_kv = hk
    p = random_params(h * 2, h, h_kv, seed)
    x = np.random.default_rng(seed).normal(size=(*batch, n, h * 2))
    ref, _ = m.multi_head_attention(x, x, x, p, window_mask(n, window, sinks))
    cache = KVCache(window=window, sinks=sinks)
    got = np.stack([decode_step(x[..., t, :], p, cache) for t in range(n)], axis=-2)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    kept = sorted(set(range(min(sinks, n))) | set(range(max(0, n - window), n)))
    assert sorted(cache.positions.tolist()) == kept and len(cache) == len(kept) and cache.seen == n


def test_sinks_zero_is_mistrals_rolling_buffer():
    p = random_params(8, 4, 2, seed=5)
    x = np.random.default_rng(6).normal(size=(20, 8))
    ref, _ = m.multi_head_attention(x, x, x, p, m.sliding_window_mask(20, 4))
    cache = KVCache(window=4)
    np.testing.assert_allclose(np.stack([decode_step(t, p, cache) for t in x]), ref, rtol=0, atol=1e-12)
    # The slots are reused in turn: token 19 sits where token 15 was, slot 3 (19 mod 4).
    assert cache.positions.tolist() == [16, 17, 18, 19]


def test_windowed_cache_memory_stays_constant_as_the_sequence_grows():
    p = random_params(16, 4, 4, seed=7)
    x = np.random.default_rng(8).normal(size=(600, 16))
    sizes = {}
    for name, make in (("windowed", lambda: KVCache(window=8, sinks=4)), ("full", KVCache)):
        cache = make()
        for t in range(100):
            decode_step(x[t], p, cache)
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for t in range(100, 600):
            decode_step(x[t], p, cache)
        sizes[name] = (tracemalloc.get_traced_memory()[0] - before, cache.nbytes)
        tracemalloc.stop()
    # Windowed: 12 tokens' keys and values, 2 * 12 * 16 float64 numbers, however many tokens went through.
    assert sizes["windowed"][1] == 2 * 12 * 16 * 8
    assert sizes["windowed"][0] < 1024
    # The full cache grew from 128 slots to 1024 (doubling): 2 * 896 * 16 * 8 bytes more.
    assert sizes["full"][1] == 2 * 1024 * 16 * 8 and sizes["full"][0] >= 2 * 896 * 16 * 8


def test_no_arguments_keeps_every_token():
    cache = KVCache()
    assert cache.window is None and cache.sinks == 0 and cache.nbytes == 0
    for t in range(40):
        cache.append(np.full((1, 2), t, float), np.full((1, 2), -t, float))
    assert len(cache) == cache.seen == 40 and cache.keys[0, :, 0].tolist() == list(range(40))


APPEND_BAD = {
    "k_t and v_t of different shapes": ("v_t", lambda c: c.append(np.zeros((2, 3)), np.zeros((2, 4)))),
    "1-d keys": ("k_t", lambda c: c.append(np.zeros(3), np.zeros(3))),
    "NaN key": ("k_t", lambda c: c.append(np.full((2, 3), np.nan), np.zeros((2, 3)))),
    "inf value": ("v_t", lambda c: c.append(np.zeros((2, 3)), np.full((2, 3), np.inf))),
    "string key": ("k_t", lambda c: c.append(np.full((2, 3), "a"), np.zeros((2, 3)))),
    "window zero": ("window", lambda c: KVCache(window=0)),
    "window float": ("window", lambda c: KVCache(window=2.5)),
    "sinks negative": ("sinks", lambda c: KVCache(window=4, sinks=-1)),
    "sinks bool": ("sinks", lambda c: KVCache(window=4, sinks=True)),
}


@pytest.mark.parametrize("name, call", APPEND_BAD.values(), ids=APPEND_BAD.keys())
def test_bad_append_or_window_names_the_argument(name, call):
    cache = KVCache()
    with pytest.raises(ValueError, match=rf"^{name}: expected .*got"):
        call(cache)
    assert len(cache) == 0 and cache.keys is None  # nothing was stored
