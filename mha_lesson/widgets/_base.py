"""The one mechanism every explorer uses: controls -> pure compute -> redraw a persistent figure -> PNG image.

Why this design:
- The figure is a plain `matplotlib.figure.Figure` (not pyplot), created once and redrawn in place, so no
  figures pile up in pyplot's registry and nothing flickers: the page only swaps the bytes of one <img>.
- `compute(**values)` is pure (numbers in, data out) so tests can call it without a browser; a ValueError
  from it is shown as a one-line message where the plot was, never as a traceback.
- Redraws are cheap by blitting, as matplotlib's animations do: a subclass marks what a move changes with
  `animate(...)`; `render_png` paints a cached picture of everything else (axes, ticks, legends) and draws
  only those artists on top. With nothing animated it simply draws the whole figure.
- Crisp at its natural size: the figure is drawn at `pixel_ratio` times its CSS resolution (2: sharp on HiDPI
  screens, for the explorers whose moves can afford it) and the image is given its CSS width, so the page shows
  it at that size wherever it fits (never stretched; scaled down, keeping its shape, in a narrower output area).
  Text sized in points keeps its size on screen where the figure fits.
- The rendered PNG is also offered as `image/png` next to the widget (with its CSS size), so an executed
  notebook exported to static HTML still shows the figure without any JavaScript.

Structure in the page (the browser tests rely on it): a VBox with CSS classes `mha-explorer` and
`mha-explorer-<ClassName>`, holding a box of
controls (class `mha-controls`), an HTML message (class `mha-message`, hidden when empty) and an
`ipywidgets.Image` (class `mha-figure`). A subclass may add text outputs (class `mha-readout`). A hidden HTML
widget last (class `mha-style`) carries the explorers' page style.

A control that another one makes moot (lesson 4's d_model on the toy sentence, which fixes it) is pinned
(`pin`): disabled, showing the value actually in use, or kept invisible in its place when no value is in use,
and styled `mha-pinned` so it reads as fixed. `unpin` gives back the learner's own earlier value.
"""

from __future__ import annotations

import base64
import contextlib
import os
import struct
import zlib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any

import ipywidgets as widgets
import matplotlib
import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .._blas import one_blas_thread
from .._checks import is_int
from ..plots.style import RC

FIT_WIDTH = "calc(100% - 4px)"  # an explorer's figure at most as wide as its output area
PINNED_CLASS = "mha-pinned"
NATURAL_BUTTONS = "mha-natural-buttons"  # toggle buttons as wide as their labels (see fit_labels)
# The page style of every explorer. ipywidgets greys only a disabled slider's track: a pinned control fades as a
# whole, loses its colour and says so with its cursor, so that it reads as fixed at a glance. Labels that fit_labels
# freed from ipywidgets' fixed widths keep those widths as a minimum, so short labels still line up in columns. A
# sub- or superscript in a readout (head<sub>i</sub>) keeps its line's height: set off its baseline it made the line
# 9 px taller, and the page jumped when it came or went (lesson 6: "none" has none, a head has three).
STYLE = f"""<style>
.{PINNED_CLASS} {{ opacity: 0.45; filter: grayscale(100%); cursor: not-allowed; }}
.{PINNED_CLASS} .widget-readout, .{PINNED_CLASS} .widget-label {{ font-style: italic; }}
.mha-controls .widget-label {{ min-width: var(--jp-widgets-inline-label-width); }}
.mha-controls .widget-checkbox {{ width: auto; min-width: var(--jp-widgets-inline-width); }}
.{NATURAL_BUTTONS} .widget-toggle-button {{ min-width: var(--jp-widgets-inline-width-short); }}
.mha-readout :is(sub, sup) {{ line-height: 0; vertical-align: baseline; position: relative; }}
.mha-readout sup {{ top: -0.45em; }}
.mha-readout sub {{ top: 0.25em; }}
</style>"""
UNUSED = None  # pin's value for a control whose value nothing uses: it is hidden, keeping its room


def set_options(slider: widgets.SelectionSlider, options: Sequence[Any], value: Any) -> None:
    """Give a selection slider new options and a value, and have the page rebuild the slider for them.

    The page's slider (noUiSlider) takes a new range for dragging and arrows, but Home and End keep going to the
    ends of its first range (End gave h = 512 once d_model had gone to 1024). A change of orientation makes
    ipywidgets build the slider anew from the current options, so End, Home and the handle agree with them.
    """
    slider.options = options
    slider.value = value
    orientation = slider.orientation
    slider.orientation = "vertical" if orientation == "horizontal" else "horizontal"
    slider.orientation = orientation


