"""Lesson 2's claims, through the calls the notebook makes, checked against explicit loops and closed forms;
and the cost explorer: moving a control changes exactly what it should."""

import io

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

import mha_lesson as mha
from mha_lesson.cost import PARTS, attention_memory_bytes, flop_count, param_count
from mha_lesson.plots.cost import DESIGNS
from mha_lesson.widgets import divisors
from mha_lesson.widgets.cost import (
    D_MODELS,
    LENGTHS,
    MARGIN,
    PANEL_SERIES,
    CostExplorer,
    cost_explorer,
    cost_table,
    fit_range,
)

MATMULS = ("projections", "scores", "weighted_sum", "output_projection")


def loop_attention_flops(n, d_k, h):
    """Scores and weighted sum counted head by head, 2*m*k*p per (m, k) @ (k, p) product."""
    total = 0
    for _ in range(h):
        total += 2 * n * d_k * n  # Q_i K_i^T
        total += 2 * n * n * d_k  # A_i V_i
    return total


@st.composite
def sizes(draw):
    d_model = draw(st.integers(1, 1024))
    h = draw(st.sampled_from(divisors(d_model)))
    return d_model, h, draw(st.integers(1, 4096))


# ---------------------------------------------------------------------------------------------- the lesson's numbers
def test_worked_case_has_d_k_64():
    assert mha.init_params(512, 8).d_k == 64
    assert cost_table(512, 8, 128)["d_k"] == 64


