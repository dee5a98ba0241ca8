"""Every explorer, generically: it builds at its defaults, survives 200 moves without piling up figures,
output or memory, and never lets an exception escape from a control to the page."""

import base64
import functools
import gc
import io

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import psutil
import pytest
from PIL import Image

from benchmarks.widgets import all_explorers, neighbour
from mha_lesson.plots import style
from mha_lesson.widgets._base import (
    NATURAL_BUTTONS,
    PINNED_CLASS,
    STYLE,
    UNUSED,
    Explorer,
    encode_png,
    fit_labels,
    neighbours,
    offers,
    set_options,
)

EXPLORERS = all_explorers()


def test_there_are_explorers_to_test():
    assert EXPLORERS, "no Explorer subclasses found in mha_lesson.widgets"


def _moves(explorer, count):
    """Yield (name, value) moves cycling over every movable control."""
    names = [n for n, c in explorer.controls.items() if neighbour(c) is not None]
    for i in range(count):
        name = names[i % len(names)]
        yield name, neighbour(explorer.controls[name])


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda c: c.__name__)
def test_200_moves_leave_figures_output_and_memory_flat(cls):
    explorer = cls()
    assert explorer.error is None, f"defaults show a message: {explorer.error}"
    children = len(explorer.widget.children)
    figures = len(plt.get_fignums())
    process = psutil.Process()
    for name, value in _moves(explorer, 20):  # warm-up: caches, fonts, first allocations
        explorer.controls[name].value = value
    gc.collect()
    before = process.memory_info().rss
    images = set()
    for name, value in _moves(explorer, 200):
        explorer.controls[name].value = value
        assert explorer.error is None or not explorer.error.startswith("unexpected error"), explorer.error
        images.add(hash(explorer.image.value))
    gc.collect()
    grown = (process.memory_info().rss - before) / 2**20
    assert len(plt.get_fignums()) == figures, "an explorer left pyplot figures open"
    assert len(explorer.widget.children) == children, "the explorer's output grew"
    assert grown < 25, f"memory grew by {grown:.1f} MiB over 200 moves"
    assert len(images) > 1, "200 moves never changed the picture"


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda c: c.__name__)
def test_extreme_control_values_show_a_plot_or_a_one_line_message(cls):
    explorer = cls()
    for name, control in explorer.controls.items():
        options = getattr(control, "options", None)
        if options:
            values = [o[1] if isinstance(o, tuple) else o for o in options]
            extremes = [values[0], values[-1]]
        elif hasattr(control, "max") and hasattr(control, "min"):
            extremes = [control.min, control.max]
        else:
            continue
        for value in extremes:
            if value not in getattr(control, "options", [value]) and options:
                continue  # options may have changed (h follows d_model)
            control.value = value
            shown = [w.layout.display for w in (explorer.image, *explorer.readouts)]
            if explorer.error is None:
                assert explorer.image.value, f"{name}={value}: no picture and no message"
                assert shown == [None] * len(shown), f"{name}={value}: plot or readout hidden without a message"
            else:
                assert "\n" not in explorer.error and not explorer.error.startswith("unexpected error"), (
                    f"{name}={value}: {explorer.error}"
                )
                # The readouts describe the plot: a message replaces them too, or they would describe a stale one.
                assert shown == ["none"] * len(shown), f"{name}={value}: plot or readout still shown"


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda c: c.__name__)
def test_no_move_leaves_a_stale_background(cls):
    """After every move, the picture equals a render with every cached background drawn afresh, byte for byte."""
    explorer = cls()
    for name, value in _moves(explorer, 2 * len(explorer.controls)):
        explorer.controls[name].value = value
        if explorer.error is None:
            shown = explorer.image.value
            explorer.invalidate_background()
            assert explorer.render_png() == shown, f"{name}={value!r}"


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda c: c.__name__)
def test_moving_a_control_away_and_back_restores_the_first_picture(cls):
    """What is drawn depends on the controls only, not on what was drawn before (the first render included)."""
    explorer = cls()
    first = explorer.image.value
    for name, control in explorer.controls.items():
        start, value = control.value, neighbour(control)
        if value is None:
            continue
        control.value = value
        control.value = start
        assert explorer.image.value == first, f"{name}: {start!r} -> {value!r} -> back differs from the first picture"


