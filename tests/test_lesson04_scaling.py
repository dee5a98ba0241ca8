"""Lesson 4's √d_k claims: Var(q.k) = d_k within the standard error, saturation without scaling, and the explorer."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

import mha_lesson as mha
from mha_lesson.demos.scaling import jacobian_norm, row_stats, score_variance
from mha_lesson.plots.scaling import saturation_axes, set_saturation
from mha_lesson.widgets.scaling import D_KS, READOUT_LINES, scaling_explorer, scaling_stats


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
    """Lesson 4 prints mean |J| at d_k = 4, 64, 512: steady with scaling, falling without."""
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
    assert f"{e.data['variance']:.2f}" in e.text.value
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


# ---------------------------------------------------------------------------------------------- the figure
def occupied_share(stairs, ax):
    """Share of the panel's x range between the first and the last non-empty bin of a histogram."""
    data = stairs.get_data()
    values, edges = data.values, data.edges
    full = np.flatnonzero(values > 0)
    lo, hi = ax.get_xlim()
    return (edges[full[-1] + 1] - edges[full[0]]) / (hi - lo)


@pytest.mark.parametrize("d_k", D_KS)
def test_each_histogram_spans_about_four_standard_deviations_of_its_own_scores(d_k):
    e = scaling_explorer()
    e.set(d_k=d_k)
    ax_raw, ax_scaled = e.hist["axes"]
    assert ax_raw is not ax_scaled
    assert ax_scaled.get_xlim() == (-4, 4)  # scaled scores have Var 1 at every d_k
    assert ax_raw.get_xlim() == pytest.approx((-4 * math.sqrt(d_k), 4 * math.sqrt(d_k)))  # and unscaled Var d_k
    band = e.hist["scaled_range"]  # the scaled panel's range, marked in the unscaled one: 1/sqrt(d_k) of its width
    assert (band.get_x(), band.get_width()) == (-4, 8) and band.axes is ax_raw
    for name, ax in (("raw", ax_raw), ("scaled", ax_scaled)):
        values = e.data[name]
        lo, hi = ax.get_xlim()
        assert 2 < hi / values.std() < 8, name  # the range is a few of these scores' standard deviations ...
        assert np.mean((values > lo) & (values < hi)) > (0.9 if d_k == 1 else 0.97), name  # ... holding them
        assert occupied_share(e.hist[name], ax) > 0.4, name  # so the bars fill the panel, not a spike in it
        top = ax.get_ylim()[1]
        heights = e.hist[name].get_data().values
        assert 0.25 * top < heights.max() <= top, name  # tall enough to read, never cut off
        # densities: counts / (all scores * bin width), integrating to the share of scores inside the range
        edges = e.hist[name].get_data().edges
        assert np.sum(heights * np.diff(edges)) == pytest.approx(np.mean((values >= lo) & (values <= hi)))


@pytest.mark.parametrize(("d_k", "n"), [(1, 2), (1, 256), (2, 2), (1024, 2), (1024, 256)])
def test_no_histogram_is_cut_off_at_the_extremes(d_k, n):
    e = scaling_explorer()
    for seed in (0, 7, 20):
        e.set(d_k=d_k, n=n, seed=seed)
        for name, ax in zip(("raw", "scaled"), e.hist["axes"], strict=True):
            assert e.hist[name].get_data().values.max() <= ax.get_ylim()[1], (name, seed)


def test_titles_and_the_variance_panel_state_d_k_against_1():
    e = scaling_explorer()
    e.set(d_k=256, n=256)
    raw, scaled = e.data["raw"], e.data["scaled"]
    assert e.hist["raw_title"].get_text().endswith("closed form: Var = d_k = 256")
    assert e.hist["scaled_title"].get_text().endswith("closed form: Var = 1")
    assert f"Var(q·k) = {raw.var():.2f} (closed form: d_k = 256)" in e.text.value
    assert f"over the {raw.size:,} scores drawn" in e.text.value
    assert f"Var(q·k / √d_k) = {scaled.var():.2f} (closed form: 1)" in e.text.value
    c = e.data["curves"]
    np.testing.assert_allclose(e.var["var_raw"].get_ydata(), c["var_raw"])
    np.testing.assert_allclose(e.var["var_scaled"].get_ydata(), c["var_scaled"])
    np.testing.assert_allclose(c["var_scaled"], c["var_raw"] / np.array(D_KS))
    assert c["var_raw"][D_KS.index(256)] == pytest.approx(raw.var())
    assert np.all(np.abs(np.log(c["var_scaled"][3:])) < np.log(1.6))  # about 1 from d_k = 8 on (256 keys)
    np.testing.assert_array_equal(e.var["closed_raw"].get_ydata(), D_KS)
    np.testing.assert_array_equal(e.var["closed_scaled"].get_ydata(), np.ones(len(D_KS)))
    lo, hi = e.var["ax"].get_ylim()
    for n in (2, 256):  # the fixed range holds every measured variance, even from 2 keys
        for seed in range(0, 21, 4):
            curves = scaling_stats(1, n, seed)["curves"]
            assert lo < curves["var_scaled"].min() and curves["var_raw"].max() < hi


