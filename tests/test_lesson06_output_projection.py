"""Lesson 6: the W^O block identity, ablation by without_heads, loop vs batched, the ablation explorer and the block
schematic."""

import dataclasses
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha_lesson as mha
from mha_lesson.demos import toy
from mha_lesson.widgets.ablation import NONE, READOUT_LINES, ablation, ablation_explorer

SIZES = st.sampled_from([(8, 2), (12, 3), (16, 4), (32, 8), (6, 1)])


def setup(d_model, h, n, seed, bias=False):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d_model))
    p = mha.init_params(d_model, h, bias=bias, seed=seed)
    if bias:  # init_params starts biases at 0; give them values so that they matter
        p = dataclasses.replace(p, **{b: rng.normal(size=d_model) for b in ("b_q", "b_k", "b_v", "b_o")})
    return x, p


@given(SIZES, st.integers(1, 8), st.integers(0, 100), st.booleans())
def test_concat_times_w_o_is_the_sum_of_head_blocks(size, n, seed, bias):
    x, p = setup(*size, n, seed, bias)
    out, _, trace = mha.multi_head_attention_loop(x, x, x, p, return_trace=True)
    blocks = sum(trace["head_i"][i] @ p.w_o_head(i) for i in range(p.h))
    np.testing.assert_allclose(trace["concat"] @ p.w_o, blocks, atol=1e-12)
    # the block is literally rows i*d_k:(i+1)*d_k of W^O, checked by an explicit triple loop
    d_k = p.d_k
    for i in range(p.h):
        term = np.zeros((n, p.d_model))
        for a in range(n):
            for c in range(p.d_model):
                term[a, c] = sum(trace["head_i"][i][a, j] * p.w_o[i * d_k + j, c] for j in range(d_k))
        np.testing.assert_allclose(term, trace["head_i"][i] @ p.w_o_head(i), atol=1e-12)
    np.testing.assert_allclose(out, blocks + (0 if p.b_o is None else p.b_o), atol=1e-12)


@given(SIZES, st.integers(0, 100), st.data())
def test_switching_heads_off_removes_exactly_their_terms(size, seed, data):
    x, p = setup(*size, 5, seed, bias=True)
    off = data.draw(st.sets(st.integers(0, p.h - 1)))
    out, _, trace = mha.multi_head_attention_loop(x, x, x, p, return_trace=True)
    out_without = mha.multi_head_attention(x, x, x, p.without_heads(off))[0]
    removed = sum((trace["head_i"][i] @ p.w_o_head(i) for i in off), np.zeros_like(out))
    np.testing.assert_allclose(out - out_without, removed, atol=1e-12)


def test_all_heads_off_leaves_only_the_output_bias():
    x, p = setup(8, 2, 4, 0, bias=True)
    out = mha.multi_head_attention(x, x, x, p.without_heads(range(p.h)))[0]
    np.testing.assert_allclose(out, np.broadcast_to(p.b_o, out.shape), atol=1e-14)


def test_value_times_output_block_has_rank_at_most_d_k():
    _, p = setup(16, 4, 1, 0)
    for i in range(p.h):
        ov = p.w_v_head(i) @ p.w_o_head(i)
        assert ov.shape == (16, 16) and np.linalg.matrix_rank(ov) <= p.d_k


@given(SIZES, st.integers(1, 9), st.integers(0, 100), st.booleans())
def test_loop_batched_and_four_line_versions_agree(size, n, seed, causal):
    x, p = setup(*size, n, seed)
    mask = mha.causal_mask(n) if causal else None
    out_loop, w_loop = mha.multi_head_attention_loop(x, x, x, p, mask)
    out_fast, w_fast = mha.multi_head_attention(x, x, x, p, mask)
    np.testing.assert_allclose(out_fast, out_loop, atol=1e-12)
    np.testing.assert_allclose(w_fast, w_loop, atol=1e-12)
    # the lesson's four lines: one projection, split_heads, all heads at once, merge_heads
    qh, kh, vh = (mha.split_heads(x @ w, p.h) for w in (p.w_q, p.w_k, p.w_v))
    heads, w4 = mha.scaled_dot_product_attention(qh, kh, vh, mask)
    np.testing.assert_allclose(mha.merge_heads(heads) @ p.w_o, out_loop, atol=1e-12)
    for i in range(p.h):
        np.testing.assert_allclose(qh[i], x @ p.w_q_head(i), atol=1e-12)


@pytest.mark.parametrize("source", ["toy sentence", "random"])
def test_ablation_numbers_against_an_independent_computation(source):
    data = ablation(source, h=4, seed=0, off=2)
    if source == "toy sentence":
        x, p = toy.toy_embeddings(), toy.toy_params()
    else:
        x = np.random.default_rng(0).standard_normal((11, 64))
        p = mha.init_params(64, 4, seed=0)
    out = mha.multi_head_attention_loop(x, x, x, p)[0]
    np.testing.assert_allclose(data["out"], out, atol=1e-12)
    for i in range(4):
        # zero head i's rows of W^O by hand
        w_o = p.w_o.copy()
        w_o[i * p.d_k : (i + 1) * p.d_k] = 0
        other = mha.multi_head_attention_loop(x, x, x, dataclasses.replace(p, w_o=w_o))[0]
        assert data["changes"][i] == pytest.approx(np.linalg.norm(out - other) / np.linalg.norm(out))
    np.testing.assert_allclose(data["delta"], data["contribution"], atol=1e-12)