# --------------------------------------------------------------------------- size on the page and sharpness
def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels from a PNG's header."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda c: c.__name__)
def test_the_image_keeps_its_css_size_with_pixel_ratio_pixels_per_css_pixel(cls):
    """The page shows the figure at figsize * css_dpi CSS pixels, never stretched to the box, and within a cell."""
    explorer = cls()
    width, height = explorer.css_size()
    assert explorer.image.layout.width == f"{width}px"
    # not stretched by the VBox; scaled down to a narrow output area, never past it; its height follows its width
    assert (explorer.image.layout.align_self, explorer.image.layout.max_width) == ("flex-start", "calc(100% - 4px)")
    assert explorer.image.layout.height == "auto"
    assert png_size(explorer.image.value) == (width * explorer.pixel_ratio, height * explorer.pixel_ratio)
    assert width <= style.CELL_WIDTH_PX, f"{width} CSS px is wider than a cell ({style.CELL_WIDTH_PX})"
    # The static fallback (HTML export) declares the same CSS size, so a 2x PNG is not shown twice as large.
    data, metadata = explorer._repr_mimebundle_()
    assert png_size(base64.b64decode(data["image/png"])) == png_size(explorer.image.value)
    assert metadata["image/png"] == {"width": width, "height": height}


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda c: c.__name__)
def test_every_label_is_at_least_9_css_pixels(cls):
    explorer = cls()
    px, text = style.smallest_text_px(explorer.figure, explorer.pixel_ratio)
    assert px >= style.MIN_TEXT_PX, f"{text!r} shows at {px:.1f} CSS px"


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda c: c.__name__)
def test_every_label_reads_at_10_css_pixels_on_a_laptop_with_the_file_browser_open(cls):
    explorer = cls()
    px, text = style.shown_text_px(explorer.figure, explorer.pixel_ratio)
    assert px >= style.MIN_LAPTOP_TEXT_PX, f"{text!r} shows at {px:.1f} CSS px in {style.LAPTOP_OUTPUT_PX} px"


def test_the_png_encoder_keeps_every_pixel():
    rgba = np.random.default_rng(0).integers(0, 256, (7, 5, 4), dtype=np.uint8)
    decoded = np.asarray(Image.open(io.BytesIO(encode_png(rgba))))
    np.testing.assert_array_equal(decoded, rgba[..., :3])  # opaque figures: RGB is all there is


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda c: c.__name__)
def test_the_image_is_the_canvas(cls):
    explorer = cls()
    shown = np.asarray(Image.open(io.BytesIO(explorer.image.value)).convert("RGB"))
    np.testing.assert_array_equal(shown, np.asarray(explorer.canvas.buffer_rgba())[..., :3])


WARMED = [cls for cls in EXPLORERS if cls.warm_controls]


def test_some_explorers_warm_their_backgrounds():
    assert WARMED, "no explorer paints ahead the backgrounds of its first moves"


@pytest.mark.parametrize("cls", WARMED, ids=lambda c: c.__name__)
def test_a_first_step_on_a_warmed_control_paints_no_background(cls, monkeypatch):
    """The backgrounds `warm_reach` steps either way were painted when the explorer was built: the first move
    only blits."""
    for name in cls.warm_controls:
        for value in neighbours(cls().controls[name], cls.warm_reach):
            explorer = cls()
            first, painted = explorer.image.value, []
            monkeypatch.setattr(explorer, "_paint_background", functools.partial(painted.append, (name, value)))
            explorer.controls[name].value = value
            assert explorer.error is None and not painted, f"{painted} painted a background"
            assert explorer.image.value != first


def test_neighbours_reach_steps_either_way_nearest_first():
    options = widgets.SelectionSlider(options=(1, 2, 4, 8, 16), value=4)
    assert neighbours(options) == [2, 8]
    assert neighbours(options, 4) == [2, 8, 1, 16]  # the ends stop the walk
    slider = widgets.IntSlider(value=3, min=0, max=10, step=2)
    assert neighbours(slider, 2) == [1, 5, 7]  # -1 is below the minimum


def test_the_scaling_explorer_paints_each_d_k_background_once():
    from mha_lesson.widgets.scaling import D_KS, ScalingExplorer

    explorer = ScalingExplorer()
    for d_k in D_KS:  # every d_k once: each background painted at most once
        explorer.controls["d_k"].value = d_k
    painted = []
    original = explorer._paint_background
    explorer._paint_background = lambda: (painted.append(explorer.controls["d_k"].value), original())
    for d_k in (*reversed(D_KS), *D_KS):
        explorer.controls["d_k"].value = d_k
    assert not painted, f"painted again for d_k = {painted}"


# --------------------------------------------------------------------------- pinned controls
class _Pinning(Explorer):
    """A small explorer: `size` fixes nothing, `mode` "fixed" makes `count` moot (pinned at 3) and `seed` unused."""

    def __init__(self) -> None:
        controls = {
            "mode": widgets.ToggleButtons(options=("free", "fixed"), value="free"),
            "count": widgets.SelectionSlider(options=(1, 2, 3, 5), value=5),
            "seed": widgets.IntSlider(value=7, min=0, max=9, tooltip="the seed"),
        }
        self.drawn: list[dict] = []
        super().__init__(controls, figsize=(1, 1), dpi=20)
        self.before_redraw(self.follow_mode, "mode")

    def follow_mode(self, change=None) -> None:
        if self.controls["mode"].value == "fixed":
            self.pin("fixed by the mode", count=3, seed=UNUSED)
        else:
            self.unpin("count", "seed")

    def setup(self, fig) -> None:
        fig.subplots()

    def compute(self, **values):
        return dict(values)

    def draw(self, data) -> None:
        self.drawn.append(data)


