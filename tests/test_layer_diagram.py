"""The picture of the whole layer (plots.layer) and its explorer (widgets.layer): the shapes it prints are the
shapes of the arrays a real forward pass makes, for any h, d_model, n and n_kv."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.patches import FancyBboxPatch

import mha_lesson as mha
from mha_lesson.aids import lessons as ls
from mha_lesson.plots import style
from mha_lesson.plots.layer import LESSON_STAGES, STAGE_KEYS, layer_diagram, layer_shapes
from mha_lesson.widgets.layer import LayerExplorer, layer_explorer


def forward_shapes(h, d_model, n, n_kv):
    """The shapes of one forward pass's arrays, read off the loop's trace (an independent computation)."""
    rng = np.random.default_rng(0)
    x, memory = rng.normal(size=(n, d_model)), rng.normal(size=(n_kv, d_model))
    params = mha.init_params(d_model, h, seed=0)
    _, weights, trace = mha.multi_head_attention_loop(x, memory, memory, params, return_trace=True)
    stacked = {name: np.stack(trace[name]).shape for name in ("Q_i", "K_i", "V_i", "head_i")}
    return {
        "project": {"Q": (x @ params.w_q).shape, "K": (memory @ params.w_k).shape, "V": (memory @ params.w_v).shape},
        "split": {name: stacked[name] for name in ("Q_i", "K_i", "V_i")},
        "attend": {"weights": weights.shape, "head_i": stacked["head_i"]},
        "concat": {"concat": trace["concat"].shape},
        "mix": {"output": trace["output"].shape},
    }


@settings(max_examples=40, deadline=None)
@given(h=st.sampled_from([1, 2, 3, 4, 6]), d_k=st.integers(1, 5), n=st.integers(1, 7), n_kv=st.integers(1, 7))
def test_the_printed_shapes_are_those_of_a_real_forward_pass(h, d_k, n, n_kv):
    d_model = h * d_k
    shapes = layer_shapes(h, d_model, n, n_kv)
    expected = forward_shapes(h, d_model, n, n_kv)
    for stage, arrays in expected.items():
        assert shapes[stage] == arrays, stage
    assert shapes["input"]["x"] == (n, d_model)


def test_self_attention_prints_n_for_the_keys_and_the_figure_shows_the_numbers():
    fig = layer_diagram(4, h=2, d_model=6, n=5)
    text = " ".join(t.get_text() for t in fig.axes[0].texts)
    # a head's own Q_i is (n, d_k) in lessons 3, 6 and 8: the box prints the h heads stacked, by first and last
    assert "2 heads stacked:\nQ_0..Q_1 =\n  (2, 5, 3)\n  (h, n, d_k)" in text and "Q_i =" not in text
    assert "weights =\n  (2, 5, 5)\n  (h, n, n)" in text and "head_0..head_1 =" in text
    assert "n_kv" not in text and "n_q" not in text and "x_{kv}" not in text
    assert "h = 2, d_model = 6, n = 5" in fig.axes[0].get_title()
    assert style.smallest_text_px(fig)[0] >= style.MIN_TEXT_PX
    assert style.shown_text_px(fig)[0] >= style.MIN_LAPTOP_TEXT_PX  # a laptop with the file browser open
    one = " ".join(t.get_text() for t in layer_diagram(2, h=1, d_model=6, n=5).axes[0].texts)
    assert "1 head stacked:\nQ_0 =" in one
    cross_fig = layer_diagram(7, h=2, d_model=16, n=4, n_kv=6)
    cross = " ".join(t.get_text() for t in cross_fig.axes[0].texts)
    assert "x_kv = (6, 16)" in cross and "K = (6, 16)" in cross and "weights =\n  (2, 4, 6)\n  (h, n_q, n_kv)" in cross
    # the keys and values are projected from x_kv; the queries' length is n_q, as the capstone writes it
    assert "$xW^Q$,\n" r"$x_{kv}W^K,\ x_{kv}W^V$" in cross and "Q = (4, 16)\n  (n_q, d_model)" in cross
    assert "n_q = 4, n_kv = 6" in cross_fig.axes[0].get_title()


def test_the_boxes_run_in_the_codes_order_and_name_the_lessons_that_teach_them():
    """One order everywhere: the concept map's derivation chain and this picture's boxes (project, then split)."""
    from mha_lesson.aids import concept_map as cm

    assert STAGE_KEYS == ("input", "project", "split", "attend", "concat", "mix")
    chain = [e.source for e in cm.EDGES if e.relation == "then"] + ["mix"]
    assert chain == list(STAGE_KEYS[1:])
    headings = [t.get_text() for t in layer_diagram().axes[0].texts[::3]]
    assert headings[2] == "split into heads\n(lessons 2, 3 and 6)" and headings[1].endswith("(lesson 3)")


def _extents(fig):
    """Each box's extent with the extents of its texts (heading, formula, shapes), in display pixels."""
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    boxes = [p for p in ax.patches if isinstance(p, FancyBboxPatch)]
    texts = ax.texts
    assert len(boxes) == len(STAGE_KEYS) and len(texts) == 3 * len(STAGE_KEYS)
    return [
        (key, boxes[i].get_window_extent(renderer), [t.get_window_extent(renderer) for t in texts[3 * i : 3 * i + 3]])
        for i, key in enumerate(STAGE_KEYS)
    ]


