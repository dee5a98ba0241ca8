"""Grouped-query attention (h_kv key/value heads shared by h query heads) against PyTorch, the loop, and counts."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mask_sampling import random_mask
from torch_cases import case_params, read_cases

import mha_lesson as m
from mha_lesson.cost import param_count

FIXTURE = Path(__file__).parent / "reference" / "torch_gqa.npz"
DATA = read_cases(FIXTURE)
CASES = sorted(DATA)
IMPLEMENTATIONS = {"batched": m.multi_head_attention, "loop": m.multi_head_attention_loop}


def load(case):
    """(q, k, v, params, mask or None, torch's output) of one case saved by make_gqa_fixture.py."""
    f = DATA[case]
    return f["q"], f["k"], f["v"], case_params(f), f.get("mask"), f["out"]


def test_fixture_covers_h_kv_1_2_and_h():
    h_kvs = {int(DATA[c]["h_kv"]) for c in CASES}
    assert h_kvs == {1, 2, 4} and {int(DATA[c]["h"]) for c in CASES} == {4}
    assert any(DATA[c]["q"].shape != DATA[c]["k"].shape for c in CASES)  # a cross-attention case
    assert FIXTURE.stat().st_size < 200 * 1024


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("case", CASES)
def test_matches_torch_sdpa_with_enable_gqa(case, impl):
    q, k, v, p, mask, out = load(case)
    ours, _ = IMPLEMENTATIONS[impl](q, k, v, p, mask)
    assert ours.shape == out.shape
    np.testing.assert_allclose(ours, out, rtol=0, atol=1e-12)


@st.composite
def gqa_inputs(draw):
    """Random params with h_kv | h, random biases, self or cross input, batched or not, a mask or None."""
    h, d_k = draw(st.sampled_from([1, 2, 3, 4, 6])), draw(st.integers(1, 3))
    h_kv = draw(st.sampled_from([g for g in range(1, h + 1) if h % g == 0]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    p = m.init_params(h * d_k, h, h_kv=h_kv, seed=seed)
    p = dataclasses.replace(p, **{"b" + w[1:]: rng.normal(size=getattr(p, w).shape[1]) for w in ("w_q", "w_k", "w_v")})
    lead = draw(st.sampled_from([(), (2,)]))
    n_q, n_kv = draw(st.integers(1, 5)), draw(st.integers(1, 6))
    q, k = rng.normal(size=(*lead, n_q, h * d_k)), rng.normal(size=(*lead, n_kv, h * d_k))
    mask = random_mask(rng, (*lead, h, n_q, n_kv)) if draw(st.booleans()) else None
    return q, k, p, mask


@given(gqa_inputs())
def test_batched_matches_the_loop_over_heads(inputs):
    q, k, p, mask = inputs
    out, weights = m.multi_head_attention(q, k, k, p, mask)
    out_loop, weights_loop = m.multi_head_attention_loop(q, k, k, p, mask)
    np.testing.assert_allclose(out, out_loop, rtol=0, atol=1e-12)
    np.testing.assert_allclose(weights, weights_loop, rtol=0, atol=1e-12)


def test_a_group_shares_keys_and_values_but_its_maps_differ():
    p = m.init_params(16, 4, h_kv=2, seed=0)  # heads 0, 1 read kv head 0; heads 2, 3 read kv head 1
    x = np.random.default_rng(1).normal(size=(6, 16))
    _, weights, trace = m.multi_head_attention_loop(x, x, x, p, return_trace=True)
    np.testing.assert_array_equal(trace["K_i"][0], trace["K_i"][1])
    np.testing.assert_array_equal(trace["V_i"][2], trace["V_i"][3])
    assert not np.allclose(trace["K_i"][1], trace["K_i"][2])
    assert np.abs(weights[0] - weights[1]).max() > 0.01  # their own queries: different attention maps


def test_head_slices_follow_the_group():
    p = m.init_params(24, 6, h_kv=2, bias=True, seed=2)  # d_k 4, group size 3
    assert p.w_k.shape == p.w_v.shape == (24, 8) and p.b_k.shape == (8,) and p.group_size == 3
    for i in range(6):
        cols = slice(4 * (i // 3), 4 * (i // 3 + 1))
        np.testing.assert_array_equal(p.w_k_head(i), p.w_k[:, cols])
        np.testing.assert_array_equal(p.w_v_head(i), p.w_v[:, cols])
        np.testing.assert_array_equal(p.b_head("b_k", i), p.b_k[cols])
        np.testing.assert_array_equal(p.w_q_head(i), p.w_q[:, 4 * i : 4 * i + 4])


def test_h_kv_defaults_to_h_and_keeps_init_params_unchanged():
    p, q = m.init_params(16, 4, seed=3), m.init_params(16, 4, h_kv=4, seed=3)
    assert p.h_kv == 4 and p.group_size == 1
    assert all(np.array_equal(a, q.arrays()[n]) for n, a in p.arrays().items())
    assert m.MHAParams(w_q=p.w_q, w_k=p.w_k, w_v=p.w_v, w_o=p.w_o, h=4).h_kv == 4
    assert p.astype(np.float32).h_kv == 4 and m.init_params(16, 4, h_kv=1).astype(np.float32).h_kv == 1


@pytest.mark.parametrize(("d_model", "h", "h_kv"), [(16, 4, 1), (16, 4, 2), (16, 4, 4), (4096, 32, 8), (24, 6, 3)])
@pytest.mark.parametrize("bias", [False, True])
def test_param_count_matches_the_arrays(d_model, h, h_kv, bias):
    p = m.init_params(d_model, h, h_kv=h_kv, bias=bias) if d_model < 1000 else None
    d_k = d_model // h
    expected = 2 * d_model**2 + 2 * d_model * h_kv * d_k + ((2 * d_model + 2 * h_kv * d_k) if bias else 0)
    assert param_count(d_model, h, bias=bias, h_kv=h_kv) == expected
    if p is not None:
        assert param_count(d_model, h, bias=bias, h_kv=h_kv) == sum(a.size for a in p.arrays().values())


def test_multi_query_attention_saves_most_of_w_k_and_w_v():
    # Llama-2-70B-like layer: d_model 8192, 64 query heads, 8 key/value heads.
    full, grouped = param_count(8192, 64), param_count(8192, 64, h_kv=8)
    assert full - grouped == 2 * 8192 * (8192 - 8 * 128)


BAD = {
    "h_kv does not divide h": ("h_kv", lambda: m.init_params(16, 4, h_kv=3)),
    "h_kv zero": ("h_kv", lambda: m.init_params(16, 4, h_kv=0)),
    "h_kv larger than h": ("h_kv", lambda: m.init_params(16, 4, h_kv=8)),
    "params h_kv": ("h_kv", lambda: dataclasses.replace(m.init_params(16, 4), h_kv=3)),
    "param_count h_kv": ("h_kv", lambda: param_count(16, 4, h_kv=3)),
    "w_k of the wrong width": ("w_k", lambda: dataclasses.replace(m.init_params(16, 4), h_kv=2)),
    "b_k of the wrong length": ("b_k", lambda: dataclasses.replace(m.init_params(16, 4, h_kv=2), b_k=np.zeros(16))),
}


@pytest.mark.parametrize("name, call", BAD.values(), ids=BAD.keys())
def test_bad_input_names_the_argument(name, call):
    with pytest.raises(ValueError, match=rf"^{name}: expected .*got"):
        call()


def test_the_h_kv_message_lists_the_divisors():
    with pytest.raises(ValueError, match=r"^h_kv: expected a divisor of h=4, .* \(one of 1, 2, 4\), got h_kv=3$"):
        m.init_params(16, 4, h_kv=3)
