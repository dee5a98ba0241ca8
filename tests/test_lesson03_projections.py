"""Lesson 3's claims (one product for all heads, tied heads collapse into one), the seeded embeddings, the 2-D
plane, and the projection explorer: moving a control changes exactly what it should."""

import dataclasses
import io
import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import Image

import mha_lesson as mha
from mha_lesson.embeddings import EXAMPLE_TOKENS, random_token_embeddings
from mha_lesson.plots import style
from mha_lesson.plots.projections import place_labels, set_token_plane, token_plane
from mha_lesson.widgets import divisors
from mha_lesson.widgets.projections import (
    EMBEDDING_SCALE,
    HEADS,
    ProjectionExplorer,
    plane,
    projection_explorer,
    projection_view,
    tied_heads,
)


def lesson_inputs(h=4, seed=0):
    """The notebook's tokens and parameters: d_model = 16."""
    x = random_token_embeddings(EXAMPLE_TOKENS, 16, seed=0, scale=EMBEDDING_SCALE)
    return x, mha.init_params(16, h, seed=seed)


# ---------------------------------------------------------------------------------------------- embeddings
def test_embeddings_are_seeded_and_a_repeated_token_gets_the_same_row():
    tokens = ("the", "cat", "saw", "the", "dog")
    a = random_token_embeddings(tokens, 6, seed=1)
    assert a.shape == (5, 6) and a.dtype == np.float64
    np.testing.assert_array_equal(a, random_token_embeddings(tokens, 6, seed=1))
    np.testing.assert_array_equal(a[0], a[3])
    assert len({row.tobytes() for row in a}) == 4  # four distinct tokens, four distinct rows
    assert not np.array_equal(a, random_token_embeddings(tokens, 6, seed=2))
    np.testing.assert_allclose(random_token_embeddings(tokens, 6, seed=1, scale=3.0), 3 * a)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"tokens": ()}, "tokens"),
        ({"tokens": "cat"}, "tokens"),
        ({"tokens": ("a", 1)}, "tokens"),
        ({"d_model": 0}, "d_model"),
        ({"seed": -1}, "seed"),
        ({"scale": 0.0}, "scale"),
        ({"scale": float("inf")}, "scale"),
    ],
)
def test_embeddings_refuse_bad_input_naming_the_argument(kwargs, name):
    args = {"tokens": ("a", "b"), "d_model": 4, "seed": 0, "scale": 1.0} | kwargs
    with pytest.raises(ValueError, match=f"^{name}: expected"):
        random_token_embeddings(**args)


# ---------------------------------------------------------------------------------------------- one product, all heads
def test_shapes_the_lesson_prints():
    x, p = lesson_inputs()
    assert x.shape == (8, 16) and p.d_k == 4
    assert p.w_q_head(1).shape == (16, 4) and (x @ p.w_q_head(1)).shape == (8, 4)


@given(st.sampled_from([(d, h) for d in (4, 12, 16, 24) for h in divisors(d)]), st.integers(1, 9))
def test_one_product_with_w_q_holds_every_heads_projection(size, n):
    d_model, h = size
    p = mha.init_params(d_model, h, seed=n)
    x = np.random.default_rng(n).normal(size=(n, d_model))
    d_k = d_model // h
    np.testing.assert_array_equal(np.hstack([p.w_q_head(j) for j in range(h)]), p.w_q)
    Q = x @ p.w_q
    heads = mha.split_heads(Q, h)  # (h, n, d_k)
    for j in range(h):
        own = np.einsum("nd,dk->nk", x, p.w_q[:, j * d_k : (j + 1) * d_k])  # head j alone, another code path
        np.testing.assert_allclose(Q[:, j * d_k : (j + 1) * d_k], own, atol=1e-12)
        np.testing.assert_allclose(heads[j], own, atol=1e-12)


# ---------------------------------------------------------------------------------------------- tied heads
def test_tied_heads_compute_one_pattern_and_collapse_into_one_head():
    x, p = lesson_inputs()
    tied = tied_heads(p)
    out, weights, trace = mha.multi_head_attention_loop(x, x, x, tied, return_trace=True)
    for j in range(4):
        np.testing.assert_array_equal(weights[j], weights[0])
        np.testing.assert_array_equal(tied.w_q_head(j), p.w_q_head(0))
    assert np.linalg.matrix_rank(trace["concat"]) == 4 == np.linalg.matrix_rank(tied.w_q)
    one_head = trace["head_i"][0] @ sum(tied.w_o_head(j) for j in range(4))
    np.testing.assert_allclose(out, one_head, atol=1e-12)
    np.testing.assert_array_equal(tied.w_o, p.w_o)


