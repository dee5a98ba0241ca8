"""Tiled attention with an online softmax against the standard one, and its peak memory measured by tracemalloc."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mask_sampling import random_mask

import mha_lesson as m
from mha_lesson.measure import peak_bytes
from mha_lesson.tiled import rescale

MiB = 2**20


def top_left_causal(n_q, n_kv):
    """(n_q, n_kv): query i sees keys 0..i, built from the library's causal_mask, cut to the shape."""
    return m.causal_mask(max(n_q, n_kv))[:n_q, :n_kv]


@st.composite
def attention_inputs(draw):
    """Random q, k, v (batched or not, self or cross), a block size, causal or not, and a mask or None."""
    lead_q, lead_kv = draw(st.sampled_from([((), ()), ((2,), (2,)), ((2,), ()), ((), (3,)), ((2, 1), (3,))]))
    n_q, n_kv = draw(st.integers(1, 9)), draw(st.integers(0, 12))
    d_k, d_v = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    block, causal = draw(st.integers(1, 14)), draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([1.0, 30.0]))  # 30: scores in the hundreds, where an unshifted exp overflows
    q = scale * rng.normal(size=(*lead_q, n_q, d_k))
    k, v = rng.normal(size=(*lead_kv, n_kv, d_k)), rng.normal(size=(*lead_kv, n_kv, d_v))
    lead = np.broadcast_shapes(lead_q, lead_kv)
    mask = random_mask(rng, (*lead, n_q, n_kv)) if draw(st.booleans()) and n_kv else None
    return q, k, v, block, causal, mask


@given(attention_inputs())
def test_tiled_equals_standard_attention(inputs):
    q, k, v, block, causal, mask = inputs
    combined = mask
    if causal:
        c = top_left_causal(q.shape[-2], k.shape[-2])
        combined = c if mask is None else mask & c
    ref = m.scaled_dot_product_attention(q, k, v, combined)[0]
    got = m.tiled_attention(q, k, v, block=block, causal=causal, mask=mask)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("block", [1, 3, 64, 100, 1000])
def test_block_sizes_that_do_not_divide_n(block):
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(2, 3, 37, 8)), rng.normal(size=(2, 3, 100, 8)), rng.normal(size=(2, 3, 100, 5))
    ref = m.scaled_dot_product_attention(q, k, v)[0]
    np.testing.assert_allclose(m.tiled_attention(q, k, v, block=block), ref, rtol=0, atol=1e-12)


def test_causal_self_attention_and_a_fully_masked_row():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 50, 16))
    mask = np.ones((50, 50), bool)
    mask[7] = False  # query 7 may attend to nothing: zero output, as the standard version gives
    got = m.tiled_attention(x, x, x, block=8, causal=True, mask=mask)
    ref = m.scaled_dot_product_attention(x, x, x, m.causal_mask(50) & mask)[0]
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    assert np.all(got[:, 7] == 0)


def test_causal_cross_attention_is_aligned_at_the_first_key():
    rng = np.random.default_rng(3)
    q, kv = rng.normal(size=(3, 8)), rng.normal(size=(6, 8))
    got = m.tiled_attention(q, kv, kv, block=2, causal=True)
    # By hand: query i is a softmax over keys 0..i only.
    for i in range(3):
        s = kv[: i + 1] @ q[i] / np.sqrt(8)
        w = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
        np.testing.assert_allclose(got[i], w @ kv[: i + 1], rtol=0, atol=1e-12)


def test_float32_stays_float32_and_close():
    rng = np.random.default_rng(4)
    q, k, v = (rng.normal(size=(300, 16)).astype(np.float32) for _ in range(3))
    got = m.tiled_attention(q, k, v, block=64)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, m.scaled_dot_product_attention(q, k, v)[0], rtol=0, atol=1e-5)


def test_rescaling_two_blocks_by_hand():
    # Row scores [1, 2 | 5, 3] in two blocks. After block 1: max 2, sum e^-1 + e^0, out e^-1*v0 + e^0*v1.
    # Block 2 raises the max to 5: both sums are multiplied by e^(2-5), then block 2's terms are added.
    s, v = np.array([1.0, 2.0, 5.0, 3.0]), np.array([[1.0], [10.0], [100.0], [1000.0]])
    row_sum, out = np.array([[np.exp(-1) + 1]]), np.array([[np.exp(-1) * 1 + 10]])
    row_sum, out = rescale(row_sum, out, np.array([[2.0]]), np.array([[5.0]]))
    row_sum += np.exp(0) + np.exp(-2)
    out += np.exp(0) * 100 + np.exp(-2) * 1000
    w = np.exp(s - 5) / np.exp(s - 5).sum()  # the softmax computed in one go
    np.testing.assert_allclose(out / row_sum, [[w @ v[:, 0]]], rtol=1e-14)


def test_peak_memory_tiled_under_64_mib_where_standard_needs_over_256_mib():
    # One head, n = 8192, d_k = 64, float32: the standard version holds the 8192 x 8192 weights (256 MiB);
    # tiled holds one 8192 x 512 block of scores (16 MiB) plus a few (8192, 64) arrays.
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((8192, 64), dtype=np.float32) for _ in range(3))
    tiled = peak_bytes(m.tiled_attention, q, k, v)
    standard = peak_bytes(m.scaled_dot_product_attention, q, k, v)
    assert tiled < 64 * MiB, f"tiled peak {tiled / MiB:.1f} MiB"
    assert standard > 256 * MiB, f"standard peak {standard / MiB:.1f} MiB"


def test_peak_bytes_counts_an_allocation_and_not_what_existed_before():
    kept = np.ones(2**20)  # 8 MiB allocated before the call: not counted
    assert 8 * MiB <= peak_bytes(np.ones, 2**20) < 9 * MiB
    assert peak_bytes(lambda: None) < 64 * 1024
    assert kept.sum() == 2**20


@pytest.mark.parametrize("block", [0, -1, 2.0, True])
def test_block_must_be_a_positive_integer(block):
    x = np.zeros((3, 4))
    with pytest.raises(ValueError, match=r"^block: expected a positive integer, got"):
        m.tiled_attention(x, x, x, block=block)


BAD = {
    "k last dim": ("k", lambda x: m.tiled_attention(x, x[..., :3], x)),
    "v shorter than k": ("v", lambda x: m.tiled_attention(x, x, x[:2])),
    "NaN in q": ("q", lambda x: m.tiled_attention(np.full_like(x, np.nan), x, x)),
    "q 1-D": ("q", lambda x: m.tiled_attention(x[0], x, x)),
    "mask not boolean": ("mask", lambda x: m.tiled_attention(x, x, x, mask=np.ones((3, 3)))),
    "mask does not broadcast": ("mask", lambda x: m.tiled_attention(x, x, x, mask=np.ones((2, 3), bool))),
}


@pytest.mark.parametrize("name, call", BAD.values(), ids=BAD.keys())
def test_the_same_checks_as_scaled_dot_product_attention(name, call):
    with pytest.raises(ValueError, match=rf"^{name}: expected .*got"):
        call(np.zeros((3, 4)))
