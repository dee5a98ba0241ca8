"""Lesson 4's attention-map explorer: its pure compute function and what the controls change."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha_lesson as mha
from mha_lesson.demos import toy
from mha_lesson.plots import style
from mha_lesson.widgets import divisors
from mha_lesson.widgets.attention_maps import (
    DECADES,
    MAX_HEADS,
    MAX_N,
    attention_map_explorer,
    attention_maps,
    shown_maps,
)


def test_toy_source_gives_the_toy_weights_and_labels():
    data = attention_maps("toy sentence")
    np.testing.assert_array_equal(data["weights"], toy.toy_weights())
    assert data["tokens"] == toy.TOKENS and (data["h"], data["d_model"]) == (toy.H, toy.D_MODEL)
    causal = attention_maps("toy sentence", causal=True)["weights"]
    assert np.all(np.triu(causal, k=1) == 0)


@given(
    d_model=st.sampled_from([8, 16, 32, 64]),
    h_index=st.integers(0, 4),
    n=st.integers(1, 20),
    seed=st.integers(0, 20),
    causal=st.booleans(),
)
def test_random_source_matches_the_loop(d_model, h_index, n, seed, causal):
    hs = [d for d in divisors(d_model) if d <= MAX_HEADS]
    h = hs[h_index % len(hs)]
    data = attention_maps("random", d_model, h, n, seed, causal)
    x = np.random.default_rng(seed).standard_normal((n, d_model))
    p = mha.init_params(d_model, h, seed=seed)
    _, w = mha.multi_head_attention_loop(x, x, x, p, mha.causal_mask(n) if causal else None)
    np.testing.assert_allclose(data["weights"], w, atol=1e-12)
    np.testing.assert_allclose(data["weights"].sum(axis=-1), 1.0)
    assert data["tokens"] is None and data["d_k"] == d_model // h


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"source": "poem"}, "source"),
        ({"source": "random", "d_model": 64, "h": 3}, "h"),
        ({"source": "random", "d_model": 64, "h": 32}, "h"),
        ({"source": "random", "n": MAX_N + 1}, "n"),
        ({"source": "random", "n": 0}, "n"),
    ],
)
def test_bad_input_raises(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name}:"):
        attention_maps(**kwargs)


def test_explorer_draws_each_head_with_queries_on_rows():
    e = attention_map_explorer(source="toy sentence")
    assert e.error is None and len(e.images) == toy.H
    for i, (im, w) in enumerate(zip(e.images, e.data["weights"], strict=True)):
        np.testing.assert_array_equal(im.get_array(), w)
        # keys on columns, labelled once per column of the two by two grid, on top (every panel has the same keys)
        keys = [t.get_text() for t in im.axes.get_xticklabels()]
        assert (keys, "key" in im.axes.get_xlabel()) == ((list(toy.TOKENS), True) if i < 2 else ([], False)), i
        # queries on rows, labelled once per row of panels, on the left (every panel has the same queries)
        queries = [t.get_text() for t in im.axes.get_yticklabels()]
        assert (queries, "query" in im.axes.get_ylabel()) == ((list(toy.TOKENS), True) if i % 2 == 0 else ([], False))
    # the toy fixes d_model, h, n and seed: their sliders are pinned (seed hidden: the toy has none)
    assert all(e.controls[c].disabled for c in ("d_model", "h", "n", "seed"))
    assert e.controls["seed"].layout.visibility == "hidden"
    png = e.image.value
    e.controls["causal"].value = True
    assert e.image.value != png and np.all(np.triu(e.images[1].get_array(), k=1) == 0)


def test_random_controls_change_the_maps():
    e = attention_map_explorer()
    assert e.data["source"] == "random" and not e.controls["n"].disabled
    first = e.images[0].get_array().copy()
    e.controls["seed"].value = 5
    assert not np.array_equal(e.images[0].get_array(), first)
    images = list(e.images)
    e.controls["n"].value = 40  # same layout: the images are updated in place, not rebuilt
    assert e.images == images and e.images[0].get_array().shape == (40, 40)
    e.controls["h"].value = 8
    assert len(e.images) == 8


def test_h_only_offers_divisors_of_d_model_up_to_the_panel_cap():
    e = attention_map_explorer()
    for d_model in (256, 8, 16):
        e.controls["d_model"].value = d_model
        options = list(e.controls["h"].options)
        assert options == [d for d in divisors(d_model) if d <= MAX_HEADS]
        assert e.controls["h"].value in options and e.error is None
        assert e.data["d_model"] % e.data["h"] == 0


def test_largest_values_drop_the_token_labels():
    e = attention_map_explorer()
    e.set(d_model=256, h=16, n=MAX_N, causal=True)
    assert e.error is None and len(e.images) == 16
    assert e.images[0].get_array().shape == (MAX_N, MAX_N)
    texts = [t.get_text() for t in e.images[0].axes.texts]
    assert texts == ["key (attended to)", "query (attending)"]  # the axis labels only: no per-cell annotations
    assert all(label.get_text().lstrip("−-").isdigit() for label in e.images[0].axes.get_yticklabels())


def fresh_png(explorer):
    """Render again with every cached background dropped: what a full redraw shows."""
    explorer.invalidate_background()
    return explorer.render_png()


@pytest.mark.parametrize(
    "moves", [{"seed": 3}, {"causal": True}, {"d_model": 128}, {"source": "toy sentence"}, {"h": 8}, {"n": 30}]
)
def test_blitted_moves_show_the_same_picture_as_a_full_redraw(moves):
    e = attention_map_explorer()
    e.set(**moves)
    e.set(source="random", seed=4)  # a second move, often drawn over a cached background
    assert e.image.value == fresh_png(e)


def test_a_causal_mask_gives_the_masked_keys_zero_and_the_allowed_ones_the_whole_row():
    """Lesson 4's explorer, causal toggle: the broad head's query 2 spreads 1/11 over all keys, 1/3 over keys 0-2."""
    x, params = toy.toy_embeddings(), toy.toy_params()
    _, _, trace = mha.multi_head_attention_loop(x, x, x, params, return_trace=True)
    row = trace["scaled_scores"][3][2]
    n = len(toy.TOKENS)
    np.testing.assert_allclose(mha.softmax(row), np.full(n, 1 / n))
    masked = mha.softmax(np.where(mha.causal_mask(n)[2], row, -np.inf))
    np.testing.assert_allclose(masked, [1 / 3] * 3 + [0.0] * (n - 3))
    _, w = mha.scaled_dot_product_attention(trace["Q_i"][3], trace["K_i"][3], trace["V_i"][3], mha.causal_mask(n))
    np.testing.assert_allclose(w[2], masked)


# ------------------------------------------------------------------------------------- colour scale per panel
def test_per_panel_scale_is_log_from_each_maps_own_largest_weight():
    data = attention_maps(n=40, seed=3, causal=True)  # masked keys: zero weights
    shown, titles = shown_maps(data, "panel")
    for w, s in zip(data["weights"], shown, strict=True):
        top = w.max()
        inside = w >= top / 10**DECADES
        np.testing.assert_allclose(s[inside], 1 + np.log10(w[inside] / top) / DECADES)  # max -> 1, max/1000 -> 0
        assert np.all(s[~inside] == 0) and np.all(s[w == 0] == 0)  # smaller weights and masked keys at the bottom
    assert titles == data["titles"]
    same, plain = shown_maps(data, "shared")
    assert same is data["weights"] and plain == data["titles"]
    with pytest.raises(ValueError, match="^scale: expected"):
        shown_maps(data, "log")


def test_at_n_256_the_shared_scale_is_near_black_and_the_panel_scale_is_not():
    """Lesson 4: long rows spread their weight (about 1/n each), which a 0-1 scale shows as the darkest colour."""
    e = attention_map_explorer()
    e.set(n=MAX_N)
    dark = np.ma.median(e.images[0].get_array())
    e.set(scale="panel")
    assert dark < 0.01 and np.ma.median(e.images[0].get_array()) > 0.2  # a fifth of the colour range, at least
    assert e.data["scale"] == "panel" and "log scale per panel" in e.grids[e.layout_key]["suptitle"].get_text()
    colorbar = e.images[0].colorbar  # under the grid
    assert colorbar.orientation == "horizontal"
    assert colorbar.ax.get_xlabel() == "weight ÷ panel max, log scale"
    assert [t.get_text() for t in colorbar.ax.get_xticklabels()] == ["≤0.001", "0.01", "0.1", "1"]
    peaks = ", ".join(f"{p:.2g}" for p in e.data["weights"].max(axis=(-2, -1)))
    assert "log scale per panel" in e.text.value and f"Largest weight of each panel: {peaks}." in e.text.value
    assert e.controls["scale"].description == "colours"  # labelled, next to the other controls
    e.set(scale="shared")
    np.testing.assert_array_equal(e.images[0].get_array(), e.data["weights"][0])
    assert colorbar.ax.get_xlabel() == "weight (row sums to 1)"
    assert [t.get_text() for t in colorbar.ax.get_xticklabels()] == ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]


def test_the_grid_keeps_one_laptop_wide_size_and_adds_rows_of_square_panels_for_more_heads():
    """Every h and input shows at the same CSS size (no move changes the page's height), no wider than a laptop's
    output area; h heads take ceil(sqrt(h)) columns, panels square and clear of each other and of the colour bar."""
    e = attention_map_explorer()
    size = e.css_size()
    assert size[0] <= style.LAPTOP_OUTPUT_PX
    renderer = e.canvas.get_renderer()
    for h, rows, cols in ((1, 1, 1), (2, 1, 2), (4, 2, 2), (8, 3, 3), (16, 4, 4), ("toy", 2, 2)):
        e.set(**({"source": "toy sentence"} if h == "toy" else {"source": "random", "h": h}))
        assert e.css_size() == size, (h, e.css_size())
        boxes = [im.axes.get_window_extent(renderer) for im in e.images]
        assert (len({round(b.y0) for b in boxes}), len({round(b.x0) for b in boxes})) == (rows, cols), h
        assert all(abs(b.width - b.height) <= 1 for b in boxes), h
        bar = e.images[0].colorbar.ax.get_window_extent(renderer)
        assert bar.y1 < min(b.y0 for b in boxes), h  # under the grid
        for i, a in enumerate(boxes):
            assert not any(a.overlaps(b) for b in boxes[i + 1 :]), h


SIZES = ("d_model", "h", "n")


def test_the_toy_sentence_pins_its_own_sizes_and_random_gives_back_the_learners():
    """The pinned sliders read what the toy sentence uses (not the learner's random sizes); back on random they,
    and the picture, are the learner's again."""
    learner = {"d_model": 128, "h": 8, "n": 13, "seed": 3}
    e = attention_map_explorer(**learner)
    e.controls["source"].value = "toy sentence"
    p = toy.toy_params()
    toy_sizes = {"d_model": p.d_model, "h": p.h, "n": len(toy.TOKENS)}
    assert {c: e.controls[c].value for c in SIZES} == toy_sizes == {c: e.data[c] for c in SIZES}
    assert len(e.images) == p.h and e.images[0].get_array().shape == (len(toy.TOKENS), len(toy.TOKENS))
    assert all(e.controls[c].disabled and "mha-pinned" in e.controls[c]._dom_classes for c in learner)
    assert [e.controls[c].layout.visibility for c in SIZES] == [None] * 3
    assert e.controls["seed"].layout.visibility == "hidden"
    np.testing.assert_array_equal(np.stack([im.get_array() for im in e.images]), toy.toy_weights())
    e.controls["source"].value = "random"
    assert {c: e.controls[c].value for c in learner} == learner
    assert not any(e.controls[c].disabled or "mha-pinned" in e.controls[c]._dom_classes for c in learner)
    assert e.controls["seed"].layout.visibility is None
    assert e.image.value == attention_map_explorer(**learner).image.value


def test_a_toy_start_pins_the_toy_sizes_and_keeps_the_learners_for_random():
    e = attention_map_explorer(source="toy sentence", d_model=16, h=2, n=30, seed=4)
    p = toy.toy_params()
    assert [e.controls[c].value for c in SIZES] == [p.d_model, p.h, len(toy.TOKENS)]
    e.controls["source"].value = "random"
    assert e.data["source"] == "random"
    assert [e.controls[c].value for c in (*SIZES, "seed")] == [16, 2, 30, 4] and e.data["weights"].shape == (2, 30, 30)
