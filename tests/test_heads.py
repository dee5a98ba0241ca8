"""split_heads / merge_heads: head i is the column slice i*d_k:(i+1)*d_k, and merging undoes splitting."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import mha_lesson as m


@st.composite
def split_inputs(draw):
    """x (..., n, h*d_k) with random batch shape, and h."""
    lead = draw(st.sampled_from([(), (2,), (2, 3)]))
    n, h, d_k = draw(st.integers(1, 5)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    x = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).normal(size=(*lead, n, h * d_k))
    return x, h


@given(split_inputs())
def test_split_heads_gives_head_i_the_columns_i_dk_to_i_plus_1_dk(inputs):
    x, h = inputs
    d_k = x.shape[-1] // h
    heads = m.split_heads(x, h)
    assert heads.shape == (*x.shape[:-2], h, x.shape[-2], d_k)
    for i in range(h):
        np.testing.assert_array_equal(heads[..., i, :, :], x[..., i * d_k : (i + 1) * d_k])
    assert np.shares_memory(heads, x)  # a view: splitting copies nothing


@given(split_inputs())
def test_merge_heads_undoes_split_heads_and_back(inputs):
    x, h = inputs
    np.testing.assert_array_equal(m.merge_heads(m.split_heads(x, h)), x)
    y = m.split_heads(x, h).copy()  # (..., h, n, d_k)
    np.testing.assert_array_equal(m.split_heads(m.merge_heads(y), h), y)


def test_merge_heads_puts_heads_side_by_side_like_concatenate():
    heads = np.random.default_rng(0).normal(size=(3, 5, 2))  # (h, n, d_k)
    np.testing.assert_array_equal(m.merge_heads(heads), np.concatenate(list(heads), axis=-1))


def test_one_head_is_the_whole_width():
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(m.split_heads(x, 1), x[None])