def test_tied_heads_copy_head_zeros_biases_too():
    rng = np.random.default_rng(0)
    p = dataclasses.replace(mha.init_params(8, 2, bias=True), **{b: rng.normal(size=8) for b in ("b_q", "b_k", "b_v")})
    tied = tied_heads(p)
    for name in ("b_q", "b_k", "b_v"):
        np.testing.assert_array_equal(tied.b_head(name, 1), p.b_head(name, 0))
    _, weights = mha.multi_head_attention(
        rng.normal(size=(5, 8)), rng.normal(size=(5, 8)), rng.normal(size=(5, 8)), tied
    )
    np.testing.assert_allclose(weights[1], weights[0], atol=1e-15)


def test_own_projections_give_different_patterns_and_full_rank():
    x, p = lesson_inputs()
    _, weights, trace = mha.multi_head_attention_loop(x, x, x, p, return_trace=True)
    assert min(np.abs(weights[j] - weights[0]).max() for j in range(1, 4)) > 0.5
    assert np.linalg.matrix_rank(trace["concat"]) == 8 and np.linalg.matrix_rank(p.w_q) == 16


# ---------------------------------------------------------------------------------------------- the 2-D plane
def test_coordinates_view_is_the_first_two_columns():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    q2, k2, kept = plane(q, k, "coords")
    np.testing.assert_array_equal(q2, q[:, :2])
    np.testing.assert_array_equal(k2, k[:, :2])
    both = np.vstack([q, k])
    assert kept == pytest.approx((both[:, :2] ** 2).sum() / (both**2).sum())


@given(st.integers(0, 10_000), st.integers(2, 6))
def test_best_plane_keeps_the_top_two_eigenvalues_and_beats_the_coordinates(seed, d_k):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(5, d_k)), rng.normal(size=(5, d_k))
    q2, k2, kept = plane(q, k, "pca")
    both = np.vstack([q, k])
    eig = np.linalg.eigvalsh(both.T @ both)  # ascending
    assert kept == pytest.approx(eig[-2:].sum() / eig.sum())
    assert kept >= plane(q, k, "coords")[2] - 1e-12
    # An orthonormal basis keeps lengths of what it keeps: projected dot products are q P P^T k.
    assert (q2**2).sum() + (k2**2).sum() == pytest.approx(kept * (both**2).sum())
    if d_k == 2:  # the plane is the whole space: dot products exact
        np.testing.assert_allclose(q2 @ k2.T, q @ k.T, atol=1e-10)


def test_plane_refuses_a_bad_view_or_shape():
    q = np.ones((3, 4))
    with pytest.raises(ValueError, match="^view: expected"):
        plane(q, q, "tsne")
    with pytest.raises(ValueError, match="^q, k: expected"):
        plane(q[:, :1], q[:, :1])


def label_boxes(labels, renderer):
    """Each label's text box as rendered, in pixels."""
    return [Text.get_window_extent(t, renderer) for t in labels]


def overlapping(labels, boxes):
    """The pairs of label texts whose rendered boxes overlap."""
    pairs = itertools.combinations(range(len(labels)), 2)
    return [(labels[i].get_text(), labels[j].get_text()) for i, j in pairs if boxes[i].overlaps(boxes[j])]


def outside(ax, labels, boxes):
    """The label texts whose rendered boxes leave the axes."""
    frame = ax.bbox
    return [
        t.get_text()
        for t, b in zip(labels, boxes, strict=True)
        if b.x0 < frame.x0 or b.y0 < frame.y0 or b.x1 > frame.x1 or b.y1 > frame.y1
    ]


