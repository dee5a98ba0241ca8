"""Lesson 10's stated claims, through the same helper calls the notebook makes."""

import math

import numpy as np
import pytest
from matplotlib.figure import Figure

import mha_lesson as mha
from mha_lesson import cost
from mha_lesson.demos import complexity as cx
from mha_lesson.plots import complexity as cplots


def test_param_table_for_well_known_sizes():
    expected = {  # d_model: (per head, total, total with biases), by hand: 4*d*d_k, 4*d^2, 4*d^2 + 4*d
        512: (4 * 512 * 64, 1_048_576, 1_050_624),
        768: (4 * 768 * 64, 2_359_296, 2_362_368),
        1024: (4 * 1024 * 64, 4_194_304, 4_198_400),
    }
    rows = cx.param_table()
    assert [(r["d_model"], r["h"]) for r in rows] == [(512, 8), (768, 12), (1024, 16)]
    for r in rows:
        assert (r["per_head"], r["total"], r["total_bias"]) == expected[r["d_model"]]


def test_head_count_does_not_change_parameters_but_full_width_heads_multiply_them():
    counts = {h: cx.count_params(mha.init_params(512, h, dtype=np.float32)) for h in (1, 2, 4, 8, 16)}
    assert set(counts.values()) == {4 * 512**2}
    assert [cost.param_count(512, h, split=False) for h in (1, 2, 4, 8, 16)] == [
        h * 4 * 512**2 for h in (1, 2, 4, 8, 16)
    ]


def test_eight_heads_cost_one_head_except_the_softmax_and_full_width_projections():
    n, d = 1024, 512
    one, eight, naive = (
        cost.flop_count(n, n, d, 1),
        cost.flop_count(n, n, d, 8),
        cost.flop_count(n, n, d, 8, split=False),
    )
    for part in ("projections", "scores", "weighted_sum", "output_projection"):
        assert one[part] == eight[part]
    assert eight["softmax"] == 8 * one["softmax"]
    assert naive["projections"] == 8 * one["projections"]
    assert naive["output_projection"] == 8 * one["output_projection"]


def test_flop_table_shares_at_n_1024():
    table = cx.flop_table(1024, 512, 8)
    total = sum(r[3] for r in table)
    assert total == 8 * 1024 * 512**2 + 4 * 1024**2 * 512 + 5 * 8 * 1024**2
    shares = {part: value / total for part, _, _, value in table}
    assert shares["projections"] == pytest.approx(0.371, abs=1e-3)
    assert shares["softmax"] == pytest.approx(0.010, abs=1e-3)


def test_crossover_lands_near_two_d_model_not_d_model():
    n_star = cx.crossover_n(512, 8)
    assert n_star == pytest.approx(8 * 512**2 / (4 * 512 + 5 * 8))
    assert round(n_star, 2) == 1004.38
    assert cx.crossover_n_search(512, 8) == 1005
    assert n_star / 512 == pytest.approx(1.962, abs=1e-3)
    for _, d, h in cx.KNOWN_SIZES:
        assert cx.crossover_n(d, h) / d == pytest.approx(1.962, abs=1e-3)
    at_d = cost.flop_count(512, 512, 512, 8)
    linear_share = sum(at_d[p] for p in cx.LINEAR_PARTS) / at_d["total"]
    assert round(100 * linear_share) == 66  # "at n = d_model the n parts still do 66% of the work"


def test_ffn_flops_counted_from_a_real_encoder_layers_arrays():
    """Two products per token, (d, d_ff) and (d_ff, d): 2 FLOPs per multiply-add, from the arrays' sizes."""
    from mha_lesson.encoder import init_encoder_layer

    for d, h, d_ff in ((64, 4, None), (48, 4, 100)):
        ffn = init_encoder_layer(d, h, d_ff).ffn
        for n in (1, 7, 1024):
            assert cx.ffn_flops(n, d, d_ff) == 2 * n * (ffn.w_1.size + ffn.w_2.size)
    assert cx.ffn_flops(1024, 512) == 16 * 1024 * 512**2