def fit_labels(control: widgets.Widget) -> None:
    """Show a control's description and option labels whole, with the buttons of toggle buttons beside their label.

    ipywidgets gives a description 80 CSS px and a toggle button 148, cutting longer text with an ellipsis
    ("weights s…", "coordinates 0 an…"): here a description takes its own width and toggle buttons without a
    width of their own take their labels' (STYLE keeps the defaults as minimum widths). ipywidgets 8 lays out
    toggle buttons as a block, their label above them: the inline-hbox class puts the label beside them, as a
    slider's.
    """
    style = getattr(control, "style", None)
    if getattr(control, "description", "") and style is not None and not style.description_width:
        style.description_width = "initial"
    if isinstance(control, widgets.ToggleButtons):
        control.add_class("widget-inline-hbox")
        control.add_class("jupyter-widget-inline-hbox")
        if not control.style.button_width:
            control.style.button_width = "auto"
            control.add_class(NATURAL_BUTTONS)


def offers(control: widgets.ValueWidget, value: Any) -> bool:
    """Whether a control can take value: one of its options, or within its min and max."""
    options = getattr(control, "options", None)
    if options is not None:
        return any(value == (o[1] if isinstance(o, tuple) else o) for o in options)
    low, high = getattr(control, "min", None), getattr(control, "max", None)
    return (low is None or value >= low) and (high is None or value <= high)


def divisors(n: int, most: int | None = None) -> list[int]:
    """Positive divisors of n (up to most) in increasing order: the valid head counts for d_model = n."""
    return [i for i in range(1, (n if most is None else min(n, most)) + 1) if n % i == 0]


def check_start(name: str, value: object, options: Iterable[Any]) -> None:
    """Raise ValueError naming a constructor argument whose starting value its control does not offer.

    options: the control's values, or its (label, value) pairs. Checked before the control is built, so a bad
    start is a ValueError naming the argument, not ipywidgets' TraitError (or a silently clamped slider).
    """
    values = [o[1] if isinstance(o, tuple) else o for o in options]

    def kind(x: object) -> str:  # True is not the integer 1 here, nor 2.0 the option 2
        if isinstance(x, (bool, np.bool_)):
            return "bool"
        return "int" if is_int(x) else "float" if isinstance(x, (float, np.floating)) else type(x).__name__

    if not any(kind(value) == kind(v) and value == v for v in values):
        shown = values if len(values) <= 12 else [*values[:3], "...", *values[-3:]]
        raise ValueError(f"{name}: expected one of {shown}, got {value!r:.60}")


def encode_png(rgba: np.ndarray) -> bytes:
    """An (height, width, 4) uint8 RGBA picture as PNG bytes: 8-bit RGB, no row filter, zlib level 1.

    A figure is opaque, so RGB loses nothing. Rows go unfiltered: Pillow's encoder tries every PNG filter on
    every row, which took 2-3 times as long as this for flat-coloured figures that compress well anyway.
    """
    height, width, _ = rgba.shape
    rows = np.zeros((height, 1 + 3 * width), np.uint8)  # a leading 0 per row: filter type "none"
    rows[:, 1:] = rgba[..., :3].reshape(height, 3 * width)  # (h, w, 3) -> (h, 3w): R, G, B of each pixel in turn

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8 bits per channel, truecolour, no interlace
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b"")


READOUT_LINE_PX = 28  # ipywidgets sets an HTML widget's lines 28 px apart


def fixed_readout(lines: int) -> widgets.HTML:
    """An HTML readout with room for `lines` lines: a readout that writes that many in every state keeps the
    explorer's height, so no move makes the page jump."""
    return widgets.HTML(layout=widgets.Layout(min_height=f"{lines * READOUT_LINE_PX}px"))


def settle_layout(fig: Figure) -> None:
    """Run constrained layout once, then keep the axes where it put them.

    Later renders skip the layout pass (measuring every tick label again), which is most of their cost.
    Call it again whenever the axes themselves change (new tick labels, new subplots).
    """
    fig.set_layout_engine("constrained")
    fig.draw_without_rendering()
    fig.set_layout_engine("none")