@given(sizes())
def test_split_heads_attention_part_equals_one_full_width_head(size):
    d_model, h, n = size
    split, one = flop_count(n, n, d_model, h), flop_count(n, n, d_model, 1)
    attention = split["scores"] + split["weighted_sum"]
    assert attention == one["scores"] + one["weighted_sum"] == loop_attention_flops(n, d_model // h, h)
    assert attention == 4 * n * n * d_model  # closed form: h * 4 n^2 d_k with h d_k = d_model


@given(sizes())
def test_split_heads_differ_from_one_head_only_in_the_softmax(size):
    d_model, h, n = size
    split, one, naive = flop_count(n, n, d_model, h), flop_count(n, n, d_model, 1), flop_count(n, n, d_model, h, False)
    for part in MATMULS:
        assert split[part] == one[part]
    assert split["total"] - one["total"] == (h - 1) * 5 * n * n
    for part in PARTS:  # the naive design: every part h times one head's, softmax included
        assert naive[part] == h * one[part]


def test_the_printed_worked_case():
    t = cost_table(512, 8, 128)["flops"]
    assert t["split"]["scores"] + t["split"]["weighted_sum"] == 33_554_432 == t["one"]["scores"] * 2
    assert t["naive"]["total"] / t["one"]["total"] == 8
    assert 7.98 < t["naive"]["total"] / t["split"]["total"] < 8
    assert t["split"]["softmax"] / t["split"]["total"] == pytest.approx(0.0022, abs=5e-5)


def test_softmax_share_grows_with_n_towards_its_limit():
    d, h = 512, 8
    limit = 5 * h / (4 * d + 5 * h)
    shares = [flop_count(n, n, d, h)["softmax"] / flop_count(n, n, d, h)["total"] for n in (128, 1024, 8192, 65536)]
    assert shares == sorted(shares) and shares[-1] < limit
    assert flop_count(10**7, 10**7, d, h)["softmax"] / flop_count(10**7, 10**7, d, h)["total"] == pytest.approx(
        limit, rel=1e-3
    )


def test_one_dimensional_heads_spend_more_on_the_softmax_than_on_the_scores():
    thin = cost_table(512, 512, 128)["flops"]["split"]
    assert thin["softmax"] == 2.5 * thin["scores"]  # 5 ops per weight against 2 * d_k = 2 FLOPs


@pytest.mark.parametrize("h", divisors(512))
def test_parameters_are_4_d_model_squared_for_every_h(h):
    counted = sum(a.size for a in mha.init_params(512, h).arrays().values())
    assert param_count(512, h) == counted == 4 * 512**2 == 1_048_576


@pytest.mark.parametrize(("d_model", "h"), [(512, 8), (768, 12), (64, 64)])
def test_full_width_heads_have_4_h_d_model_squared_parameters(d_model, h):
    # Count the shapes one by one: three (d_model, d_model) per head and W^O of (h * d_model, d_model).
    shapes = [(d_model, d_model)] * (3 * h) + [(h * d_model, d_model)]
    assert param_count(d_model, h, split=False) == sum(r * c for r, c in shapes) == 4 * h * d_model**2


def test_memory_of_the_weights_is_what_a_forward_pass_returns():
    n, d, h = 128, 512, 8
    x = np.random.default_rng(0).normal(size=(n, d)).astype(np.float32)
    _, weights = mha.multi_head_attention(x, x, x, mha.init_params(d, h).astype(np.float32))
    table = cost_table(d, h, n)
    assert table["memory_bytes"]["split"] == table["memory_bytes"]["naive"] == weights.nbytes == 524_288
    assert attention_memory_bytes(n, n, 1) * h == weights.nbytes


# ---------------------------------------------------------------------------------------------- cost_table
def test_cost_table_sweeps_agree_with_the_single_counts():
    t = cost_table(768, 12, 256)
    assert t["hs"] == divisors(768)
    k = t["hs"].index(12)
    s = t["sweep"]
    assert s["split_total"][k] == t["flops"]["split"]["total"]
    assert s["naive_total"][k] == t["flops"]["naive"]["total"]
    assert s["naive_attention"][k] == t["flops"]["naive"]["scores"] + t["flops"]["naive"]["weighted_sum"]
    assert s["split_params"] == [4 * 768**2] * len(t["hs"])
    assert s["naive_params"] == [4 * g * 768**2 for g in t["hs"]]
    assert s["memory"] == [g * 256 * 256 * 4 for g in t["hs"]]


@pytest.mark.parametrize(("d_model", "h"), [(512, 3), (512, 0), (768, 1000)])
def test_cost_table_refuses_an_h_that_does_not_divide_d_model(d_model, h):
    with pytest.raises(ValueError, match="^h: expected"):
        cost_table(d_model, h, 128)


# ---------------------------------------------------------------------------------------------- the explorer
def bar_heights(explorer, design):
    return [rect.get_height() for rect in explorer.bars[design].patches]


def test_explorer_starts_at_the_worked_case_and_draws_its_numbers():
    e = cost_explorer()
    assert isinstance(e, CostExplorer) and e.error is None and e.image.value
    assert e.values() == {"d_model": 512, "h": 8, "n": 128}
    t = cost_table()
    for design in ("one", "split", "naive"):
        assert bar_heights(e, design) == [t["flops"][design][p] for p in (*PARTS, "total")]
    assert "d_k = 512 / 8 = 64" in e.text.value


def test_moving_h_grows_the_naive_bars_and_only_the_softmax_of_the_split_ones():
    e = cost_explorer()
    split8, naive8, png8 = bar_heights(e, "split"), bar_heights(e, "naive"), e.image.value
    e.controls["h"].value = 16
    split16, naive16 = bar_heights(e, "split"), bar_heights(e, "naive")
    assert naive16[:5] == [2 * v for v in naive8[:5]]
    softmax = PARTS.index("softmax")
    assert [v for i, v in enumerate(split16[:5]) if i != softmax] == [
        v for i, v in enumerate(split8[:5]) if i != softmax
    ]
    assert split16[softmax] == 2 * split8[softmax]
    assert e.image.value != png8
    for _, _, marker in e.sweeps:
        assert list(marker.get_xdata()) == [16, 16]


def test_moving_n_scales_the_n_squared_parts_by_four_and_the_projections_by_two():
    e = cost_explorer()
    before = dict(zip(PARTS, bar_heights(e, "split"), strict=False))
    e.controls["n"].value = 256
    after = dict(zip(PARTS, bar_heights(e, "split"), strict=False))
    for part in ("scores", "softmax", "weighted_sum"):
        assert after[part] == 4 * before[part]
    for part in ("projections", "output_projection"):
        assert after[part] == 2 * before[part]


def test_d_model_offers_only_valid_heads_and_keeps_the_nearest_h():
    e = cost_explorer()
    e.controls["d_model"].value = 768
    assert tuple(e.controls["h"].options) == tuple(divisors(768)) and e.controls["h"].value == 8
    e.controls["h"].value = 3
    e.controls["d_model"].value = 512  # 3 does not divide 512: 2 and 4 are equally near, the smaller wins
    assert e.controls["h"].value == 2 and e.error is None
    assert "d_k = 512 / 2 = 256" in e.text.value
    lines, _ = e.sweeps[1][1], e.sweeps[1][2]
    np.testing.assert_array_equal(lines["split_params"].get_xdata(), divisors(512))
    np.testing.assert_array_equal(lines["naive_params"].get_ydata(), [4 * g * 512**2 for g in divisors(512)])


def test_every_d_model_with_the_largest_h_and_n_draws_without_a_message():
    e = cost_explorer()
    for d_model in D_MODELS:
        e.set(d_model=d_model, h=d_model, n=LENGTHS[-1])  # d_k = 1, 8192 tokens
        assert e.error is None and e.data["d_k"] == 1
        assert bar_heights(e, "naive")[-1] == flop_count(8192, 8192, d_model, d_model, split=False)["total"]


def test_an_invalid_pair_shows_a_one_line_message_instead_of_the_plot():
    e = cost_explorer()
    with e.hold():  # the controls cannot reach h = 3 with d_model = 512; force it to test the message path
        e.controls["h"].options = (1, 2, 3)
        e.controls["h"].value = 3
    e.refresh()
    assert e.error.startswith("h: expected a divisor of d_model=512") and "\n" not in e.error
    assert e.image.layout.display == "none" and e.message.layout.display is None


EXTREMES = [(d, h, n) for d in (D_MODELS[0], D_MODELS[-1]) for h in (1, d) for n in (LENGTHS[0], LENGTHS[-1])]


@pytest.mark.parametrize(("d_model", "h", "n"), EXTREMES)
def test_every_axis_fits_what_it_draws_with_at_most_a_half_decade_and_a_margin_spare(d_model, h, n):
    """The log axes fit the shown values (the issue: a fixed 1k-1P axis left half of each panel empty)."""
    e = cost_explorer()
    e.set(d_model=d_model, h=h, n=n)
    t = cost_table(d_model, h, n)
    shown = [[v for f in t["flops"].values() for v in f.values()]]
    shown += [[v for name in names for v in t["sweep"][name]] for names in PANEL_SERIES]
    for ax, values in zip((e.ax_bars, *(ax for ax, _, _ in e.sweeps)), shown, strict=True):
        lo, hi = ax.get_ylim()
        assert lo < min(values) and max(values) < hi, ax.get_title()
        spare = 10**0.5 * MARGIN  # snapping to half-decades adds at most a factor sqrt(10) to the margin
        assert hi <= max(values) * spare * 1.0001 and lo >= min(values) / spare / 1.0001, ax.get_title()
        ticks = [y for y in ax.get_yticks() if lo <= y <= hi]
        assert len(ticks) >= 1, f"{ax.get_title()}: no labelled power of 10 in {lo:g}..{hi:g}"


def test_the_sweep_panels_draw_the_series_their_ranges_are_fitted_to():
    e = cost_explorer()
    assert [tuple(lines) for _, lines, _ in e.sweeps] == [tuple(names) for names in PANEL_SERIES]


def test_fit_range_snaps_out_to_half_decades():
    assert fit_range([1000, 8000]) == (10.0**2.5, 10.0**4.5)  # 1000/1.5 = 667 -> 10^2.5; 12000 -> 10^4.5
    assert fit_range([2000]) == (10.0**3, 10.0**3.5)


def test_a_move_that_changes_an_axis_range_redraws_the_axes_and_moving_back_restores_them():
    e = cost_explorer()
    ranges = e.ranges
    e.controls["n"].value = LENGTHS[-1]
    assert e.ranges != ranges and e.ax_bars.get_ylim() == e.ranges[0]
    e.controls["n"].value = 128
    assert e.ranges == ranges and e.ax_bars.get_ylim() == ranges[0]
    back = bytes(e.image.value)
    e.controls["n"].value = LENGTHS[-1]
    e.controls["n"].value = 128
    assert bytes(e.image.value) == back  # the cached axes of a range are the ones drawn for it


def rgba(png):
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA")).astype(int)


def test_the_blitted_picture_matches_a_full_redraw_inside_every_panel():
    e = cost_explorer()
    e.set(d_model=768, h=12, n=1024)
    blit = rgba(e.image.value)
    for artist in e.moving:  # draw everything the normal way, once
        artist.set_animated(False)
    e.canvas.draw()
    full = np.asarray(e.canvas.buffer_rgba()).astype(int)
    assert blit.shape == full.shape
    height = full.shape[0]
    boxes = [ax.bbox.extents for ax in e.figure.axes] + [e.ax_bars.title.get_window_extent().extents]
    for x0, y0, x1, y1 in boxes:
        rows, cols = slice(int(height - y1) + 3, int(height - y0) - 3), slice(int(x0) + 3, int(x1) - 3)
        inside = np.abs(blit[rows, cols] - full[rows, cols]).max(axis=-1) > 40
        # Legends sit on top of the lines in a full draw and under them when blitting: leave them out.
        for legend in filter(None, (ax.get_legend() for ax in e.figure.axes)):
            lx0, ly0, lx1, ly1 = legend.get_window_extent().extents
            inside[
                max(0, int(height - ly1) - rows.start) : int(height - ly0) - rows.start,
                max(0, int(lx0) - cols.start) : int(lx1) - cols.start,
            ] = False
        assert inside.mean() < 0.001, f"panel at {x0:.0f},{y0:.0f} differs in {inside.mean():.2%} of its pixels"


# ---------------------------------------------------------------------------------------------- legends
def legends(fig):
    return [*fig.legends, *filter(None, (ax.get_legend() for ax in fig.axes))]


def drawn_points(ax, step=2.0):
    """Display coordinates of everything the panel draws: points along every line (every `step` pixels, inside
    the axes, as the line is clipped there) and the corners and middles of every bar."""
    box = ax.bbox
    out = []
    for line in ax.lines:
        xy = line.get_transform().transform(np.asarray(line.get_xydata(), float))
        xy = xy[np.isfinite(xy).all(axis=1)]
        for a, b in zip(xy[:-1], xy[1:], strict=True):  # straight in display space, as matplotlib draws it
            t = np.linspace(0, 1, max(2, int(np.hypot(*(b - a)) / step) + 1))[:, None]
            out.append(a + t * (b - a))
        out.append(xy)
    for patch in ax.patches:
        x0, y0, x1, y1 = patch.get_window_extent().extents
        gx, gy = np.meshgrid(np.linspace(x0, x1, 5), np.linspace(y0, y1, 9))
        out.append(np.column_stack([gx.ravel(), gy.ravel()]))
    pts = np.concatenate(out) if out else np.empty((0, 2))
    inside = (pts[:, 0] >= box.x0) & (pts[:, 0] <= box.x1) & (pts[:, 1] >= box.y0) & (pts[:, 1] <= box.y1)
    return pts[inside]


@pytest.mark.parametrize(("d_model", "h", "n"), EXTREMES)
def test_no_legend_covers_any_line_bar_or_the_current_h_marker(d_model, h, n):
    e = cost_explorer()
    e.set(d_model=d_model, h=h, n=n)
    renderer = e.canvas.get_renderer()
    boxes = [legend.get_window_extent(renderer) for legend in legends(e.figure)]
    assert len(boxes) == 3  # the designs above the figure, line styles above FLOPs, memory's line above its panel
    for ax in e.figure.axes:
        pts = drawn_points(ax)
        assert len(pts) > 0
        for box in boxes:
            covered = (pts[:, 0] > box.x0 + 1) & (pts[:, 0] < box.x1 - 1)
            covered &= (pts[:, 1] > box.y0 + 1) & (pts[:, 1] < box.y1 - 1)
            assert not covered.any(), f"a legend covers data of {ax.get_title()!r} at {covered.sum()} points"
            assert not ax.bbox.overlaps(box.shrunk(0.98, 0.98)), f"a legend lies over {ax.get_title()!r}"


def test_the_sweep_legends_name_the_line_styles_and_the_memory_line():
    e = cost_explorer()
    flops_ax, memory_ax = e.sweeps[0][0], e.sweeps[2][0]
    assert [t.get_text() for t in flops_ax.get_legend().get_texts()] == ["total", "scores + weighted sum"]
    assert [t.get_text() for t in memory_ax.get_legend().get_texts()] == ["both h-head designs"]
    styles = [(h.get_linestyle(), h.get_color()) for h in flops_ax.get_legend().legend_handles]
    assert styles == [("-", "k"), ("--", "k")]
    top = [t.get_text() for t in e.figure.legends[0].get_texts()]
    assert top == [*(label for label, _ in DESIGNS.values()), "current h"]


def test_every_panel_has_a_title_and_labelled_axes():
    e = cost_explorer()
    for ax in e.figure.axes:
        assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()


def test_the_total_bars_draw_each_designs_total_and_its_multiple_of_one_head():
    import matplotlib.pyplot as plt

    from mha_lesson.plots.cost import total_bars

    n, d, h = 128, 512, 8
    flops = {
        name: flop_count(n, n, d, g, s)
        for name, (g, s) in {"one": (1, True), "split": (h, True), "naive": (h, False)}.items()
    }
    fig, ax = plt.subplots()
    bars = total_bars(ax, flops)
    # By hand: naive heads are h times one head in every part; split heads add only (h - 1) * 5 n^2 softmax FLOPs.
    one = flops["one"]["total"]
    assert [r.get_height() * 1e6 for r in bars.patches] == pytest.approx([one, one + (h - 1) * 5 * n * n, h * one])
    assert [t.get_text() for t in ax.texts] == ["1 × one head", "1.002 × one head", "8 × one head"]
    assert ax.get_ylabel() and ax.get_xlabel()
    plt.close(fig)
