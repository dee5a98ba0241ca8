"""Lesson 3's √d_k claims: Var(q.k) = d_k within the standard error, saturation without scaling, and the explorer."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha_lesson as mha
from mha_lesson.scaling import jacobian_norm, row_stats, score_variance
from mha_lesson.widgets.scaling import D_KS, scaling_explorer, scaling_stats


def test_measured_variance_is_d_k_within_the_standard_error_over_many_seeds():
    d_ks = [1, 4, 16, 64, 256]
    z = []
    for seed in range(12):
        res = score_variance(d_ks, samples=2000, seed=seed)
        np.testing.assert_array_equal(res["closed_form"], d_ks)
        z.extend((res["measured"] - res["d_k"]) / res["stderr"])
    z = np.array(z)
    assert np.abs(z).max() < 4.5  # no measurement is far off
    assert np.mean(np.abs(z) < 2) > 0.85  # about 95% within 2 standard errors if Var = d_k
    assert abs(z.mean()) < 0.6  # no bias: the mean of 60 z-scores has standard deviation ~0.13


@given(d_k=st.integers(1, 300), seed=st.integers(0, 10_000))
def test_variance_claim_for_any_d_k(d_k, seed):
    res = score_variance([d_k], samples=1500, seed=seed)
    assert abs(res["measured"][0] - d_k) < 5 * res["stderr"][0]


def test_estimated_standard_error_matches_its_closed_form():
    # q.k = sum of d products z_j with E z^2 = 1, E z^4 = 9: E(q.k)^4 = 3d^2 + 6d, so Var((q.k)^2) = 2d^2 + 6d.
    samples = 4000
    res = score_variance([2, 32, 128], samples=samples, seed=1)
    closed = np.sqrt((2 * res["d_k"] ** 2 + 6 * res["d_k"]) / samples)
    np.testing.assert_allclose(res["stderr"], closed, rtol=0.2)


def test_the_lesson_table_numbers():
    res = score_variance([2**i for i in range(10)], samples=2000, seed=0)
    assert np.all(np.abs(res["measured"] - res["d_k"]) < 3 * res["stderr"])


def test_row_stats_against_an_explicit_loop():
    scores = np.random.default_rng(0).normal(size=(5, 7)) * 3
    entropy, peak = row_stats(scores)
    ent, mx = [], []
    for row in scores:
        p = np.exp(row - row.max())
        p /= p.sum()
        ent.append(-sum(v * math.log(v) for v in p))
        mx.append(p.max())
    assert entropy == pytest.approx(np.mean(ent)) and peak == pytest.approx(np.mean(mx))


def test_jacobian_norm_against_finite_differences():
    scores = np.random.default_rng(1).normal(size=(3, 6)) * 2
    eps = 1e-6
    norms = []
    for row in scores:
        jac = np.empty((6, 6))
        for j in range(6):
            step = np.zeros(6)
            step[j] = eps
            jac[:, j] = (mha.softmax(row + step) - mha.softmax(row - step)) / (2 * eps)
        norms.append(np.linalg.norm(jac))
    assert jacobian_norm(scores) == pytest.approx(np.mean(norms), rel=1e-6)


def test_unscaled_rows_saturate_and_scaled_rows_do_not():
    stats = scaling_stats(d_k=512, n=32, seed=0)
    c = stats["curves"]
    i = D_KS.index(512)
    assert c["max_raw"][i] > 0.8 and c["entropy_raw"][i] < 0.5  # nearly one-hot
    assert c["max_scaled"][i] < 0.3 and c["entropy_scaled"][i] > 2.5
    # unscaled entropy falls steadily with d_k; scaled entropy stays within a narrow band
    assert c["entropy_raw"][-1] < c["entropy_raw"][0] - 2.5
    assert np.ptp(c["entropy_scaled"]) < 0.5
    # at d_k = 1 scaling divides by 1: the curves start together
    assert c["entropy_raw"][0] == c["entropy_scaled"][0]
    assert jacobian_norm(stats["raw"]) < 0.6 * jacobian_norm(stats["scaled"])


def test_scaled_jacobian_keeps_its_size_across_d_k_and_unscaled_shrinks():
    """Lesson 3 prints mean |J| at d_k = 4, 64, 512: steady with scaling, falling without."""
    raw, scaled = zip(
        *(
            (jacobian_norm(s["raw"]), jacobian_norm(s["scaled"]))
            for s in (scaling_stats(d_k=d, n=32, seed=0) for d in (4, 64, 512))
        ),
        strict=True,
    )
    assert max(scaled) - min(scaled) < 0.1 * max(scaled)
    assert raw[0] > raw[1] > raw[2] and raw[2] < 0.5 * scaled[2]


def test_scaling_stats_numbers_are_consistent():
    stats = scaling_stats(d_k=64, n=20, seed=3)
    assert stats["raw"].shape == (64, 20)
    np.testing.assert_allclose(stats["scaled"], stats["raw"] / 8)
    np.testing.assert_allclose(stats["row_raw"], mha.softmax(stats["raw"][0]))
    assert stats["variance"] == pytest.approx(stats["raw"].var())


@pytest.mark.parametrize(("kwargs", "name"), [({"d_k": 3}, "d_k"), ({"n": 1}, "n"), ({"n": 257}, "n")])
def test_bad_input_raises(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name}:"):
        scaling_stats(**kwargs)


def test_explorer_moves_update_the_artists_and_the_picture():
    e = scaling_explorer()
    assert e.error is None
    png = e.image.value
    e.controls["d_k"].value = 1024
    assert e.data["d_k"] == 1024 and e.image.value != png
    np.testing.assert_allclose(e.row["raw"].get_ydata(), np.sort(e.data["row_raw"])[::-1])  # largest first
    assert e.row["raw"].get_ydata()[0] > 0.5  # saturated at d_k = 1024
    np.testing.assert_allclose(e.sat["entropy_raw"].get_ydata(), e.data["curves"]["entropy_raw"])
    assert e.sat["entropy_cursor"].get_xdata()[0] == 1024
    assert f"{e.data['variance']:.1f}" in e.text.value
    e.controls["n"].value = 100
    assert len(e.row["scaled"].get_xdata()) == 100
    assert e.sat["max_uniform"].get_ydata()[0] == pytest.approx(1 / 100)


def test_blitted_moves_show_the_same_picture_as_a_full_redraw():
    e = scaling_explorer()
    for name, value in (("d_k", 256), ("seed", 2), ("n", 40)):
        e.controls[name].value = value
        blitted = e.image.value
        e.invalidate_background()
        assert blitted == e.render_png(), name