@pytest.mark.parametrize("dpi", [72, 100, 160])
def test_labels_of_points_that_nearly_coincide_do_not_cover_each_other(dpi):
    fig = Figure(dpi=dpi)
    canvas, ax = FigureCanvasAgg(fig), fig.subplots()
    plane = token_plane(ax, ("my", "old", "warm", "the"))
    q2 = np.array([[1.0, 1.0], [1.0, 1.0], [1.02, 1.01], [-2.0, -2.0]])  # three queries on one spot
    set_token_plane(ax, plane, q2, q2 + 0.01, query=0, weights=np.array([0.5, 0.3, 0.2, 0.0]))  # keys beside them
    canvas.draw()
    labels, renderer = plane.labels, canvas.get_renderer()
    boxes = label_boxes(labels, renderer)
    assert not overlapping(labels, boxes) and not outside(ax, labels, boxes)
    anchors = ax.transData.transform(np.concatenate([q2, q2 + 0.01]))
    leaders = [ax.transData.transform(s) for s in plane.leaders.get_segments()]  # display pixels, point -> label
    leader_colours = [to_hex(c) for c in plane.leaders.get_colors()]
    far = 0
    for i, (label, box, xy) in enumerate(zip(labels, boxes, anchors, strict=True)):
        nearest = np.clip(xy, box.p0, box.p1)  # the point of the text's box nearest its marker
        gap = np.hypot(*(nearest - xy)) * 72 / dpi  # in points
        # Next to its marker a label is at most its ring's radius and a small gap off, diagonally (< 12 pt); a label
        # pushed away is at least a line farther, and has a leader in its token's colour from its marker to its box.
        if gap < 12:
            continue
        far += 1
        ends = [
            c
            for s, c in zip(leaders, leader_colours, strict=True)
            if np.hypot(*(s[0] - xy)) < 7 * dpi / 72 and np.hypot(*(s[1] - nearest)) < 1.5
        ]
        assert ends == [to_hex(plane.colours[i % 4])], f"{label.get_text()!r}: {gap:.0f} pt away, leaders {ends}"
    assert far == len(leaders) >= 1  # three queries on one spot: some label had to move away; only those have leaders


@given(st.integers(0, 10_000), st.integers(1, 24), st.floats(0.02, 1.0))
def test_placed_labels_never_meet_and_stay_inside(seed, m, spread):
    """However the points crowd (spread: the share of the area they occupy), the boxes keep apart and inside."""
    rng = np.random.default_rng(seed)
    bounds = (10.0, 20.0, 310.0, 320.0)
    anchors = 165 + rng.uniform(-150, 150, size=(m, 2)) * spread + (0, 5)
    sizes = np.column_stack([rng.uniform(15, 45, m), np.full(m, 12.0)])
    up = rng.choice([-1, 1], m)
    centres, near = place_labels(anchors, sizes, bounds, np.full(m, 3.0), up, pad=2.0)
    boxes = np.hstack([centres - sizes / 2, centres + sizes / 2])
    assert (boxes[:, :2] >= np.array(bounds[:2]) + 1 - 1e-9).all() and (
        boxes[:, 2:] <= np.array(bounds[2:]) - 1 + 1e-9
    ).all()
    for i, j in itertools.combinations(range(m), 2):  # separated by at least the pad along x or along y
        apart = max(
            boxes[j, 0] - boxes[i, 2], boxes[i, 0] - boxes[j, 2], boxes[j, 1] - boxes[i, 3], boxes[i, 1] - boxes[j, 3]
        )
        assert apart >= 2.0 - 1e-9, (i, j)
    # a label "next to" its point touches the point's rim plus the gap, and does not cover the point
    for (x, y), (x0, y0, x1, y1), is_near in zip(anchors, boxes, near, strict=True):
        d = np.hypot(max(x0 - x, 0, x - x1), max(y0 - y, 0, y - y1))
        assert d >= 3.0 - 1e-9
        if is_near:
            assert d <= (3.0 + 2.0) * np.sqrt(2) + 1e-9


def test_place_labels_prefers_the_corner_above_right_for_queries_and_below_right_for_keys():
    anchors = np.array([[100.0, 100.0], [200.0, 200.0]])
    sizes = np.array([[20.0, 10.0], [20.0, 10.0]])
    centres, near = place_labels(anchors, sizes, (0, 0, 300, 300), np.full(2, 3.0), np.array([1, -1]), gap=2.0)
    np.testing.assert_allclose(centres, [[100 + 5 + 10, 100 + 5 + 5], [200 + 5 + 10, 200 - 5 - 5]])
    assert near.all()
    with pytest.raises(ValueError, match="^order: expected a permutation"):
        place_labels(anchors, sizes, (0, 0, 300, 300), np.full(2, 3.0), np.array([1, -1]), order=[0, 0])


