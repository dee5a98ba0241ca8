"""gated_multi_head_attention against the formula, written head by head."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha_lesson as m

FIXTURE = Path(__file__).parent / "reference" / "qwen3_next_gated.npz"


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


@given(
    hk=st.sampled_from([(1, 1), (2, 2), (4, 2), (3, 1)]),
    d_k=st.integers(1, 3),
    n_q=st.integers(1, 5),
    n_kv=st.integers(1, 5),
    bias=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_equals_the_gate_times_each_head_before_w_o(hk, d_k, n_q, n_kv, bias, seed):
    h, h_kv = hk
    d = h * d_k
    rng = np.random.default_rng(seed)
    p = m.init_params(d, h, h_kv=h_kv, seed=seed % 1000)
    q, kv = rng.normal(size=(2, n_q, d)), rng.normal(size=(2, n_kv, d))
    w_gate, b_gate = rng.normal(size=(d, d)), rng.normal(size=d) if bias else None
    out, weights = m.gated_multi_head_attention(q, kv, kv, p, w_gate, b_gate)
    gate = sigmoid(q @ w_gate + (0 if b_gate is None else b_gate))  # (2, n_q, h*d_k)
    total = 0
    for i in range(h):
        cols = slice(i * d_k, (i + 1) * d_k)
        s = (q @ p.w_q_head(i)) @ (kv @ p.w_k_head(i)).swapaxes(-1, -2) / np.sqrt(d_k)
        w_i = np.exp(s - s.max(-1, keepdims=True))
        w_i /= w_i.sum(-1, keepdims=True)
        np.testing.assert_allclose(weights[:, i], w_i, rtol=1e-12)
        head = w_i @ (kv @ p.w_v_head(i))  # (2, n_q, d_k)
        total = total + (gate[..., cols] * head) @ p.w_o_head(i)  # head i's gated block through its rows of W^O
    np.testing.assert_allclose(out, total, rtol=1e-11, atol=1e-13)


def test_an_open_gate_is_plain_attention_and_a_closed_one_silences_the_layer():
    rng = np.random.default_rng(0)
    p = m.init_params(8, 2, bias=True, seed=1)
    x = rng.normal(size=(5, 8))
    plain, _ = m.multi_head_attention(x, x, x, p)
    w = np.zeros((8, 8))
    opened, _ = m.gated_multi_head_attention(x, x, x, p, w, np.full(8, 60.0))
    np.testing.assert_allclose(opened, plain, rtol=1e-12, atol=1e-14)
    closed, _ = m.gated_multi_head_attention(x, x, x, p, w, np.full(8, -800.0))
    np.testing.assert_allclose(closed, np.broadcast_to(p.b_o, (5, 8)), atol=0)  # only W^O's bias is left


def test_the_gate_breaks_the_linear_collapse_of_w_v_w_o():
    # One key: attention weight 1, so ungated MHA is x -> x W^V W^O, linear in the value input; gated it is not.
    p = m.init_params(4, 1, seed=2)
    w_gate = np.random.default_rng(3).normal(size=(4, 4))
    x = np.random.default_rng(4).normal(size=(1, 4))
    f = lambda z: m.gated_multi_head_attention(z, z, z, p, w_gate)[0]  # noqa: E731
    g = lambda z: m.multi_head_attention(z, z, z, p)[0]  # noqa: E731
    np.testing.assert_allclose(g(2 * x), 2 * g(x), rtol=1e-13)
    assert not np.allclose(f(2 * x), 2 * f(x))


def test_matches_hugging_face_qwen3_next_gated_attention():
    # tests/reference/make_qwen3_next_fixture.py: transformers' Qwen3NextAttention (q_proj emits each head's query
    # and gate side by side; QK-norm scales by 1 + weight; grouped keys; biases; RoPE off), weights copied into our
    # conventions. HF runs the RMSNorm and the softmax in float32, hence tolerances near float32's 1e-7.
    with np.load(FIXTURE) as f:
        names = ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")
        p = m.MHAParams(h=int(f["h"]), h_kv=int(f["h_kv"]), **{n: f[n] for n in names})
        norm = m.QKNorm(f["q_norm"], f["k_norm"], eps=float(f["eps"]))
        x, causal = f["x"], m.causal_mask(f["x"].shape[-2])
        out, _ = m.gated_multi_head_attention(x, x, x, p, f["w_gate"], f["b_gate"], causal, qk_norm=norm)
        np.testing.assert_allclose(out, f["out"], rtol=1e-5, atol=2e-6)
        # Without the gate or without QK-norm the layer is another function: the fixture tells them apart.
        ungated, _ = m.multi_head_attention(x, x, x, p, causal, qk_norm=norm)
        unnormed, _ = m.gated_multi_head_attention(x, x, x, p, f["w_gate"], f["b_gate"], causal)
        assert np.abs(ungated - f["out"]).max() > 0.1 and np.abs(unnormed - f["out"]).max() > 0.1


BAD = {
    "w_gate shape": ("w_gate", lambda p, x: m.gated_multi_head_attention(x, x, x, p, np.ones((8, 4)))),
    "w_gate NaN": ("w_gate", lambda p, x: m.gated_multi_head_attention(x, x, x, p, np.full((8, 8), np.nan))),
    "b_gate shape": ("b_gate", lambda p, x: m.gated_multi_head_attention(x, x, x, p, np.ones((8, 8)), np.ones(4))),
    "b_gate inf": (
        "b_gate",
        lambda p, x: m.gated_multi_head_attention(x, x, x, p, np.ones((8, 8)), np.full(8, np.inf)),
    ),
    "q width": ("q", lambda p, x: m.gated_multi_head_attention(x[:, :4], x, x, p, np.ones((8, 8)))),
    "params": ("params", lambda p, x: m.gated_multi_head_attention(x, x, x, p.arrays(), np.ones((8, 8)))),
    "mask": ("mask", lambda p, x: m.gated_multi_head_attention(x, x, x, p, np.ones((8, 8)), None, np.ones((3, 3)))),
}


@pytest.mark.parametrize("name, call", BAD.values(), ids=BAD.keys())
def test_bad_input_names_the_argument(name, call):
    with pytest.raises(ValueError, match=rf"^{name}: expected .*got"):
        call(m.init_params(8, 2), np.zeros((5, 8)))