@pytest.mark.parametrize(
    "sizes",
    [
        {"h": 8, "d_model": 512, "n": 128},  # lesson 2's picture: the paper's sizes
        {"h": 16, "d_model": 512, "n": 12},  # the explorer's widest numbers and most heads
        {"h": 16, "d_model": 512, "n": 12, "n_kv": 128},  # cross-attention's longer symbols
        {"h": 4, "d_model": 12, "n": 5, "n_kv": 7},  # the capstone's
    ],
)
def test_every_text_fits_inside_its_box_with_a_margin(sizes):
    margin = 2.0  # pixels: a text touching its box's edge reads as spilling out
    for key, box, texts in _extents(layer_diagram(2, **sizes)):
        for t in texts:
            assert box.x0 + margin <= t.x0 and t.x1 <= box.x1 - margin, (key, sizes)
            assert box.y0 + margin <= t.y0 and t.y1 <= box.y1 - margin, (key, sizes)


def test_the_fit_test_sees_a_text_that_runs_out_of_its_box():
    fig = layer_diagram(2, h=8, d_model=512, n=128)
    fig.axes[0].texts[3 * 3 + 2].set_text("weights = (8, 128, 128) and more, far past the edge")
    key, box, texts = _extents(fig)[3]
    assert key == "attend" and texts[2].x1 > box.x1


def test_every_core_lesson_shows_the_diagram_with_its_own_step():
    for path in ls.lesson_paths():
        lesson = ls.read_lesson(path)
        if lesson.track != "core":
            continue
        code = "\n".join(ls.cell_text(c) for c in ls.worked_cells(ls.load(path)) if c["cell_type"] == "code")
        calls = f"layer_diagram({lesson.number}" in code or (lesson.number == 1 and "layer_explorer(" in code)
        assert calls, f"{path.name}: no layer_diagram({lesson.number}) before its Going deeper part"
    assert set(LESSON_STAGES) == set(range(1, 10))
    assert all(set(stages) <= set(STAGE_KEYS) and stages for stages in LESSON_STAGES.values())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"h": 5, "d_model": 16, "n": 4}, "^h: expected a divisor of d_model=16"),
        ({"h": 4, "d_model": 16, "n": 0}, "^n: expected a positive integer"),
        ({"h": 4, "d_model": 16, "n": 3, "n_kv": 2.5}, "^n_kv: expected a positive integer"),
    ],
)
def test_bad_sizes_are_refused_naming_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        layer_shapes(**kwargs)


def test_a_lesson_outside_the_core_or_an_unknown_stage_is_refused():
    with pytest.raises(ValueError, match="^lesson: expected a core lesson"):
        layer_diagram(12)
    with pytest.raises(ValueError, match="^highlight: expected stages"):
        layer_diagram(highlight=("softmax",))


def test_the_explorer_reprints_the_shapes_as_its_sliders_move():
    e = layer_explorer()
    assert isinstance(e, LayerExplorer) and e.error is None and e.image.value
    assert e.texts["split"].get_text().startswith("4 heads stacked:\nQ_0..Q_3 =\n  (4, 6, 4)")
    first = e.image.value
    e.set(d_model=24, h=6, n=3)
    assert e.texts["split"].get_text().startswith("6 heads stacked:\nQ_0..Q_5 =\n  (6, 3, 4)")
    assert "weights =\n  (6, 3, 3)" in e.texts["attend"].get_text()
    assert "h = 6, d_model = 24, n = 3" in e.title.get_text() and e.image.value != first
    e.controls["d_model"].value = 8  # h = 6 does not divide 8: h moves to the nearest divisor
    assert e.controls["h"].value in (4, 8) and e.error is None
