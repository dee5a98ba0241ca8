"""sinusoidal_encoding against the paper's formula written as a loop, its rotation property, and bad input."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mha_lesson.positional import sinusoidal_encoding


def loop_encoding(n, d_model, base=10000.0):
    """Vaswani et al. 3.5, entry by entry: PE(pos, 2i) = sin(pos / base^(2i/d)), PE(pos, 2i+1) = cos(...)."""
    pe = np.zeros((n, d_model))
    for pos in range(n):
        for i in range(d_model // 2):
            angle = pos / base ** (2 * i / d_model)
            pe[pos, 2 * i] = math.sin(angle)
            pe[pos, 2 * i + 1] = math.cos(angle)
    return pe


@given(
    n=st.integers(1, 40),
    half=st.integers(1, 16),
    base=st.sampled_from([10000.0, 100.0, 2.5]),
)
def test_matches_the_formula_entry_by_entry(n, half, base):
    d_model = 2 * half
    np.testing.assert_allclose(sinusoidal_encoding(n, d_model, base=base), loop_encoding(n, d_model, base), atol=1e-12)


def test_first_row_is_sin_0_cos_0_and_values_stay_in_range():
    pe = sinusoidal_encoding(50, 16)
    assert pe.shape == (50, 16) and pe.dtype == np.float64
    np.testing.assert_array_equal(pe[0], np.tile([0.0, 1.0], 8))
    assert np.abs(pe).max() <= 1.0
    # each sin/cos pair is a point on the unit circle
    np.testing.assert_allclose(pe[:, 0::2] ** 2 + pe[:, 1::2] ** 2, 1.0)


def test_float32_dtype_is_kept():
    assert sinusoidal_encoding(4, 8, dtype=np.float32).dtype == np.float32


@given(p=st.integers(0, 30), k=st.integers(-10, 10))
def test_shifting_by_k_is_one_fixed_rotation_whatever_the_position(p, k):
    n, d = 64, 12
    pe = sinusoidal_encoding(n, d)
    speeds = 10000.0 ** (-np.arange(0, d, 2) / d)
    rot = np.zeros((d, d))
    for i, w in enumerate(speeds):
        c, s = math.cos(k * w), math.sin(k * w)
        # (sin(a + kw), cos(a + kw)) = R (sin a, cos a) with R = [[c, s], [-s, c]]
        rot[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    if 0 <= p + k < n:
        np.testing.assert_allclose(pe[p + k], rot @ pe[p], atol=1e-12)


def test_dot_product_depends_only_on_the_offset():
    pe = sinusoidal_encoding(40, 16)
    gram = pe @ pe.T
    for offset in range(-5, 6):
        diag = np.diagonal(gram, offset)
        np.testing.assert_allclose(diag, diag[0], atol=1e-10)
    # and is largest at offset 0 (a position is most similar to itself)
    assert np.all(np.argmax(gram, axis=1) == np.arange(40))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"n": 0, "d_model": 8}, "n"),
        ({"n": True, "d_model": 8}, "n"),
        ({"n": 2.5, "d_model": 8}, "n"),
        ({"n": 4, "d_model": 7}, "d_model"),
        ({"n": 4, "d_model": 0}, "d_model"),
        ({"n": 4, "d_model": 8, "base": 1.0}, "base"),
        ({"n": 4, "d_model": 8, "base": float("nan")}, "base"),
        ({"n": 4, "d_model": 8, "base": "10000"}, "base"),
        ({"n": 4, "d_model": 8, "dtype": np.int32}, "dtype"),
        ({"n": 2**31, "d_model": 1024}, "n"),
    ],
)
def test_bad_input_raises_a_value_error_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name}:"):
        sinusoidal_encoding(**kwargs)