# ---------------------------------------------------------------------------------------------- projection_view
def test_projection_view_is_what_the_notebook_computes():
    x, p = lesson_inputs()
    view = projection_view(h=4, head=1, seed=0)
    np.testing.assert_array_equal(view["q"], x @ p.w_q_head(1))
    np.testing.assert_array_equal(view["k"], x @ p.w_k_head(1))
    _, weights = mha.multi_head_attention_loop(x, x, x, p)
    np.testing.assert_array_equal(view["weights"], weights[1])
    assert view["columns"] == (4, 8) and view["d_k"] == 4 and view["tokens"] == EXAMPLE_TOKENS


@pytest.mark.parametrize(("kwargs", "name"), [({"head": 4}, "head"), ({"head": -1}, "head"), ({"h": 3}, "h")])
def test_projection_view_refuses_an_invalid_head_or_h(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name}: expected"):
        projection_view(**kwargs)


# ---------------------------------------------------------------------------------------------- the explorer
def offsets(explorer):
    return explorer.plane.queries.get_offsets(), explorer.plane.keys.get_offsets()


def test_explorer_defaults_show_head_zero_of_four():
    e = projection_explorer()
    assert isinstance(e, ProjectionExplorer) and e.error is None and e.image.value
    assert e.values() == {"h": 4, "head": 0, "view": "pca", "shared": False, "seed": 0, "query": 0}
    view = projection_view()
    q_off, k_off = offsets(e)
    np.testing.assert_allclose(q_off, view["q2"])
    np.testing.assert_allclose(k_off, view["k2"])
    np.testing.assert_array_equal(e.im.get_array(), view["weights"])
    assert "(8, 4)" in e.text.value


def test_moving_the_head_moves_the_points_and_changes_the_map():
    e = projection_explorer()
    png, weights = e.image.value, np.array(e.im.get_array())
    e.controls["head"].value = 2
    np.testing.assert_array_equal(e.im.get_array(), projection_view(head=2)["weights"])
    np.testing.assert_allclose(offsets(e)[0], projection_view(head=2)["q2"])
    assert not np.allclose(e.im.get_array(), weights) and e.image.value != png
    assert "head 2" in e.ax_map.get_title()


def test_shared_projections_give_every_head_the_same_picture():
    e = projection_explorer()
    e.controls["shared"].value = True
    maps, positions = [], set()
    for j in range(4):
        e.controls["head"].value = j
        maps.append(np.array(e.im.get_array()))
        positions.add(offsets(e)[0].tobytes())
    for m in maps[1:]:
        np.testing.assert_array_equal(m, maps[0])
    assert len(positions) == 1  # the queries sit in the same places for every head
    assert "share head 0's W" in e.text.value


def test_coordinates_view_plots_the_first_two_coordinates():
    e = projection_explorer()
    e.controls["view"].value = "coords"
    view = projection_view(view="coords")
    np.testing.assert_allclose(offsets(e)[0], view["q"][:, :2])
    assert "coordinate 0" in e.ax_plane.get_xlabel()


def test_h_offers_only_heads_with_a_plane_and_the_head_control_follows():
    e = projection_explorer()
    assert tuple(e.controls["h"].options) == HEADS == (1, 2, 4, 8)
    e.set(head=3)
    e.controls["h"].value = 8
    assert tuple(e.controls["head"].options) == tuple(range(8)) and e.controls["head"].value == 3
    e.controls["h"].value = 2  # head 3 no longer exists: the nearest valid one is 1
    assert e.controls["head"].value == 1 and e.error is None
    assert e.data["d_k"] == 8 and "(8, 8)" in e.text.value


def test_seed_changes_the_weights_but_not_the_tokens():
    e = projection_explorer()
    before = np.array(e.im.get_array())
    e.controls["seed"].value = 5
    np.testing.assert_array_equal(e.im.get_array(), projection_view(seed=5)["weights"])
    assert not np.allclose(before, e.im.get_array())