def test_toy_ablation_only_touches_the_heads_own_columns():
    for i in range(toy.H):
        delta = ablation("toy sentence", off=i)["delta"]
        own = slice(i * toy.D_K, (i + 1) * toy.D_K)
        assert np.abs(delta[:, own]).max() > 0.3  # the broad head spreads: its largest entry is 4/11
        assert np.abs(np.delete(delta, np.r_[own], axis=1)).max() < 1e-12  # W^O = I: nothing else moves
    none = ablation("toy sentence", off=NONE)
    assert not none["delta"].any()


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"source": "x"}, "source"), ({"source": "random", "h": 3}, "h"), ({"off": 4}, "off"), ({"off": True}, "off")],
)
def test_ablation_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name}:"):
        ablation(**kwargs)


def test_explorer_shows_the_selected_change_and_every_heads_bar():
    e = ablation_explorer()
    assert e.error is None and e.data["off"] == 0
    assert [b.get_height() for b in e.bars] == pytest.approx(list(e.data["changes"]))
    # Shown in units of the largest |output| entry, on a fixed -1..1 colour scale.
    np.testing.assert_allclose(e.im.get_array(), e.data["delta"] / np.abs(e.data["out"]).max())
    assert e.im.get_clim() == (-1, 1)
    png = e.image.value
    e.controls["off"].value = 3
    assert e.image.value != png
    three = ablation("toy sentence", off=3)
    np.testing.assert_allclose(e.im.get_array(), three["delta"] / np.abs(three["out"]).max())
    colours = [b.get_facecolor() for b in e.bars]
    assert colours[3] != colours[0]  # the switched-off head is highlighted
    assert e.controls["h"].disabled and e.controls["seed"].disabled
    assert e.controls["h"].value == toy.toy_params().h == e.data["h"]  # the value in use, not a stale one
    assert e.controls["seed"].layout.visibility == "hidden"  # the toy sentence has no seed


def test_explorer_offers_only_existing_heads():
    e = ablation_explorer()
    e.controls["source"].value = "random"
    assert not e.controls["h"].disabled
    e.controls["h"].value = 8
    assert [v for _, v in e.controls["off"].options] == [NONE, *range(8)] and len(e.bars) == 8
    e.controls["off"].value = 6
    e.controls["h"].value = 2  # head 6 no longer exists: the control falls back to "none"
    assert e.controls["off"].value == NONE and e.error is None and len(e.bars) == 2
    e.controls["source"].value = "toy sentence"
    assert [v for _, v in e.controls["off"].options] == [NONE, *range(toy.toy_params().h)]


def test_random_input_gives_back_the_learners_h_and_seed_and_their_picture():
    e = ablation_explorer(source="random", h=8, seed=5, off=6)
    e.controls["source"].value = "toy sentence"
    assert (e.controls["h"].value, e.data["h"], len(e.bars)) == (toy.toy_params().h,) * 3
    assert e.controls["off"].value == NONE  # head 6 does not exist in the toy
    e.set(off=2)
    e.controls["source"].value = "random"
    assert (e.controls["h"].value, e.controls["seed"].value) == (8, 5)
    assert not e.controls["h"].disabled and e.controls["seed"].layout.visibility is None
    assert e.image.value == ablation_explorer(source="random", h=8, seed=5, off=2).image.value


def test_blitted_moves_show_the_same_picture_as_a_full_redraw():
    e = ablation_explorer()
    for name, value in (("off", 2), ("source", "random"), ("seed", 3), ("off", 1), ("h", 8), ("off", -1)):
        e.controls[name].value = value
        blitted = e.image.value
        e.invalidate_background()
        assert blitted == e.render_png(), name


def test_the_bars_name_the_toy_heads_and_number_random_ones():
    e = ablation_explorer()
    labels = [t.get_text() for t in e.ax_bars.get_xticklabels()]
    assert labels == [f"{i}\n{name}" for i, name in enumerate(toy.HEAD_NAMES)]  # two lines under the wide bars
    assert list(e.controls["off"].tooltips) == ["every head on", *toy.HEAD_NAMES]  # the buttons say it on hover
    e.set(source="random", h=4)  # the same number of bars, so only the labels tell the sources apart
    assert [t.get_text() for t in e.ax_bars.get_xticklabels()] == ["0", "1", "2", "3"]
    e.set(h=16)
    assert [t.get_text() for t in e.ax_bars.get_xticklabels()] == [str(i) for i in range(16)]
    e.set(source="toy sentence")
    assert [t.get_text() for t in e.ax_bars.get_xticklabels()] == labels


def readout_lines(html: str) -> list[str]:
    """The readout's lines as text (tags dropped)."""
    return [re.sub(r"<[^>]+>", "", line) for line in html.split("<br>")]


