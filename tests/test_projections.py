"""MHAParams and init_params: per-head slices, the concatenated projection, seeding, dtype and switching heads off."""

import dataclasses
import math

import numpy as np
import pytest

import mha_lesson as m


def random_params(d_model, h, seed):
    """init_params with random (non-zero) biases, so that bias slicing is actually exercised."""
    rng = np.random.default_rng(seed + 1)
    biases = {n: rng.normal(size=d_model) for n in ("b_q", "b_k", "b_v", "b_o")}
    return dataclasses.replace(m.init_params(d_model, h, seed=seed), **biases)


def test_head_slices_are_the_documented_columns_and_rows():
    p = random_params(12, 3, seed=0)
    for i in range(3):
        cols = slice(4 * i, 4 * (i + 1))
        np.testing.assert_array_equal(p.w_q_head(i), p.w_q[:, cols])
        np.testing.assert_array_equal(p.w_k_head(i), p.w_k[:, cols])
        np.testing.assert_array_equal(p.w_v_head(i), p.w_v[:, cols])
        np.testing.assert_array_equal(p.w_o_head(i), p.w_o[cols, :])
        for name in ("b_q", "b_k", "b_v"):
            np.testing.assert_array_equal(p.b_head(name, i), getattr(p, name)[cols])
    assert m.init_params(12, 3).b_head("b_q", 0) is None


def test_one_wide_projection_equals_the_h_per_head_projections_side_by_side():
    p = random_params(12, 4, seed=1)
    x = np.random.default_rng(2).normal(size=(2, 5, 12))
    Q = m.split_heads(x @ p.w_q + p.b_q, p.h)  # (2, h, 5, d_k)
    for i in range(p.h):
        np.testing.assert_allclose(Q[:, i], x @ p.w_q_head(i) + p.b_head("b_q", i), rtol=0, atol=1e-12)


def test_init_params_is_seeded_glorot_uniform():
    a, b, c = m.init_params(16, 4, seed=7), m.init_params(16, 4, seed=7), m.init_params(16, 4, seed=8)
    bound = math.sqrt(6 / (16 + 16))
    for name, w in a.arrays().items():
        np.testing.assert_array_equal(w, b.arrays()[name])
        assert not np.array_equal(w, c.arrays()[name])
        assert w.shape == (16, 16) and w.dtype == np.float64
        assert np.abs(w).max() <= bound
        assert np.abs(w).max() > 0.8 * bound  # 256 draws from U(-a, a) come close to the bound
    # The four matrices are different draws, not one matrix reused.
    assert len({a.w_q.tobytes(), a.w_k.tobytes(), a.w_v.tobytes(), a.w_o.tobytes()}) == 4


def test_init_params_biases_start_at_zero_and_dtype_is_respected():
    p = m.init_params(8, 2, bias=True, dtype=np.float32)
    assert p.has_bias and not m.init_params(8, 2).has_bias
    assert set(p.arrays()) == {"w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o"}
    assert set(m.init_params(8, 2).arrays()) == {"w_q", "w_k", "w_v", "w_o"}
    assert all(a.dtype == np.float32 for a in p.arrays().values())
    assert all(np.all(p.arrays()[n] == 0) for n in ("b_q", "b_k", "b_v", "b_o"))


def test_astype_casts_every_array_and_keeps_values():
    p = random_params(8, 2, seed=3)
    p32 = p.astype(np.float32)
    assert p32.dtype == np.float32 and p32.h == p.h
    for name, a in p32.arrays().items():
        assert a.dtype == np.float32
        np.testing.assert_array_equal(a, p.arrays()[name].astype(np.float32))


def test_integer_weights_become_float64():
    eye = np.eye(4, dtype=int)
    p = m.MHAParams(w_q=eye, w_k=eye, w_v=eye, w_o=eye, h=2)
    assert p.dtype == np.float64 and p.d_model == 4 and p.d_k == 2


def test_without_heads_removes_exactly_those_heads_terms():
    p = random_params(12, 3, seed=4)
    x = np.random.default_rng(5).normal(size=(6, 12))
    _, _, trace = m.multi_head_attention_loop(x, x, x, p, return_trace=True)
    for off in ([1], [0, 2], [0, 1, 2]):
        out, _ = m.multi_head_attention(x, x, x, p.without_heads(off))
        kept = [trace["head_i"][i] @ p.w_o_head(i) for i in range(3) if i not in off]
        np.testing.assert_allclose(out, sum(kept, np.zeros_like(out)) + p.b_o, rtol=0, atol=1e-12)
    assert np.abs(p.w_o).min() > 0  # the original is left untouched


@pytest.mark.parametrize("i", [-1, 3, 1.0, True])
def test_head_index_out_of_range_is_refused(i):
    with pytest.raises(ValueError, match=r"^i: expected a head index in \[0, 3\), got"):
        m.init_params(6, 3).w_q_head(i)