def test_block_crossover_is_three_times_the_sublayers_near_six_d_model():
    """Lesson 10: with the 4x FFN the n work is 24·n·d², the n² work unchanged, so n* triples to about 6·d_model."""
    for _, d, h in cx.KNOWN_SIZES:
        block = cx.block_crossover_n(d, h)
        assert block == pytest.approx(24 * d * d / (4 * d + 5 * h))
        assert block == pytest.approx(3 * cx.crossover_n(d, h))
        assert block / d == pytest.approx(5.885, abs=1e-3)  # the table's "block n* / d_model" column
    # A search with no formula: the first whole n where the n² parts reach the n parts plus the FFN.
    d, h = 512, 8

    def quadratic_wins(n):
        f = cost.flop_count(n, n, d, h)
        return sum(f[p] for p in cx.QUADRATIC_PARTS) >= sum(f[p] for p in cx.LINEAR_PARTS) + cx.ffn_flops(n, d)

    first = next(n for n in range(2 * d, 8 * d) if quadratic_wins(n))
    assert first == math.ceil(cx.block_crossover_n(d, h)) == 3014
    assert 5.8 * d < first < 6 * d


def test_block_crossover_with_a_custom_ffn_width():
    assert cx.block_crossover_n(512, 8, d_ff=512) == pytest.approx((8 + 4) * 512**2 / (4 * 512 + 40))
    with pytest.raises(ValueError, match="d_ff"):
        cx.ffn_flops(4, 512, 0)


def test_slope_is_one_and_a_half_at_the_crossover():
    assert cx.local_slope(cx.crossover_n(512, 8), 512, 8) == pytest.approx(1.5)


def test_notebook_synthetic_fit_recovers_the_law():
    # The notebook's exact cell: made-up timings with b/a = 500 and 5% noise.
    ns = 2 ** np.arange(4, 16)
    a, b = 1e-9, 5e-7
    noisy = cx.synthetic_timings(ns, a, b, noise=0.05, seed=0)
    exact = a * ns**2.0 + b * ns
    short, long = ns <= 64, ns >= 8192
    assert cx.fit_loglog_slope(ns[long], noisy[long]) == pytest.approx(2, abs=0.06)
    assert cx.fit_loglog_slope(ns[short], noisy[short]) == pytest.approx(1, abs=0.1)
    for sel in (short, long):
        assert cx.fit_loglog_slope(ns[sel], noisy[sel]) == pytest.approx(
            cx.fit_loglog_slope(ns[sel], exact[sel]), abs=0.06
        )


def test_predicted_slopes_for_the_timed_range_are_below_two():
    # "The predicted slope is below 2 because at these lengths the n parts are not yet negligible."
    ns = np.array([512, 1024, 2048])
    for d in (64, 256):
        flops = [cost.flop_count(int(n), int(n), d, 8)["total"] for n in ns]
        slope = cx.fit_loglog_slope(ns, flops)
        assert 1.5 < slope < 2
    assert cx.fit_loglog_slope(ns, [cost.flop_count(int(n), int(n), 64, 8)["total"] for n in ns]) > 1.85


def test_memory_of_ten_thousand_tokens():
    rows = cx.memory_table(10_000, [8, 12, 16], layers=12)
    assert [r["per_layer"] / 1e9 for r in rows] == pytest.approx([3.2, 4.8, 6.4])
    assert [r["per_model"] / 1e9 for r in rows] == pytest.approx([38.4, 57.6, 76.8])


def test_the_core_refuses_sixteen_heads_of_ten_thousand_tokens_before_allocating():
    x = np.zeros((10_000, 1024), dtype=np.float32)
    needed = cost.attention_memory_bytes(10_000, 10_000, 16, np.float32)
    assert needed > mha.DEFAULT_MAX_BYTES
    with pytest.raises(ValueError, match="need_weights=False"):
        mha.multi_head_attention(x, x, x, mha.init_params(1024, 16, dtype=np.float32))