@pytest.mark.parametrize("source, h", [("toy sentence", 4), ("random", 16), ("random", 1)])
def test_the_readout_has_the_same_lines_for_every_choice(source, h):
    """The readout for "none" and for a head used to take one and two lines: the page jumped 28 px. Every choice
    now writes READOUT_LINES short lines, in a readout that tall."""
    e = ablation_explorer(source=source, h=h, off=NONE)
    assert e.text.layout.min_height == f"{READOUT_LINES * 28}px"
    for off in (NONE, *range(e.data["h"])):
        e.controls["off"].value = off
        shown = readout_lines(e.text.value)
        assert len(shown) == READOUT_LINES, shown
        # short enough not to wrap beside the file browser at 1024 px (about 590 px: 80 characters of 13 px text)
        assert max(map(len, shown)) <= 80, shown
        if off == NONE:
            biggest = int(np.argmax(e.data["changes"]))
            assert f"{e.data['names'][biggest]}, {e.data['changes'][biggest]:.0%}" in shown[2]
        else:
            assert f"{e.data['changes'][off]:.0%} of its size" in shown[1] and e.data["names"][off] in shown[0]


def panels(fig) -> list:
    """fig's axes and their inset axes (the colour bar)."""
    return [inner for ax in fig.get_axes() for inner in (ax, *ax.child_axes)]


def shown_texts(fig) -> list:
    """Every visible, non-empty text of fig: titles, axis labels, tick labels (the colour bar's too)."""
    texts = []
    for ax in panels(fig):
        texts += [ax.title, ax.xaxis.label, ax.yaxis.label]
        for axis in (ax.xaxis, ax.yaxis):  # the drawn tick labels: those inside the axis' limits
            low, high = sorted(axis.get_view_interval())
            ticks = zip(axis.get_majorticklocs(), axis.get_majorticklabels(), strict=True)
            texts += [label for loc, label in ticks if low - 1e-9 <= loc <= high + 1e-9]
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


@pytest.mark.parametrize("source, h", [("toy sentence", 4), ("random", 16), ("random", 1)])
def test_no_text_overlaps_another_or_a_panel_and_all_stay_inside_the_figure(source, h):
    """Stacked to fit a laptop (bars on top, the map below, its colour bar under it): at every choice each title,
    label and tick label lies inside the figure, apart from every other and from every panel and the colour bar."""
    e = ablation_explorer(source=source, h=h, off=NONE)
    size = e.css_size()
    for off in (NONE, *range(e.data["h"])):
        e.controls["off"].value = off
        assert e.css_size() == size
        renderer = e.canvas.get_renderer()
        e.figure.draw(renderer)
        boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in shown_texts(e.figure)]
        frames = [ax.get_window_extent(renderer) for ax in panels(e.figure)]
        assert len(frames) == 3 and len(boxes) > 20
        whole = e.figure.bbox
        for k, (name, box) in enumerate(boxes):
            assert whole.x0 <= box.x0 and box.x1 <= whole.x1 and whole.y0 <= box.y0 and box.y1 <= whole.y1, name
            assert not any(box.overlaps(frame) for frame in frames), (off, name)
            for other, box2 in boxes[k + 1 :]:
                assert not box.overlaps(box2), (off, name, other)


# ---------------------------------------------------------------------------------------------- the block schematic
@pytest.mark.parametrize(("h", "d_k", "n"), [(4, 4, 8), (2, 3, 5)])
def test_block_schematic_colours_each_heads_columns_its_rows_of_w_o_and_its_full_width_term_alike(h, d_k, n):
    """The schematic's claim, read back from what it draws: head i's block of the concatenation is d_k columns wide
    and n tall, W^O_i is d_k rows of the full d_model width, head i's term is n x d_model, all in head i's colour."""
    from matplotlib.colors import to_rgba
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    from mha_lesson.plots.output_projection import CELL, block_product, head_colour

    ax = Figure().subplots()
    block_product(ax, h=h, d_k=d_k, n=n)
    d_model = h * d_k
    filled = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_fill()]
    assert len(filled) == 3 * h  # per head: its columns, its rows of W^O, its term
    for i in range(h):
        colour = to_rgba(head_colour(i))[:3]
        sizes = sorted(
            (round(p.get_width() / CELL), round(p.get_height() / CELL))
            for p in filled
            if p.get_facecolor()[:3] == pytest.approx(colour)
        )
        assert sizes == sorted([(d_k, n), (d_model, d_k), (d_model, n)]), i
    texts = {t.get_text() for t in ax.texts}
    assert {f"head$_{i}$" for i in range(h)} | {f"$W^O_{i}$" for i in range(h)} <= texts
    assert any(f"{n} × {d_model}" in t for t in texts)


def test_block_schematic_refuses_a_bad_size_naming_it():
    from matplotlib.figure import Figure

    from mha_lesson.plots.output_projection import block_product

    with pytest.raises(ValueError, match="^d_k: expected"):
        block_product(Figure().subplots(), h=4, d_k=0, n=8)
