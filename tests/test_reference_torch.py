"""Agreement with torch.nn.MultiheadAttention, from numbers saved by tests/reference/make_torch_fixture.py."""

from pathlib import Path

import numpy as np
import pytest
from torch_cases import case_params, read_cases

import mha_lesson as m
from mha_lesson.demos.examples import worked_example

FIXTURE = Path(__file__).parent / "reference" / "torch_mha.npz"
DATA = read_cases(FIXTURE)
CASES = sorted(DATA)
IMPLEMENTATIONS = {"batched": m.multi_head_attention, "loop": m.multi_head_attention_loop}


def load(case):
    """(q, k, v, params, mask or None, torch out, torch per-head weights) of one saved case."""
    f = DATA[case]
    return f["q"], f["k"], f["v"], case_params(f), f.get("mask"), f["out"], f["weights"]


def test_fixture_covers_the_cases_the_issue_asks_for():
    assert {"causal_bias", "cross_bias", "single_head", "batched", "no_bias", "key_padding"} <= set(CASES)
    assert {"fully_masked_row", "worked_example"} <= set(CASES)
    assert all(a.dtype in (np.float64, np.bool_) or a.ndim == 0 for f in DATA.values() for a in f.values())
    assert FIXTURE.stat().st_size < 300 * 1024


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("case", [c for c in CASES if c != "fully_masked_row"])
def test_matches_torch(case, impl):
    q, k, v, p, mask, out, weights = load(case)
    ours, ours_w = IMPLEMENTATIONS[impl](q, k, v, p, mask)
    assert ours.shape == out.shape and ours_w.shape == weights.shape
    assert np.abs(ours - out).max() < 1e-10
    assert np.abs(ours_w - weights).max() < 1e-10


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_a_query_with_no_allowed_key_is_nan_in_torch_and_zero_weights_here(impl):
    q, k, v, p, mask, out, weights = load("fully_masked_row")
    empty = ~mask.any(-1)  # (n_q,): the one query that may attend to nothing
    assert empty.sum() == 1
    ours, ours_w = IMPLEMENTATIONS[impl](q, k, v, p, mask)
    # torch: 0/0 in the softmax, so that query's weights and output are NaN.
    assert np.isnan(out[empty]).all() and np.isnan(weights[:, empty]).all()
    # Here: zero weights, so every head contributes zero and the output is W^O's bias alone.
    assert np.all(ours_w[:, empty] == 0)
    np.testing.assert_array_equal(ours[empty], p.b_o[None])
    # Every other query agrees with torch.
    assert np.abs(ours[~empty] - out[~empty]).max() < 1e-10
    assert np.abs(ours_w[:, ~empty] - weights[:, ~empty]).max() < 1e-10


def test_worked_example_in_the_fixture_is_the_current_one():
    q, k, v, p, mask, _, _ = load("worked_example")
    x, params = worked_example()
    assert mask is None
    for a in (q, k, v):
        np.testing.assert_array_equal(a, x)
    assert p.h == params.h and p.arrays().keys() == params.arrays().keys()
    for name, a in params.arrays().items():
        np.testing.assert_array_equal(p.arrays()[name], a)


def test_the_packaged_worked_example_reference_is_the_fixtures_torch_output():
    from mha_lesson.demos.examples import torch_reference

    ref = torch_reference()
    *_, torch_out, torch_weights = load("worked_example")
    np.testing.assert_array_equal(ref["output"], torch_out)
    np.testing.assert_array_equal(ref["weights"], torch_weights)
    x, p = worked_example()
    out, weights = m.multi_head_attention(x, x, x, p)
    assert np.abs(out - ref["output"]).max() < 1e-10 and np.abs(weights - ref["weights"]).max() < 1e-10