def test_the_blitted_picture_matches_a_full_redraw():
    e = projection_explorer()
    e.set(h=8, head=3, view="coords")  # every moving part has moved, the map's title too
    blit = np.asarray(Image.open(io.BytesIO(e.image.value)).convert("RGBA")).astype(int)
    for artist in e.moving:  # draw everything the normal way, once
        artist.set_animated(False)
    e.canvas.draw()
    full = np.asarray(e.canvas.buffer_rgba()).astype(int)
    height = full.shape[0]
    boxes = [ax.bbox.extents for ax in e.figure.axes] + [e.ax_map.title.get_window_extent().extents]
    for x0, y0, x1, y1 in boxes:  # inside each panel and the title; the frames are drawn twice when blitting
        rows, cols = slice(int(height - y1) + 3, int(height - y0) - 3), slice(int(x0) + 3, int(x1) - 3)
        inside = np.abs(blit[rows, cols] - full[rows, cols]).max(axis=-1) > 40
        assert inside.mean() < 0.001, f"box at {x0:.0f},{y0:.0f} differs in {inside.mean():.2%} of its pixels"


def test_tied_projections_each_read_d_k_directions_but_not_the_same_ones():
    """Lesson 3: with shared W's, queries, keys and values each see only d_k directions of the features, and the
    three sets of directions differ (together up to 3·d_k)."""
    params = mha.init_params(16, 4, seed=0)
    tied = tied_heads(params)
    assert [np.linalg.matrix_rank(getattr(tied, w)) for w in ("w_q", "w_k", "w_v")] == [4, 4, 4]
    assert np.linalg.matrix_rank(np.hstack([tied.w_q, tied.w_k, tied.w_v])) == 12
    # A change of the input that W^Q cannot see (orthogonal to its d_k column directions) still moves the keys.
    basis = np.linalg.svd(tied.w_q_head(0))[0]  # (16, 16): first d_k columns span what the queries read
    z = basis[:, -1]  # orthogonal to every column of W_0^Q
    x = random_token_embeddings(EXAMPLE_TOKENS, 16, seed=0)
    np.testing.assert_allclose((x + z) @ tied.w_q, x @ tied.w_q, atol=1e-12)
    assert np.abs((x + z) @ tied.w_k - x @ tied.w_k).max() > 1e-3


def test_glorot_uniform_gives_weights_of_variance_one_over_d_model_and_unit_variance_queries():
    """The lesson's numbers: bound a = sqrt(6 / (2 d_model)), Var(w) = a²/3 = 1/d_model, Var(x W) ≈ 1."""
    for d in (16, 256):
        w_q = mha.init_params(d, 4, seed=0).w_q
        a = np.sqrt(6 / (2 * d))
        assert np.abs(w_q).max() <= a and np.abs(w_q).max() > 0.98 * a
        assert w_q.var() == pytest.approx(1 / d, rel=0.15 if d == 16 else 0.03)
    x = np.random.default_rng(1).normal(size=(20_000, 256))
    assert (x @ mha.init_params(256, 4, seed=0).w_q).var() == pytest.approx(1.0, rel=0.05)


def test_sharing_only_keys_and_values_keeps_the_heads_apart():
    """Multi-query attention (h_kv = 1): one W^K, W^V block for all heads, own W^Q blocks, different maps."""
    mqa = mha.init_params(16, 4, h_kv=1, seed=0)
    assert mqa.w_k.shape == mqa.w_v.shape == (16, 4)
    assert all(np.array_equal(mqa.w_k_head(i), mqa.w_k_head(0)) for i in range(4))
    x = random_token_embeddings(EXAMPLE_TOKENS, 16, seed=0, scale=EMBEDDING_SCALE)
    _, w = mha.multi_head_attention(x, x, x, mqa)
    assert np.abs(w - w[0]).max() > 0.5  # the lesson prints 0.98