def _is_pinned(control) -> bool:
    return control.disabled and PINNED_CLASS in control._dom_classes


def test_a_pinned_control_shows_the_value_in_use_and_unpin_gives_back_the_learners():
    e = _Pinning()
    count, seed = e.controls["count"], e.controls["seed"]
    e.controls["mode"].value = "fixed"
    assert (count.value, count.layout.visibility) == (3, None) and _is_pinned(count)
    assert seed.layout.visibility == "hidden" and _is_pinned(seed)  # nothing uses it: hidden, keeping its room
    assert count.tooltip == seed.tooltip == "fixed by the mode"
    assert e.drawn[-1] == {"mode": "fixed", "count": 3, "seed": 7} and len(e.drawn) == 2  # one redraw, pinned
    e.pin(count=3)  # pinned again: the learner's value stays the one from before the first pin
    assert e.pinned() == {"count": 5, "seed": 7}
    e.controls["mode"].value = "free"
    assert (count.value, seed.value) == (5, 7) and not _is_pinned(count) and not _is_pinned(seed)
    assert seed.layout.visibility is None and seed.tooltip == "the seed" and count.tooltip is None
    assert e.drawn[-1] == {"mode": "free", "count": 5, "seed": 7} and len(e.drawn) == 3 and not e.pinned()


def test_set_on_a_pinned_control_changes_the_value_unpin_gives_back():
    e = _Pinning()
    e.set(mode="fixed", count=2)  # after the pin: it stays at the value in use
    assert e.controls["count"].value == 3 and e.pinned()["count"] == 2
    e.set(mode="free")
    assert e.controls["count"].value == 2


def test_unpin_keeps_the_current_value_when_the_learners_is_no_longer_offered():
    e = _Pinning()
    e.controls["mode"].value = "fixed"
    with e.hold():
        set_options(e.controls["count"], (1, 3), 3)  # the learner's 5 is gone
    e.controls["mode"].value = "free"
    assert e.controls["count"].value == 3 and not e.controls["count"].disabled


def test_offers_reads_options_or_bounds():
    assert offers(widgets.SelectionSlider(options=(1, 2, 4)), 4)
    assert not offers(widgets.SelectionSlider(options=(1, 2)), 4)
    assert offers(widgets.ToggleButtons(options=(("none", -1), ("0", 0))), -1)
    assert offers(widgets.IntSlider(min=0, max=9), 9) and not offers(widgets.IntSlider(min=0, max=9), 10)


# --------------------------------------------------------------------------- labels shown whole
def test_fit_labels_frees_descriptions_and_buttons_from_ipywidgets_fixed_widths():
    seed = widgets.IntSlider(description="weights seed")
    view = widgets.ToggleButtons(options=("best 2-D plane", "coordinates 0 and 1"), description="view")
    narrow = widgets.ToggleButtons(options=("0", "1"), description="layer")
    narrow.style.button_width = "3em"  # an explorer's own width is kept
    own = widgets.IntSlider(description="n")
    own.style.description_width = "40px"
    for control in (seed, view, narrow, own):
        fit_labels(control)
    # ipywidgets' "" means its 80 CSS px for a description and 148 for a toggle button, cutting longer text
    assert (seed.style.description_width, view.style.description_width, own.style.description_width) == (
        "initial",
        "initial",
        "40px",
    )
    assert (view.style.button_width, narrow.style.button_width) == ("auto", "3em")
    assert NATURAL_BUTTONS in view._dom_classes and NATURAL_BUTTONS not in narrow._dom_classes
    for buttons in (view, narrow):  # laid out as a row, the buttons beside their label (not under it)
        assert {"widget-inline-hbox", "jupyter-widget-inline-hbox"} <= set(buttons._dom_classes)


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda c: c.__name__)
def test_every_explorer_shows_its_control_labels_whole(cls):
    explorer = cls()
    for name, control in explorer.controls.items():
        if getattr(control, "description", "") and hasattr(control, "style"):
            assert control.style.description_width, f"{name}: description cut to ipywidgets' 80 px"
        if isinstance(control, widgets.ToggleButtons):
            assert control.style.button_width, f"{name}: buttons cut to ipywidgets' 148 px"
            assert "widget-inline-hbox" in control._dom_classes, f"{name}: buttons under their label"


def test_a_readouts_sub_and_superscripts_keep_its_lines_height():
    """Lesson 6's readout was 9 px taller for a head (head<sub>i</sub> W<sup>O</sup>) than for "none" (measured in
    Chromium): the page style sets them off the baseline without line height."""
    rules = {rule.split("{")[0].strip(): rule.split("{")[1] for rule in STYLE.split("}") if "{" in rule}
    scripts = rules[".mha-readout :is(sub, sup)"]
    assert "line-height: 0" in scripts and "vertical-align: baseline" in scripts and "position: relative" in scripts
    assert "top: -" in rules[".mha-readout sup"] and "top: 0." in rules[".mha-readout sub"]
