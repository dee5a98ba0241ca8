"""The series' figure defaults in one place: figures fit a JupyterLab cell, text stays readable, HiDPI stays sharp.

Every lesson's setup cell calls `use_lesson_style()` once. Sizes are in inches at `DPI` CSS pixels per inch. A
figure `WIDTH` inches wide, the widest, shows at its natural size in a cell of a 1400-pixel window (about
`CELL_WIDTH_PX`), and a laptop's narrower output area (`LAPTOP_OUTPUT_PX`) scales it down by so little that a label
of 9 points still reads at `MIN_LAPTOP_TEXT_PX`. Static figures go out as
'retina' PNGs (twice the pixels, shown at the same CSS size); explorers do the same where a move can afford
the pixels, through `Explorer.pixel_ratio` (mha_lesson.widgets._base).
"""

from __future__ import annotations

from typing import Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.text import Text

DPI = 100  # CSS pixels per inch of a static figure (matplotlib's default dpi)
CELL_WIDTH_PX = 950  # the width of a JupyterLab cell's output area at 1x, for a window about 1400 pixels wide
MIN_TEXT_PX = 9.0  # smallest text, in CSS pixels as displayed (7 pt at DPI)
# A laptop: in a 1024-pixel JupyterLab window with the file browser open, a cell's output area is about 588 CSS
# pixels wide (measured in headless Chromium), and a wider figure is scaled down to it. Its text should still read.
LAPTOP_OUTPUT_PX = 588
MIN_LAPTOP_TEXT_PX = 10.0
# inches: the widest static figure. Its 9-point ticks (12.5 CSS px) still show at 10.3 px once a laptop scales the
# figure down to 588 px, with the ~12 px that bbox_inches='tight' adds; at 1400 pixels it fits a cell as it is.
WIDTH = 7.0

# Smaller than matplotlib's defaults (10 pt ticks, 12 pt titles): panels of a cell-wide grid are 3-4 inches wide.
RC: dict[str, Any] = {
    "figure.dpi": DPI,
    "savefig.dpi": "figure",
    "figure.figsize": (WIDTH, 3.8),
    "figure.constrained_layout.use": True,
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "legend.title_fontsize": 9,
    "figure.titlesize": 12,
}


def figsize(height: float, width: float = 1.0) -> tuple[float, float]:
    """(width, height) in inches: `width` cell widths wide (1.0: the whole cell), `height` inches tall."""
    if not 0 < width <= 1:
        raise ValueError(f"width: expected a fraction of the cell width in (0, 1], got {width!r}")
    return (round(WIDTH * width, 3), height)


def use_lesson_style() -> None:
    """Apply the series' figure defaults; in a notebook, also send inline figures as retina (2x) PNGs."""
    matplotlib.rcParams.update(RC)
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: the rcParams are all there is to set
        return
    if get_ipython() is None:
        return
    from matplotlib_inline.backend_inline import set_matplotlib_formats
    from matplotlib_inline.config import InlineBackend

    # Kept in the backend's config, so the format survives pyplot activating the backend after this call;
    # set_matplotlib_formats applies it at once, for a backend that is already active.
    InlineBackend.instance().figure_formats = {"retina"}
    set_matplotlib_formats("retina")


def css_width(fig: Figure, pixel_ratio: float = 1.0) -> float:
    """Width of fig in CSS pixels when its PNG (drawn at fig.dpi) is shown at 1/pixel_ratio of its pixel size."""
    return fig.get_figwidth() * fig.dpi / pixel_ratio


def smallest_text_px(fig: Figure, pixel_ratio: float = 1.0) -> tuple[float, str]:
    """The smallest visible, non-empty text of fig in CSS pixels (its size in points at fig.dpi / pixel_ratio),
    with that text: for checking that every label is readable (>= MIN_TEXT_PX)."""
    fig.draw_without_rendering()  # tick labels exist only once the axes have been drawn
    px = fig.dpi / pixel_ratio / 72
    texts = [
        t
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and (t.axes is None or t.axes.get_visible())
    ]
    if not texts:
        return float("inf"), ""
    smallest = min(texts, key=lambda t: t.get_fontsize())
    return smallest.get_fontsize() * px, smallest.get_text()


def shown_text_px(fig: Figure, pixel_ratio: float = 1.0, output_px: float = LAPTOP_OUTPUT_PX) -> tuple[float, str]:
    """The smallest text of fig in CSS pixels as an output area output_px wide shows it: a wider figure is scaled
    down to the area (never up), its text with it. With that text (see smallest_text_px)."""
    px, text = smallest_text_px(fig, pixel_ratio)
    return scaled_px(px, css_width(fig, pixel_ratio), output_px), text


def scaled_px(px: float, width_px: float, output_px: float = LAPTOP_OUTPUT_PX) -> float:
    """A length of px CSS pixels in an image width_px wide, as an output area output_px wide shows it: an image
    wider than the area is scaled down to it (never up)."""
    return px * min(1.0, output_px / width_px)
