"""Lesson 1's explorer: where one head (or two) looks, and how much of the binding task's target it can fit.

one_head_fit is the explorer's pure compute (tests call it). Every fit on the slider's grid is solved once, on
first use, by mha_lesson.demos.one_head; a move only looks its numbers up and redraws.
"""

from __future__ import annotations

import functools
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MultipleLocator

from .._checks import check_number
from ..demos.one_head import binding_task, fit_heads, heads_alphas
from ..plots.one_head import HEAD_COLOURS
from ._base import Explorer, check_start, settle_layout

STEP = 0.05  # the alpha slider's step: 21 positions from 0 to 1, 0.5 among them
ALPHAS = np.round(np.arange(0, 1 + STEP / 2, STEP), 2)  # (21,)
HEADS = (1, 2)
POINTS = 200  # positions shown in the scatter of fitted against target values
OUTPUT = 0  # the output coordinate the scatter shows
BAR_COLOURS = ("tab:green", "tab:orange")  # head 0, head 1: not the colours of h = 1 and h = 2
# 584 x 520 CSS px: as wide as a laptop's output area beside the file browser (588 px), so nothing scales its text.
FIGSIZE = (7.3, 6.5)


@functools.cache
def _grid() -> dict[int, dict[str, np.ndarray]]:
    """For h = 1 and 2: R^2 at every alpha of the grid (len(ALPHAS),) and the fitted values shown (len(ALPHAS), POINTS).

    Key 0 holds the target values shown (POINTS,), the same for every fit.
    """
    task = binding_task()
    target = task.target[:POINTS, OUTPUT]
    grid = {}
    for h in HEADS:
        fits = [fit_heads(task, heads_alphas(alpha, h)) for alpha in ALPHAS]
        fitted = np.stack([f.fitted[:POINTS, OUTPUT] for f in fits])  # (len(ALPHAS), POINTS)
        grid[h] = {"r2": np.array([f.r2 for f in fits]), "fitted": fitted, "r2_shown": shown_r2(target, fitted)}
    grid[0] = {"target": target}
    return grid


def shown_r2(target: np.ndarray, fitted: np.ndarray) -> np.ndarray:
    """R^2 of the points the scatter draws: 1 - residual / total sum of squares of target (POINTS,) against each
    row of fitted (k, POINTS). One output coordinate of a few positions: it differs from the fit's overall R^2."""
    residual = ((fitted - target) ** 2).sum(axis=-1)
    return 1 - residual / ((target - target.mean()) ** 2).sum()


def one_head_fit(alpha: float = 0.5, h: int = 1) -> dict[str, Any]:
    """The least-squares fit of h heads (h = 2: the second head looks with 1 - alpha) at the grid point nearest alpha.

    Returns alpha, h, the heads' weights on (key t-1, key t-2) as an (h, 2) array, r2 (over every output coordinate),
    the R^2 curves of both h over ALPHAS, the POINTS target and fitted values of output coordinate OUTPUT and
    r2_shown, the R^2 of those points (what the scatter shows).
    """
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha: expected a number in [0, 1], got {alpha!r}")
    if h not in HEADS:
        raise ValueError(f"h: expected 1 or 2 heads, got {h!r}")
    grid = _grid()
    i = int(np.abs(ALPHAS - alpha).argmin())  # the nearest grid point: 0.15000000000000002 is 0.15
    alpha = float(ALPHAS[i])
    weights = np.array([[a, 1 - a] for a in heads_alphas(alpha, h)])  # (h, 2): on key t-1 (alpha), key t-2
    return {
        "alpha": alpha,
        "h": h,
        "weights": weights,
        "r2": float(grid[h]["r2"][i]),
        "r2_shown": float(grid[h]["r2_shown"][i]),
        "curves": {k: grid[k]["r2"] for k in HEADS},
        "target": grid[0]["target"],
        "fitted": grid[h]["fitted"][i],
    }


def describe_fit(data: dict[str, Any]) -> str:
    """One HTML line: what each head reads, and the R^2 it reaches."""
    reads = "; ".join(
        f"head {i} reads {w1:.2f}·x<sub>t−1</sub> + {w2:.2f}·x<sub>t−2</sub>"
        for i, (w1, w2) in enumerate(data["weights"])
    )
    return f"{reads}. Best maps by least squares: <b>R² = {data['r2']:.3f}</b>"


