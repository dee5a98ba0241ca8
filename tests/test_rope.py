"""RoPE's rotations (relative positions, norms, the half-split pairing) and sliding-window masks with their reach."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha_lesson as m
from mha_lesson.rope import rope_angles


@given(
    d_half=st.integers(1, 8),
    m_pos=st.integers(0, 500),
    n_pos=st.integers(0, 500),
    shift=st.integers(-200, 200),
    seed=st.integers(0, 2**32 - 1),
)
def test_score_depends_only_on_the_offset(d_half, m_pos, n_pos, shift, seed):
    q, k = np.random.default_rng(seed).normal(size=(2, 1, 2 * d_half))
    # Both positions moved by the same shift: the offset n - m, and so the score, stays the same.
    score = (m.rope(q, [m_pos]) @ m.rope(k, [n_pos]).T).item()
    moved = (m.rope(q, [m_pos + shift]) @ m.rope(k, [n_pos + shift]).T).item()
    assert abs(score - moved) < 1e-9 * (1 + abs(score))


def test_score_at_every_pair_of_positions_is_a_function_of_m_minus_n():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 1, 16))
    n = 12
    s = m.rope(np.repeat(q, n, 0)) @ m.rope(np.repeat(k, n, 0)).T  # (n, n): query at m, key at n
    for offset in range(-n + 1, n):
        diagonal = np.diagonal(s, offset)
        np.testing.assert_allclose(diagonal, diagonal[0], rtol=0, atol=1e-12)
    # and the score does change with the offset: positions are really there
    assert np.ptp([np.diagonal(s, o)[0] for o in range(-n + 1, n)]) > 0.1


@given(shape=st.sampled_from([(5, 2), (3, 7, 8), (2, 2, 4, 6)]), seed=st.integers(0, 2**32 - 1))
def test_rotation_preserves_norms(shape, seed):
    x = np.random.default_rng(seed).normal(size=shape)
    np.testing.assert_allclose(np.linalg.norm(m.rope(x), axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-13)


def test_half_split_pairing_by_hand():
    # d_k = 4: pairs (0, 2) at frequency 1 and (1, 3) at frequency 10000^(-1/2) = 0.01.
    x = np.array([[1.0, 2.0, 3.0, 4.0]])
    got = m.rope(x, positions=[5])[0]
    a, b = 5.0, 5.0 * 0.01
    expected = [
        1 * np.cos(a) - 3 * np.sin(a),
        2 * np.cos(b) - 4 * np.sin(b),
        3 * np.cos(a) + 1 * np.sin(a),
        4 * np.cos(b) + 2 * np.sin(b),
    ]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(m.rope(x), m.rope(x, positions=[0]))
    np.testing.assert_array_equal(m.rope(x, positions=[0]), x)  # position 0: no rotation


def test_angles_match_the_hugging_face_llama_inverse_frequencies():
    # inv_freq = 1 / base^(arange(0, d, 2) / d), as in transformers' LlamaRotaryEmbedding.
    d = 8
    expected = 1.0 / 10000.0 ** (np.arange(0, d, 2) / d)
    np.testing.assert_allclose(rope_angles(np.array([1.0]), d)[0], expected, rtol=1e-15)
    np.testing.assert_allclose(rope_angles(np.array([3.0]), d, base=500.0)[0], 3 / 500.0 ** (np.arange(0, d, 2) / d))


def test_batched_positions_and_float32():
    x = np.random.default_rng(1).normal(size=(2, 3, 4)).astype(np.float32)
    got = m.rope(x, positions=np.array([[0, 1, 2], [10, 11, 12]]))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got[1], m.rope(x[1], positions=[10, 11, 12]), rtol=1e-6)
    np.testing.assert_allclose(got[0], m.rope(x[0]), rtol=1e-6)


def test_sliding_window_mask_by_hand():
    expected = np.array(
        [
            [1, 0, 0, 0, 0],
            [1, 1, 0, 0, 0],
            [1, 1, 1, 0, 0],
            [0, 1, 1, 1, 0],
            [0, 0, 1, 1, 1],
        ],
        bool,
    )
    np.testing.assert_array_equal(m.sliding_window_mask(5, 3), expected)
    np.testing.assert_array_equal(m.sliding_window_mask(6, 6), m.causal_mask(6))  # a window of n is causal
    np.testing.assert_array_equal(m.sliding_window_mask(4, 1), np.eye(4, dtype=bool))


@pytest.mark.parametrize(("n", "window"), [(1, 1), (10, 3), (64, 8), (7, 20)])
def test_sliding_window_costs_about_n_times_window_pairs(n, window):
    mask = m.sliding_window_mask(n, window)
    w = min(window, n)
    assert mask.sum() == n * w - w * (w - 1) // 2  # the first w-1 queries have fewer keys than the window
    assert (mask.sum(axis=1) <= window).all()


@pytest.mark.parametrize("window", [1, 2, 3, 5])
def test_receptive_field_grows_by_window_minus_1_per_layer(window):
    n = 40
    mask = m.sliding_window_mask(n, window)
    for layers in range(1, 5):
        reach = m.receptive_field(mask, layers)
        # Closed form: after L layers, query i reaches tokens i - L*(window-1) .. i.
        np.testing.assert_array_equal(reach, m.sliding_window_mask(n, layers * (window - 1) + 1))


def test_receptive_field_of_a_causal_mask_is_causal_and_one_layer_is_the_mask():
    causal = m.causal_mask(9)
    np.testing.assert_array_equal(m.receptive_field(causal, 3), causal)
    mask = np.random.default_rng(2).random((6, 6)) < 0.3
    np.testing.assert_array_equal(m.receptive_field(mask, 1), mask)
    # Two layers by brute force: i reaches t through some j with mask[i, j] and mask[j, t].
    two = np.array([[any(mask[i, j] and mask[j, t] for j in range(6)) for t in range(6)] for i in range(6)])
    np.testing.assert_array_equal(m.receptive_field(mask, 2), two)


BAD = {
    "d_k odd": ("x", lambda: m.rope(np.zeros((3, 5)))),
    "x 1-D": ("x", lambda: m.rope(np.zeros(4))),
    "x NaN": ("x", lambda: m.rope(np.full((2, 4), np.nan))),
    "positions wrong length": ("positions", lambda: m.rope(np.zeros((3, 4)), positions=[0, 1])),
    "positions inf": ("positions", lambda: m.rope(np.zeros((2, 4)), positions=[0, np.inf])),
    "base zero": ("base", lambda: m.rope(np.zeros((2, 4)), base=0.0)),
    "window zero": ("window", lambda: m.sliding_window_mask(5, 0)),
    "window negative": ("window", lambda: m.sliding_window_mask(5, -2)),
    "window float": ("window", lambda: m.sliding_window_mask(5, 2.5)),
    "n zero": ("n", lambda: m.sliding_window_mask(0, 2)),
    "layers zero": ("layers", lambda: m.receptive_field(m.causal_mask(3), 0)),
    "mask not boolean": ("mask", lambda: m.receptive_field(np.eye(3), 2)),
    "mask not square": ("mask", lambda: m.receptive_field(np.ones((2, 3), bool), 2)),
}


@pytest.mark.parametrize("name, call", BAD.values(), ids=BAD.keys())
def test_bad_input_names_the_argument(name, call):
    with pytest.raises(ValueError, match=rf"^{name}: expected .*got"):
        call()
