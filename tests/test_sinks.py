"""attention_with_sink against a softmax over the scores with the sink as one more column, and gpt-oss's sdpa."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha_lesson as m

FIXTURE = Path(__file__).parent / "reference" / "gpt_oss_sinks.npz"


def with_sink_column(q, k, v, sink, mask=None):
    """The definition, spelled out: append the sink logit as column n_kv, softmax, drop that column."""
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (..., n_q, n_kv)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    sink = np.broadcast_to(sink, (*scores.shape[:-1], 1))
    weights = m.softmax(np.concatenate([scores, sink], axis=-1))[..., :-1]  # drop the sink's column
    return weights @ v, weights


@given(
    n_q=st.integers(1, 6),
    n_kv=st.integers(1, 6),
    h=st.integers(1, 3),
    d=st.integers(1, 4),
    per_head=st.booleans(),
    masked=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_equals_softmax_over_the_concatenated_sink_column(n_q, n_kv, h, d, per_head, masked, seed):
    rng = np.random.default_rng(seed)
    q, k, v = rng.normal(size=(h, n_q, d)), rng.normal(size=(h, n_kv, d)), rng.normal(size=(h, n_kv, 3))
    sink = rng.normal(scale=3, size=(h, 1, 1)) if per_head else rng.normal()
    mask = rng.random((h, n_q, n_kv)) < 0.6 if masked else None
    out, weights = m.attention_with_sink(q, k, v, sink, mask)
    ref_out, ref_weights = with_sink_column(q, k, v, sink, mask)
    np.testing.assert_allclose(weights, ref_weights, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-14)
    assert (weights.sum(axis=-1) < 1).all()


def test_a_fully_masked_row_gives_all_weight_to_the_sink_and_outputs_zero():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    mask = np.ones((3, 5), bool)
    mask[1] = False
    out, weights = m.attention_with_sink(q, k, v, 0.5, mask)
    assert (weights[1] == 0).all() and (out[1] == 0).all()
    assert (np.abs(out[[0, 2]]) > 0).all()


def test_a_very_low_sink_is_plain_attention_and_a_very_high_one_silences_the_head():
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 6, 3)), rng.normal(size=(2, 6, 3))
    plain_out, plain_weights = m.scaled_dot_product_attention(q, k, v)
    out, weights = m.attention_with_sink(q, k, v, -1e4)
    np.testing.assert_allclose(weights, plain_weights, rtol=1e-13)
    np.testing.assert_allclose(out, plain_out, rtol=1e-12)
    out, _ = m.attention_with_sink(q, k, v, 1e4)
    assert np.abs(out).max() == 0.0  # e^(score - 1e4) underflows: every row's weight went to the sink


def test_sink_zero_is_softmax_one():
    # softmax_1(x)_j = e^x_j / (1 + sum e^x): the sink logit 0 contributes e^0 = 1.
    scores = np.array([[0.3, -1.2, 2.0]])
    q, k = np.sqrt(np.array([[1.0]])), scores.T  # q kᵀ / √1 = scores
    _, weights = m.attention_with_sink(q, k, np.eye(3), 0.0)
    np.testing.assert_allclose(weights, np.exp(scores) / (1 + np.exp(scores).sum()), rtol=1e-15)


def test_matches_gpt_oss_sdpa():
    # tests/reference/make_gpt_oss_fixture.py runs gpt-oss's own sdpa (gpt_oss/torch/model.py) with sinks:
    # grouped queries, causal mask and, in one case, its sliding window.
    with np.load(FIXTURE) as f:
        cases = sorted({key.split("__")[0] for key in f.files})
        assert len(cases) >= 2
        for case in cases:
            # Theirs: Q (n, h_kv, group, d), K and V (n, h_kv, d), S (h_kv * group,) -> (n, h * d).
            Q, K, V, S = (f[f"{case}__{name}"] for name in ("Q", "K", "V", "S"))
            n, h_kv, group, d = Q.shape
            h = h_kv * group
            q = Q.reshape(n, h, d).transpose(1, 0, 2)  # (h, n, d): head kv*group + j, as their S is ordered
            k = np.repeat(K.transpose(1, 0, 2), group, axis=0)  # (h, n, d)
            v = np.repeat(V.transpose(1, 0, 2), group, axis=0)
            window = int(f[f"{case}__sliding_window"])
            mask = m.sliding_window_mask(n, window) if window else m.causal_mask(n)
            out, _ = m.attention_with_sink(q, k, v, S[:, None, None], mask)
            got = out.transpose(1, 0, 2).reshape(n, h * d)  # (n, h*d) like theirs
            np.testing.assert_allclose(got, f[f"{case}__out"], rtol=1e-12, atol=1e-13, err_msg=case)


BAD = {
    "NaN sink": ("sink", lambda q: m.attention_with_sink(q, q, q, np.nan)),
    "inf sink": ("sink", lambda q: m.attention_with_sink(q, q, q, np.full((2, 1, 1), np.inf))),
    "sink per key": ("sink", lambda q: m.attention_with_sink(q, q, q, np.zeros((2, 5, 5)))),
    "sink string": ("sink", lambda q: m.attention_with_sink(q, q, q, "high")),
    "k width": ("k", lambda q: m.attention_with_sink(q, q[..., :2], q, 0.0)),
    "v rows": ("v", lambda q: m.attention_with_sink(q, q, q[:, :3], 0.0)),
    "mask": ("mask", lambda q: m.attention_with_sink(q, q, q, 0.0, np.ones((5, 4), bool))),
}


@pytest.mark.parametrize("name, call", BAD.values(), ids=BAD.keys())
def test_bad_input_names_the_argument(name, call):
    with pytest.raises(ValueError, match=rf"^{name}: expected .*got"):
        call(np.zeros((2, 5, 4)))