class OneHeadExplorer(Explorer):
    """Slider alpha and a choice of h -> the heads' weights, R^2 against alpha, and fitted against target values."""

    pixel_ratio = 2  # sharp on HiDPI: a move draws a few bars and points, about 30 ms at 2x (bench widgets)

    def __init__(self, alpha: float = 0.5, h: int = 1) -> None:
        if not 0 <= check_number("alpha", alpha) <= 1:  # snapped to the grid's nearest value below
            raise ValueError(f"alpha: expected a number from 0 to 1, got {alpha!r}")
        check_start("h", h, HEADS)
        controls = {
            # The grid's values exactly (a FloatSlider lands a hair off them), shown with two decimals.
            "alpha": widgets.SelectionSlider(
                options=[(f"{a:.2f}", float(a)) for a in ALPHAS],
                value=float(ALPHAS[np.abs(ALPHAS - alpha).argmin()]),
                description="α (on t−1)",
                continuous_update=False,
            ),
            "h": widgets.ToggleButtons(options=[("1 head", 1), ("2 heads", 2)], value=h, description="heads"),
        }
        self.text = widgets.HTML()
        super().__init__(controls, figsize=FIGSIZE, dpi=80)
        self.add_readout(self.text)

    def setup(self, fig: Figure) -> None:
        """Bars of the heads' two weights and the scatter of fitted against target on top; below, across the whole
        width, both R^2 curves with a marker."""
        panels = fig.subplot_mosaic([["w", "fit"], ["r2", "r2"]], height_ratios=(1.15, 1))
        ax_w, ax_r2, ax_fit = panels["w"], panels["r2"], panels["fit"]
        grid = _grid()
        # Two bars per head: its weight on key t-1 (alpha, the slider's) and on key t-2. Head 1's stay 0 while h = 1.
        self.bars = [
            ax_w.bar(np.arange(2) + (i - 0.5) * 0.38, [0, 0], 0.36, color=colour, label=f"head {i}")
            for i, colour in enumerate(BAR_COLOURS)
        ]
        ax_w.set_xticks([0, 1], ["key t−1", "key t−2"])
        # Room above 1 for the legend, so a bar of weight 1 never covers it (ticks stop at 1: weights do).
        ax_w.set_ylim(0, 1.25)
        ax_w.set_yticks(np.linspace(0, 1, 6))
        ax_w.set_ylabel("attention weight")
        ax_w.set_title("where each head looks\n(head 0: α on t−1)")
        # Animated, so that head 1's entry shows only while its bars do (h = 2); no frame, so no empty row shows.
        self.legend = ax_w.legend(loc="upper center", ncol=2, fontsize=9, frameon=False)
        for h in HEADS:
            ax_r2.plot(ALPHAS, grid[h]["r2"], "-o", ms=3, color=HEAD_COLOURS[h], label=f"h = {h}")
        ax_r2.axhline(0.5, color="grey", lw=0.8, ls=":", label="R² = 0.5: one head's average")
        (self.marker,) = ax_r2.plot([], [], "o", ms=12, mfc="none", mec="k", mew=2)
        ax_r2.set_xlim(-0.02, 1.02)
        ax_r2.set_ylim(0, 1.08)
        ax_r2.set_xlabel("α: weight on key t−1")
        ax_r2.set_ylabel("R² (share of variance explained)")
        ax_r2.set_title("R² of the best maps, for every α")
        ax_r2.legend(loc="lower right", fontsize=9)
        target = grid[0]["target"]
        reach = max(np.abs(target).max(), max(np.abs(grid[h]["fitted"]).max() for h in HEADS)) * 1.05
        ax_fit.plot([-reach, reach], [-reach, reach], color="grey", lw=1, ls="--", label="perfect fit")
        (self.points,) = ax_fit.plot([], [], "o", ms=3, alpha=0.6)
        ax_fit.set_xlim(-reach, reach)
        ax_fit.set_ylim(-reach, reach)
        for axis in (ax_fit.xaxis, ax_fit.yaxis):  # fixed ticks: the automatic choice differed between draws
            axis.set_major_locator(MultipleLocator(1))
        ax_fit.set_xlabel(f"target y_t, coordinate {OUTPUT}")
        ax_fit.set_ylabel("what the heads output")
        ax_fit.set_title(f"coordinate {OUTPUT}: R² = −0.000 (h = 2)")  # the longest title, for the layout
        ax_fit.legend(loc="upper left", fontsize=9)
        settle_layout(fig)  # the axes never change: one layout pass instead of one per move
        patches = [p for bars in self.bars for p in bars]
        self.animate(*patches, self.marker, self.points, ax_fit.title, self.legend)

    def compute(self, alpha: float, h: int) -> dict[str, Any]:
        """one_head_fit at the controls' values."""
        return one_head_fit(alpha, h)

    def draw(self, data: dict[str, Any]) -> None:
        """Set the bar heights, move the marker and swap the scatter's points."""
        h = data["h"]
        for i, bars in enumerate(self.bars):
            heights = data["weights"][i] if i < h else (0.0, 0.0)
            for bar, height in zip(bars, heights, strict=True):
                bar.set_height(height)
        for i, (handle, text) in enumerate(zip(self.legend.legend_handles, self.legend.get_texts(), strict=True)):
            handle.set_visible(i < h)
            text.set_visible(i < h)
        self.marker.set_data([data["alpha"]], [data["r2"]])
        self.points.set_data(data["target"], data["fitted"])
        self.points.set_color(HEAD_COLOURS[h])
        # set_text, not set_title: set_title would reset the position the layout gave the title.
        # The R^2 of the points drawn (the text line and the middle panel give the fit's R^2 over all coordinates).
        self.points.axes.title.set_text(f"coordinate {OUTPUT}: R² = {data['r2_shown']:.3f} (h = {h})")
        self.text.value = describe_fit(data)


def one_head_explorer(**values: Any) -> OneHeadExplorer:
    """The one-head-or-two explorer of lesson 1."""
    return OneHeadExplorer(**values)