def neighbours(control: widgets.ValueWidget, reach: int = 1) -> list[Any]:
    """The values up to `reach` steps either way from a slider's current value (its options, or value -/+ step),
    nearest first."""
    offsets = [sign * k for k in range(1, reach + 1) for sign in (-1, 1)]
    options = getattr(control, "options", None)
    if options:
        values = [o[1] if isinstance(o, tuple) else o for o in options]
        i = values.index(control.value)
        return [values[i + j] for j in offsets if 0 <= i + j < len(values)]
    if isinstance(control, widgets.IntSlider | widgets.FloatSlider):
        steps = [control.value + j * control.step for j in offsets]
        return [v for v in steps if control.min <= v <= control.max]
    return []


def pin_axis_labels(*axes: Axes) -> None:
    """Keep the axis labels of axes where the last layout put them (call it after settle_layout).

    An axis places its label past its tick labels on every draw, measuring them and those of its neighbours;
    for an axis that is drawn with a move (animated or follow_key) that measuring was most of its cost.
    """
    for ax in axes:
        for axis in (ax.xaxis, ax.yaxis):
            at = axis.label.get_transform().transform(axis.label.get_position())  # display pixels
            axis.set_label_coords(*ax.transAxes.inverted().transform(at))


def fixed_margins(fig: Figure, *, left: float, right: float, top: float, bottom: float, **gaps: float) -> None:
    """Place the subplot grid by margins in inches, with no layout engine (which would measure every label).

    gaps: wspace and hspace, as fractions of the average axes width and height (as in subplots_adjust).
    """
    fig.set_layout_engine("none")
    w, h = fig.get_size_inches()
    # subplotpars directly: subplots_adjust refuses a figure that was made with constrained layout
    fig.subplotpars.update(left=left / w, right=1 - right / w, top=1 - top / h, bottom=bottom / h, **gaps)


