"""Lesson 1's picture of the whole layer: sliders h, d_model and n reprint every array's shape.

The boxes, arrows and headings are the still background (drawn once); a move rewrites only the six shape texts
and the title, from `mha_lesson.plots.layer.layer_shapes`.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
from matplotlib.figure import Figure

from ..plots.layer import FIGSIZE, draw_layer, layer_shapes, new_layer_axes, set_shapes, title
from ._base import Explorer, check_start, divisors

D_MODELS = (8, 12, 16, 24, 32, 64, 512)  # small widths whose every number fits a box; 512 is the paper's
LENGTHS = tuple(range(1, 13))


class LayerExplorer(Explorer):
    """Sliders d_model, h, n -> the layer's diagram with every array's shape printed for those sizes."""

    def __init__(self, d_model: int = 16, h: int = 4, n: int = 6) -> None:
        # Each starting value one its control offers: a ValueError naming the argument, not ipywidgets' TraitError.
        check_start("d_model", d_model, D_MODELS)
        check_start("h", h, divisors(d_model, 16))
        check_start("n", n, LENGTHS)
        controls = {
            "d_model": widgets.SelectionSlider(options=D_MODELS, value=d_model, description="d_model"),
            "h": widgets.SelectionSlider(options=divisors(d_model, 16), value=h, description="h (heads)"),
            "n": widgets.SelectionSlider(options=LENGTHS, value=n, description="n (tokens)"),
        }
        super().__init__(controls, figsize=FIGSIZE, dpi=100)
        self.keep_heads_valid(most=16)

    def setup(self, fig: Figure) -> None:
        """The boxes and arrows, once; the shape texts and the title move."""
        ax = new_layer_axes(fig)
        self.texts = draw_layer(ax)
        self.title = ax.set_title(" ", fontsize=10)
        self.animate(*self.texts.values(), self.title)

    def compute(self, d_model: int, h: int, n: int) -> dict[str, Any]:
        """The shapes at these sizes and the title that names them."""
        return {"shapes": layer_shapes(h, d_model, n), "title": title(h, d_model, n)}

    def draw(self, data: dict[str, Any]) -> None:
        """Rewrite the shape texts and the title."""
        set_shapes(self.texts, data["shapes"])
        self.title.set_text(data["title"])


def layer_explorer(d_model: int = 16, h: int = 4, n: int = 6) -> LayerExplorer:
    """Lesson 1's explorer of the layer's shapes, starting at d_model = 16, h = 4, n = 6 (d_k = 4)."""
    return LayerExplorer(d_model, h, n)