def _texts(ax):
    return ax.get_title(), ax.get_xlabel(), ax.get_ylabel()


def test_crossover_figure_plots_n_star_and_the_local_slope():
    fig = cplots.crossover_figure(Figure(), [128, 512, 1024])
    ax_n, ax_s = fig.axes
    assert all(_texts(ax_n)) and all(_texts(ax_s))
    assert "tokens" in ax_n.get_ylabel() and "tokens" in ax_s.get_xlabel()
    n_star_line = [line for line in ax_n.get_lines() if "softmax" in line.get_label()][0]
    assert list(n_star_line.get_ydata()) == [cx.crossover_n(d, d // 64) for d in (128, 512, 1024)]
    x, y = ax_s.get_lines()[0].get_data()
    assert np.allclose(y, cx.local_slope(x, 512, 8))


def test_timing_figure_shows_measured_and_predicted_with_slopes():
    ns, ds = np.array([256, 512, 1024, 2048]), np.array([64, 256])
    flops = np.array([[cost.flop_count(int(n), int(n), int(d), 8)["total"] for n in ns] for d in ds], dtype=float)
    by_n = cx.Timings(ns, ds, 8, flops / 2e10, flops)  # seconds exactly proportional to FLOPs
    dd = np.array([64, 128, 256, 512])
    flops_d = np.array([[cost.flop_count(512, 512, int(d), 8)["total"]] for d in dd], dtype=float)
    by_d = cx.Timings(np.array([512]), dd, 8, flops_d / 2e10, flops_d)
    fig = cplots.timing_figure(Figure(), by_n, by_d, fit_from_n=512, fit_from_d=256)
    ax_n, ax_d = fig.axes
    assert "ms" in ax_n.get_ylabel() and "tokens" in ax_n.get_xlabel() and "d_model" in ax_d.get_xlabel()
    assert "R = 20 GFLOP/s" in ax_n.get_legend().get_title().get_text()
    measured, predicted = ax_n.get_lines()[:2]
    assert np.allclose(measured.get_ydata(), 1e3 * by_n.seconds[0])
    assert np.allclose(predicted.get_ydata(), measured.get_ydata())  # times follow FLOPs exactly here
    slope = cx.fit_loglog_slope(ns[1:], flops[0, 1:])
    assert f"slope {slope:.2f}" in measured.get_label() and f"slope {slope:.2f}" in predicted.get_label()


def test_memory_figure_in_gigabytes_with_the_marked_case():
    fig = cplots.memory_figure(Figure(), 2 ** np.arange(7, 12), [8, 16], mark_n=10_000)
    (ax,) = fig.axes
    assert "GB" in ax.get_ylabel() and "tokens" in ax.get_xlabel() and ax.get_title()
    curve = ax.get_lines()[0]
    assert np.allclose(curve.get_ydata(), 8 * 4 * (2 ** np.arange(7, 12)) ** 2 / 1e9)
    assert math.isclose(ax.get_lines()[1].get_ydata()[0], 8 * 4 * 10_000**2 / 1e9)
    assert "3.2 GB at n=10,000" in curve.get_label()


def test_the_softmax_band_is_a_hair_at_eight_heads_and_shows_at_sixty_four():
    """The explorer opens at n = 4096, d_model = 512, h = 8: softmax under 1% of the FLOPs there, over 5% at h = 64."""
    import inspect
    import json
    from pathlib import Path

    from mha_lesson.widgets.complexity import complexity_explorer

    start = inspect.signature(complexity_explorer).parameters
    n, d_model = start["n"].default, start["d_model"].default
    share = {h: cost.flop_count(n, n, d_model, h)["softmax"] / sum(cost.flop_count(n, n, d_model, h).values())
             for h in (8, 64)}  # fmt: skip
    assert start["h"].default == 8 and share[8] < 0.01 < 0.05 < share[64]
    path = Path(__file__).resolve().parents[1] / "notebooks" / "10_parameters_and_complexity.ipynb"
    prose = " ".join("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"])
    assert "first drag $h$ to 64" in " ".join(prose.split())