@pytest.mark.parametrize("h", HEADS)
def test_at_every_h_the_drawn_labels_keep_apart_and_inside_the_plane(h):
    """Every head of every h the explorer offers, in both views: no two labels' rendered boxes meet (the issue: 'old'
    and 'warm' ran into 'olwarm' at h = 1 and h = 8), and each stays inside the plane's axes."""
    e = projection_explorer(h=h)
    renderer = e.canvas.get_renderer()
    for view in ("pca", "coords"):
        for head in range(h):
            e.set(head=head, view=view, query=(head + 3) % 8)  # the ringed query's label is placed first
            assert e.error is None
            labels = e.plane.labels
            boxes = label_boxes(labels, renderer)
            assert not overlapping(labels, boxes), (view, head)
            assert not outside(e.ax_plane, labels, boxes), (view, head)
            # each label says its token, next to a marker of its token's colour (queries first, then keys)
            assert [t.get_text() for t in labels] == [*EXAMPLE_TOKENS, *EXAMPLE_TOKENS]


def test_the_plane_is_300_css_pixels_square_and_drawn_at_twice_the_pixels():
    e = projection_explorer()
    assert e.pixel_ratio == 2 and e.figure.dpi == 2 * e.css_dpi
    width, height = e.ax_plane.bbox.width / e.pixel_ratio, e.ax_plane.bbox.height / e.pixel_ratio
    assert width >= 300 and height == pytest.approx(width)
    assert e.css_size()[0] <= style.CELL_WIDTH_PX


def test_each_token_has_one_colour_in_the_plane_and_on_the_map():
    e = projection_explorer()
    colours = [to_hex(c) for c in e.plane.colours]
    assert len(set(colours)) == len(EXAMPLE_TOKENS)  # eight tokens, eight colours
    np.testing.assert_array_equal(e.plane.queries.get_facecolors(), e.plane.keys.get_facecolors())
    assert [to_hex(c) for c in e.plane.queries.get_facecolors()] == colours
    assert [to_hex(t.get_color()) for t in e.plane.q_text] == colours == [to_hex(t.get_color()) for t in e.plane.k_text]
    e.canvas.draw()  # tick labels as drawn
    rows = {t.get_text(): to_hex(t.get_color()) for t in e.ax_map.get_yticklabels()}
    columns = {t.get_text(): to_hex(t.get_color()) for t in e.ax_map.get_xticklabels()}
    assert rows == columns == dict(zip(EXAMPLE_TOKENS, colours, strict=True))


@pytest.mark.parametrize(("h", "head", "query"), [(4, 0, 0), (1, 0, 5), (8, 6, 7), (2, 1, 3)])
def test_the_chosen_query_is_the_framed_row_and_the_ringed_point(h, head, query):
    e = projection_explorer()
    e.set(h=h, head=head, query=query)
    view = projection_view(h=h, head=head)
    # the map's frame spans exactly row `query`
    outline = e.row_outline
    assert (outline.get_y() + 0.5, outline.get_height(), outline.get_width()) == (query, 1, len(EXAMPLE_TOKENS))
    assert e.row_outline.get_visible()
    # the ring sits on that token's query point, and is drawn
    np.testing.assert_allclose(e.plane.ring.get_offsets(), view["q2"][query : query + 1])
    np.testing.assert_allclose(e.plane.queries.get_offsets()[query], view["q2"][query])
    assert e.plane.ring.get_visible() and e.plane.query == query
    # its lines go from that query to the keys, as thick as the framed row's weights (those of at least 0.01)
    row = view["weights"][query]
    shown = np.flatnonzero(row >= 0.01)
    segments = e.plane.weight_lines.get_segments()
    assert len(segments) == len(shown)
    for segment, j in zip(segments, shown, strict=True):
        np.testing.assert_allclose(segment, [view["q2"][query], view["k2"][j]])
    np.testing.assert_allclose(e.plane.weight_lines.get_linewidths(), 6 * row[shown])
    np.testing.assert_array_equal(e.im.get_array()[query], row)
    # the text says which query it is, in the map's title and the readout
    token = EXAMPLE_TOKENS[query]
    assert f"query “{token}” framed" in e.ax_map.get_title()
    assert f"The framed row of the map is the query “{token}”" in e.text.value


def test_moving_the_query_moves_only_the_highlight():
    e = projection_explorer()
    before = (offsets(e)[0].copy(), np.array(e.im.get_array()), e.background_key())
    e.controls["query"].value = 4
    np.testing.assert_array_equal(offsets(e)[0], before[0])
    np.testing.assert_array_equal(e.im.get_array(), before[1])
    assert e.background_key() == before[2]  # no background to paint: only moving artists change
    assert e.row_outline.get_y() == 3.5