class Explorer:
    """Base class: subclasses pass their controls, build axes in `setup`, and implement `compute` and `draw`.

    A subclass sets any attribute that compute/draw need *before* calling `super().__init__`, which builds
    the figure, calls `setup` and draws once. Every subclass must be constructible with no arguments (the
    benchmark and the generic widget tests build each one at its defaults).

    Fast redraws: call `animate(...)` (usually in `setup`) on the artists a move changes. Everything else is
    the still background, drawn once and cached under `background_key()` (plus the canvas, for subclasses
    that swap figures); call `invalidate_background()` after changing a still part without changing its key.
    Still parts that follow the key (the ticks of an axis whose limits follow a control, a title) can be marked
    with `follow_key(...)`: a new key's background is then the common background with them drawn on top, a
    fraction of the full draw it would otherwise cost on the first visit of each key. Sliders listed in
    `warm_controls` get the backgrounds `warm_reach` steps either way painted when the explorer is built (see `warm`).

    Sizes: figsize in inches at dpi CSS pixels per inch is the size on the page (at most a cell, about 950 CSS
    pixels wide, and at most plots.style.LAPTOP_OUTPUT_PX to read on a laptop); text in points shows at
    points * dpi / 72 CSS pixels (9 or more: see mha_lesson.plots.style).
    """

    backgrounds_kept = 1  # cached backgrounds (keys) kept, the least recently used dropped first
    # Rendered pixels per CSS pixel. 2 is sharp on HiDPI screens but paints, copies and encodes 4x the pixels: a move
    # took about twice the kernel time of 1 for most explorers (`python -m benchmarks widgets --pixel-ratio`),
    # and in the browser (where the kernel shares the cores with Chromium) that missed the latency budget. So 1,
    # and an explorer whose 2x moves stay cheap (under about 35 ms in that benchmark) sets 2.
    # MHA_LESSON_PIXEL_RATIO overrides it for every explorer (the browser benchmark compares 1 and 2 this way).
    pixel_ratio = 1
    warm_controls: tuple[str, ...] = ()  # sliders whose steps change the background: see warm
    warm_reach = 1  # how many steps either way warm paints ahead

    def __init__(
        self, controls: dict[str, widgets.ValueWidget], *, figsize: tuple[float, float] = (9, 3.6), dpi: int = 90
    ) -> None:
        self.controls = controls
        self.css_dpi = dpi  # CSS pixels per inch: the figure shows at figsize * dpi CSS pixels
        override = os.environ.get("MHA_LESSON_PIXEL_RATIO")
        if override:
            self.pixel_ratio = int(override)
        self.figure = self.new_figure(figsize, layout="constrained")
        self.canvas = self.figure.canvas
        # Its own width (set on each render), never stretched to the output area by the box (its default); in an
        # output area narrower than that (a laptop with the file browser open) it scales down, keeping its shape,
        # rather than being cut off behind a sideways scrollbar (less the 2 px margin ipywidgets puts on each side).
        self.image = widgets.Image(
            format="png", layout=widgets.Layout(align_self="flex-start", max_width=FIT_WIDTH, height="auto")
        )
        self.image.add_class("mha-figure")
        self.message = widgets.HTML(layout=widgets.Layout(display="none"))
        self.message.add_class("mha-message")
        self.readouts: list[widgets.Widget] = []
        self.data: Any = None
        self.error: str | None = None
        self._held = False
        self._pinned: dict[str, tuple[Any, str | None]] = {}  # name -> (the learner's value, its tooltip) while pinned
        self.moving: list[Artist] = []  # drawn on every render, over the cached still background
        self._backgrounds: OrderedDict[Hashable, Any] = OrderedDict()
        self.key_artists: list[Artist] = []  # still, but drawn per background key (see follow_key)
        self._common: dict[FigureCanvasAgg, Any] = {}  # per canvas: the background without the key artists
        box = widgets.HBox(list(controls.values()), layout=widgets.Layout(flex_flow="row wrap"))
        box.add_class("mha-controls")
        self.style = widgets.HTML(STYLE, layout=widgets.Layout(display="none"))  # a <style> applies though hidden
        self.style.add_class("mha-style")
        self.widget = widgets.VBox([box, self.message, self.image, self.style])
        self.widget.add_class("mha-explorer")
        self.widget.add_class(f"mha-explorer-{type(self).__name__}")  # lets the browser tests name it
        for control in controls.values():
            fit_labels(control)
            control.observe(self._on_change, names="value")
        with matplotlib.rc_context(RC):  # the series' fonts, whatever the notebook set (refresh does the same)
            self.setup(self.figure)
        self.refresh()
        self.warm()

    # --- to implement -------------------------------------------------------------------------------
    def setup(self, fig: Figure) -> None:
        """Create the axes (and artists) once."""
        raise NotImplementedError

    def compute(self, **values: Any) -> Any:
        """Pure function of the control values; raise ValueError with a one-line reason for invalid input."""
        raise NotImplementedError

    def draw(self, data: Any) -> None:
        """Update the figure from compute's result (prefer updating artists over re-creating them)."""
        raise NotImplementedError

    # --- machinery -----------------------------------------------------------------------------------
    def new_figure(self, figsize: tuple[float, float], layout: str = "none") -> Figure:
        """A figure of figsize inches at this explorer's render dpi (css_dpi * pixel_ratio), with an Agg canvas."""
        fig = Figure(figsize=figsize, dpi=self.css_dpi * self.pixel_ratio, layout=layout)
        FigureCanvasAgg(fig)  # attaches itself as fig.canvas
        return fig

    def css_size(self) -> tuple[int, int]:
        """(width, height) at which the page shows the figure, in CSS pixels."""
        w, h = self.figure.get_size_inches() * self.css_dpi
        return round(w), round(h)

    def add_readout(self, widget: widgets.Widget) -> widgets.Widget:
        """Show a text widget (e.g. widgets.HTML) between the controls and the figure."""
        widget.add_class("mha-readout")
        self.readouts.append(widget)
        self.widget.children = (self.widget.children[0], *self.readouts, self.message, self.image, self.style)
        return widget

    def pin(self, why: str = "", **values: Any) -> None:
        """Disable controls that the others make moot, showing the value in use (no redraw, as in `hold`).

        values: name -> the value the picture uses, or UNUSED (None) when it uses none: the control is then
        hidden, keeping its room so nothing below moves. The learner's own value is remembered (once, however
        often a control is pinned again) for `unpin`. why: a tooltip saying what fixes the value.
        Call it before the redraw (`before_redraw`), so the picture and the controls change together.
        """
        for name in values:  # every learner's value first: pinning one control may move another (h follows d_model)
            if name not in self._pinned:
                control = self.controls[name]
                self._pinned[name] = (control.value, getattr(control, "tooltip", None))
        with self.hold():
            for name, value in values.items():
                control = self.controls[name]
                if value is not UNUSED:
                    control.value = value
                control.disabled = True
                control.add_class(PINNED_CLASS)
                control.layout.visibility = "hidden" if value is UNUSED else None
                if why:
                    control.tooltip = why

    def unpin(self, *names: str) -> None:
        """Enable pinned controls again, each with the learner's value from before it was pinned (no redraw).

        In the order given, so a control whose options follow another (h follows d_model) comes after it. A
        remembered value its control no longer offers is not forced on it (it keeps the one it has).
        """
        with self.hold():
            for name in names:
                if name not in self._pinned:
                    continue
                value, tooltip = self._pinned.pop(name)
                control = self.controls[name]
                if offers(control, value):
                    control.value = value
                control.disabled = False
                control.remove_class(PINNED_CLASS)
                control.layout.visibility = None
                if hasattr(control, "tooltip"):
                    control.tooltip = tooltip

    def pinned(self) -> dict[str, Any]:
        """The pinned controls, by name, with the learner's values that unpin gives back."""
        return {name: value for name, (value, _) in self._pinned.items()}

    def values(self) -> dict[str, Any]:
        """Current value of every control, by name."""
        return {name: control.value for name, control in self.controls.items()}

    def set(self, **values: Any) -> None:
        """Set several controls at once and redraw once (as a learner would, one after the other).

        A pinned control keeps showing the value in use: a value for it becomes the one `unpin` gives back.
        """
        with self.hold():
            for name, value in values.items():
                if name in self._pinned:
                    self._pinned[name] = (value, self._pinned[name][1])
                else:
                    self.controls[name].value = value
        self.refresh()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Suspend redraws while several controls change; the caller refreshes afterwards."""
        held, self._held = self._held, True
        try:
            yield
        finally:
            self._held = held

    def refresh(self) -> None:
        """Recompute, redraw and re-render; on ValueError show its message instead of the plot."""
        # Explorer problems are small: one BLAS thread is faster, and stays fast while the browser is busy.
        with one_blas_thread(), matplotlib.rc_context(RC):
            try:
                self.data = self.compute(**self.values())
            except ValueError as exc:
                self.show_message(str(exc))
                return
            self.draw(self.data)
            png = self._render_png()  # already under the series' rcParams: render_png would enter them again
            # The size first, so the new picture never shows at the previous figure's size.
            self.image.layout.width = f"{self.css_size()[0]}px"
            self.image.value = png
        self.error = None
        self.message.value = ""
        self.message.layout.display = "none"
        for widget in (self.image, *self.readouts):
            widget.layout.display = None

    def show_message(self, text: str) -> None:
        """Replace the plot, and the readouts that describe it, by a one-line message."""
        self.error = text.splitlines()[0] if text else "invalid input"
        self.message.value = f"<span style='color:#b00020'>&#9888; {self.error}</span>"
        self.message.layout.display = None
        for widget in (self.image, *self.readouts):
            widget.layout.display = "none"

    def animate(self, *artists: Artist) -> None:
        """Mark artists as moving: full draws leave them out, and render_png draws them over the background."""
        for artist in artists:
            artist.set_animated(True)
        self.moving.extend(artists)

    def follow_key(self, *artists: Artist) -> None:
        """Mark still artists that change only with background_key(): full draws leave them out, and each key's
        cached background is the common one with these drawn on top."""
        for artist in artists:
            artist.set_animated(True)
        self.key_artists.extend(artists)

    def background_key(self) -> Hashable:
        """What the still background depends on besides the figure (e.g. axis limits that follow a control)."""
        return None

    def invalidate_background(self) -> None:
        """Drop every cached background: the next render draws the still parts again."""
        self._backgrounds.clear()
        self._common.clear()

    def render_png(self) -> bytes:
        """The figure as PNG bytes: the cached background with the moving artists on top (or a full draw)."""
        # Under the series' rcParams, as every draw of an explorer: tick spacing reads the tick font size at draw time.
        with matplotlib.rc_context(RC):
            return self._render_png()

    def _render_png(self) -> bytes:
        canvas = self.canvas
        if not self.moving and not self.key_artists:
            canvas.draw()
        else:
            key = (canvas, self.background_key())
            if key in self._backgrounds:
                canvas.restore_region(self._backgrounds[key])
                self._backgrounds.move_to_end(key)
            else:
                self._store_background(key)
            for artist in self.moving:
                self.figure.draw_artist(artist)
            for ax in self.figure.axes:  # frames back on top of bars and images, as in a full draw
                if ax.get_visible() and not ax.get_animated():  # a hidden axes (a grid's spare cell) has none
                    for spine in ax.spines.values():
                        if not spine.get_animated():  # an animated spine was drawn with the moving artists
                            ax.draw_artist(spine)
        return encode_png(np.asarray(canvas.buffer_rgba()))

    def _store_background(self, key: Hashable) -> None:
        """Paint the background and cache it under key, dropping the least recently used beyond backgrounds_kept."""
        self._paint_background()
        self._backgrounds[key] = self.canvas.copy_from_bbox(self.figure.bbox)
        while len(self._backgrounds) > self.backgrounds_kept:
            self._backgrounds.popitem(last=False)

    def warm(self) -> None:
        """Paint ahead the backgrounds up to `warm_reach` steps either way on each of `warm_controls` (called after
        the first draw).

        A move to a value whose background is not cached pays for painting it; warming moves that cost from the
        learner's first move to the notebook's run. The picture shown does not change.
        """
        if self.error is not None or not (self.moving or self.key_artists):
            return
        with matplotlib.rc_context(RC):
            self._warm()

    def _warm(self) -> None:
        shown, values = self.data, self.values()
        for name in self.warm_controls:
            for value in neighbours(self.controls[name], self.warm_reach):
                try:
                    data = self.compute(**{**values, name: value})
                except ValueError:  # not a valid combination with the other controls: nothing to warm
                    continue
                self.data = data
                self.draw(data)
                key = (self.canvas, self.background_key())
                if key not in self._backgrounds:
                    self._store_background(key)
        self.data = shown
        self.draw(shown)
        current = (self.canvas, self.background_key())
        if current in self._backgrounds:
            self._backgrounds.move_to_end(current)  # the shown one is the last to be dropped
        self._render_png()  # the canvas holds the shown picture again (the image never changed)

    def _paint_background(self) -> None:
        """Paint the still parts: the common background (drawn in full once per canvas), then the key artists."""
        canvas = self.canvas
        if not self.key_artists:
            canvas.draw()  # everything but the animated artists
            return
        if canvas in self._common:
            canvas.restore_region(self._common[canvas])
        else:
            canvas.draw()  # everything but the animated and key artists
            self._common[canvas] = canvas.copy_from_bbox(self.figure.bbox)
        for artist in self.key_artists:
            if artist.get_figure(root=True) is self.figure:  # a subclass that swaps figures keeps them all here
                self.figure.draw_artist(artist)

    def _on_change(self, change: dict) -> None:
        if self._held:
            return
        try:
            self.refresh()
        except Exception as exc:  # a slider callback must never print a traceback into the lesson
            self.show_message(f"unexpected error: {type(exc).__name__}: {exc}")

    def before_redraw(self, callback: Callable[[dict], None], *names: str) -> None:
        """Run callback on every change of these controls before the redraw (e.g. to keep another control valid)."""
        for name in names:
            # Observers run in registration order: put the callback ahead of the redraw.
            self.controls[name].unobserve(self._on_change, names="value")
            self.controls[name].observe(callback, names="value")
            self.controls[name].observe(self._on_change, names="value")

    def keep_heads_valid(self, d_model: str = "d_model", h: str = "h", most: int | None = None) -> None:
        """Make the `h` control (a SelectionSlider) offer only divisors of the `d_model` control's value (<= most)."""

        def update_options(change: dict) -> None:
            options = divisors(int(change["new"]), most)
            current = self.controls[h].value
            with self.hold():
                # Keep the learner's h when still valid, else the nearest valid one.
                set_options(self.controls[h], options, min(options, key=lambda o: (abs(o - current), o)))

        self.before_redraw(update_options, d_model)  # fix h first, then redraw once with a valid pair

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict, dict]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        metadata = {}
        if self.error is None:
            # A static fallback: JupyterLab prefers the live widget; static HTML export shows this PNG, at its CSS
            # size (the PNG has pixel_ratio times as many pixels).
            bundle["image/png"] = base64.b64encode(self.image.value).decode("ascii")
            width, height = self.css_size()
            metadata["image/png"] = {"width": width, "height": height}
        return bundle, metadata