def style(artist):
    """What tells a line (colour, line style, marker) or a patch (fill colour) apart on the page."""
    if hasattr(artist, "get_marker"):
        return (to_hex(artist.get_color()), artist.get_linestyle(), artist.get_marker())
    return (to_hex(artist.get_facecolor(), keep_alpha=True), "patch", None)


def test_one_legend_tells_apart_every_line_of_every_panel():
    e = scaling_explorer()
    legend = e.figure.legends[0]
    key = {style(h): t.get_text() for h, t in zip(legend.legend_handles, legend.get_texts(), strict=True)}
    assert len(key) == len(legend.get_texts())  # no two entries look alike
    for ax in e.figure.axes:
        seen = {style(line) for line in ax.lines}
        assert seen <= set(key), f"{ax.get_title()!r} draws a line the legend does not name"
    max_ax = e.sat["axes"][1]
    assert "largest weight" in max_ax.get_title()
    assert sorted(key[style(line)] for line in max_ax.lines) == sorted(
        ["unscaled q·k", "scaled q·k / √d_k", "uniform row (entropy ln n, max weight 1/n)", "current d_k"]
    )
    for name, label in (("raw", "unscaled q·k"), ("scaled", "scaled q·k / √d_k")):  # the histograms' colours
        assert key[(to_hex(e.hist[name].get_facecolor()), "-", "o")] == label
    assert key[style(e.hist["scaled_range"])] == "±4: the scaled panel's range"


@pytest.mark.parametrize(("d_k", "n"), [(1, 2), (1024, 2), (1, 256), (1024, 256)])
def test_no_legend_lies_over_a_panel(d_k, n):
    e = scaling_explorer()
    e.set(d_k=d_k, n=n)
    renderer = e.canvas.get_renderer()
    boxes = [legend.get_window_extent(renderer) for legend in e.figure.legends]
    assert boxes and not any(ax.get_legend() for ax in e.figure.axes)
    for ax in e.figure.axes:
        for box in boxes:
            assert not ax.bbox.overlaps(box), ax.get_title()
        assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
        assert "dimensionless" in ax.get_xlabel() + ax.get_ylabel() or "(" in ax.get_ylabel()


def test_the_notebook_saturation_figure_labels_both_panels_outside_the_data():
    fig = Figure(figsize=(11, 4), layout="constrained")
    canvas = FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2)
    stats = scaling_stats(d_k=512, n=32, seed=0)
    set_saturation(saturation_axes(axes[0], axes[1], D_KS, max_n=32), stats["curves"], 512, 32)
    canvas.draw()
    renderer = canvas.get_renderer()
    for ax in axes:
        legend = ax.get_legend()
        assert [t.get_text() for t in legend.get_texts()] == ["unscaled q·k", "scaled q·k / √d_k", "uniform row"]
        box = legend.get_window_extent(renderer)
        assert not ax.bbox.overlaps(box)
        assert ax.title.get_window_extent(renderer).y0 >= box.y1 - 1  # the title stays clear of it


def test_the_readout_explains_a_small_d_ks_variance_and_keeps_its_lines():
    e = scaling_explorer()
    e.set(d_k=1)
    raw = e.data["raw"]  # (64, 32): at d_k = 1 the outer product of 64 query numbers and 32 key numbers
    rng = np.random.default_rng(0)  # scaling_stats' draw, recomputed
    q, k = rng.standard_normal((64, D_KS[-1]))[:, 0], rng.standard_normal((32, D_KS[-1]))[:, 0]
    assert raw.var() == pytest.approx(np.mean(q**2) * np.mean(k**2) - (q.mean() * k.mean()) ** 2)
    assert raw.var() < 0.6  # far from the closed form 1 by chance (these 32 keys' components are small)
    pairs = np.einsum("sd,sd->s", *np.random.default_rng(0).standard_normal((2, 2000, 1)))  # independent pairs
    assert abs(pairs.var(ddof=1) - 1) < 0.2
    assert "2,000 independent pairs give Var(q·k) = " in e.text.value and "share 64 + 32 random vectors" in e.text.value
    lines = set()
    for d_k in D_KS:
        for n in (2, 256):
            e.set(d_k=d_k, n=n)
            parts = e.text.value.split("<br>")
            lines.add(len(parts))
            # short enough not to wrap beside the file browser at 1024 px (about 590 px: 80 characters of 13 px text)
            assert max(len(p) for p in parts) <= 80, parts
    assert lines == {READOUT_LINES} and e.text.layout.min_height == f"{READOUT_LINES * 28}px"
