"""The one mechanism every explorer uses: controls -> pure compute -> redraw a persistent figure -> PNG image.

Why this design:
- The figure is a plain `matplotlib.figure.Figure` (not pyplot), created once and redrawn in place, so no
  figures pile up in pyplot's registry and nothing flickers: the page only swaps the bytes of one <img>.
- `compute(**values)` is pure (numbers in, data out) so tests can call it without a browser; a ValueError
  from it is shown as a one-line message where the plot was, never as a traceback.
- Redraws are cheap by blitting, as matplotlib's animations do: a subclass marks what a move changes with
  `animate(...)`; `render_png` paints a cached picture of everything else (axes, ticks, legends) and draws
  only those artists on top. With nothing animated it simply draws the whole figure.
- The rendered PNG is also offered as `image/png` next to the widget, so an executed notebook exported to
  static HTML still shows the figure without any JavaScript.

Structure in the page (the browser tests rely on it): a VBox with CSS classes `mha-explorer` and
`mha-explorer-<ClassName>`, holding a box of
controls (class `mha-controls`), an HTML message (class `mha-message`, hidden when empty) and an
`ipywidgets.Image` (class `mha-figure`). A subclass may add text outputs (class `mha-readout`).
"""

from __future__ import annotations

import base64
import contextlib
import io
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import ipywidgets as widgets
from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from .._blas import one_blas_thread


def divisors(n: int, most: int | None = None) -> list[int]:
    """Positive divisors of n (up to most) in increasing order: the valid head counts for d_model = n."""
    return [i for i in range(1, (n if most is None else min(n, most)) + 1) if n % i == 0]


def settle_layout(fig: Figure) -> None:
    """Run constrained layout once, then keep the axes where it put them.

    Later renders skip the layout pass (measuring every tick label again), which is most of their cost.
    Call it again whenever the axes themselves change (new tick labels, new subplots).
    """
    fig.set_layout_engine("constrained")
    fig.draw_without_rendering()
    fig.set_layout_engine("none")


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
    """

    backgrounds_kept = 1  # cached backgrounds (keys) kept, the least recently used dropped first

    def __init__(
        self, controls: dict[str, widgets.ValueWidget], *, figsize: tuple[float, float] = (9, 3.6), dpi: int = 90
    ) -> None:
        self.controls = controls
        self.figure = Figure(figsize=figsize, dpi=dpi, layout="constrained")
        self.canvas = FigureCanvasAgg(self.figure)
        self.image = widgets.Image(format="png")
        self.image.add_class("mha-figure")
        self.message = widgets.HTML(layout=widgets.Layout(display="none"))
        self.message.add_class("mha-message")
        self.readouts: list[widgets.Widget] = []
        self.data: Any = None
        self.error: str | None = None
        self._held = False
        self.moving: list[Artist] = []  # drawn on every render, over the cached still background
        self._backgrounds: OrderedDict[Hashable, Any] = OrderedDict()
        box = widgets.HBox(list(controls.values()), layout=widgets.Layout(flex_flow="row wrap"))
        box.add_class("mha-controls")
        self.widget = widgets.VBox([box, self.message, self.image])
        self.widget.add_class("mha-explorer")
        self.widget.add_class(f"mha-explorer-{type(self).__name__}")  # lets the browser tests name it
        for control in controls.values():
            control.observe(self._on_change, names="value")
        self.setup(self.figure)
        self.refresh()

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
    def add_readout(self, widget: widgets.Widget) -> widgets.Widget:
        """Show a text widget (e.g. widgets.HTML) between the controls and the figure."""
        widget.add_class("mha-readout")
        self.readouts.append(widget)
        self.widget.children = (self.widget.children[0], *self.readouts, self.message, self.image)
        return widget

    def values(self) -> dict[str, Any]:
        """Current value of every control, by name."""
        return {name: control.value for name, control in self.controls.items()}

    def set(self, **values: Any) -> None:
        """Set several controls at once and redraw once (as a learner would, one after the other)."""
        with self.hold():
            for name, value in values.items():
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
        with one_blas_thread():
            try:
                self.data = self.compute(**self.values())
            except ValueError as exc:
                self.show_message(str(exc))
                return
            self.draw(self.data)
            self.image.value = self.render_png()
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

    def background_key(self) -> Hashable:
        """What the still background depends on besides the figure (e.g. axis limits that follow a control)."""
        return None

    def invalidate_background(self) -> None:
        """Drop every cached background: the next render draws the still parts again."""
        self._backgrounds.clear()

    def render_png(self) -> bytes:
        """The figure as PNG bytes: the cached background with the moving artists on top (or a full draw)."""
        canvas = self.canvas
        if not self.moving:
            canvas.draw()
        else:
            key = (canvas, self.background_key())
            if key in self._backgrounds:
                canvas.restore_region(self._backgrounds[key])
                self._backgrounds.move_to_end(key)
            else:
                canvas.draw()  # everything but the animated artists
                self._backgrounds[key] = canvas.copy_from_bbox(self.figure.bbox)
                while len(self._backgrounds) > self.backgrounds_kept:
                    self._backgrounds.popitem(last=False)
            for artist in self.moving:
                self.figure.draw_artist(artist)
            for ax in self.figure.axes:  # frames back on top of bars and images, as in a full draw
                if not ax.get_animated():
                    for spine in ax.spines.values():
                        if not spine.get_animated():  # an animated spine was drawn with the moving artists
                            ax.draw_artist(spine)
        buf = io.BytesIO()
        rgba = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
        # The figure is opaque, so RGB loses nothing and encodes faster. Flat colours compress well even at
        # level 1, which encodes several times faster than the default 6.
        rgba.convert("RGB").save(buf, format="png", compress_level=1)
        return buf.getvalue()

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
                self.controls[h].options = options
                # Keep the learner's h when still valid, else the nearest valid one.
                self.controls[h].value = min(options, key=lambda o: (abs(o - current), o))

        self.before_redraw(update_options, d_model)  # fix h first, then redraw once with a valid pair

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        if self.error is None:
            # A static fallback: JupyterLab prefers the live widget; static HTML export shows this PNG.
            bundle["image/png"] = base64.b64encode(self.image.value).decode("ascii")
        return bundle
