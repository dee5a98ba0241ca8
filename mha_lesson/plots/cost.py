"""Cost charts for lesson 2: total and per-part FLOPs of three designs, and counts as the number of heads h varies."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.container import BarContainer
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.ticker import EngFormatter, FixedLocator, NullFormatter, NullLocator, ScalarFormatter

from ..cost import PARTS

# The three designs compared, with a legend label and a colour each.
DESIGNS = {
    "one": ("1 head, d_k = d_model", "0.55"),
    "split": ("h heads, d_k = d_model / h", "C0"),
    "naive": ("h heads, d_k = d_model (naive)", "C3"),
}
PART_LABELS = (
    "projections\nQ, K, V",
    "scores\nQ_i K_iᵀ",
    "softmax",
    "weighted\nsum A_i V_i",
    "output\nprojection",
    "total",
)


def log_y(ax: Axes, ylim: tuple[float, float] | None = None) -> None:
    """Log y axis with engineering labels (1k, 1M, 1G); with ylim, fixed there with a grid line per power of 10."""
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(EngFormatter(sep=""))
    ax.yaxis.set_minor_locator(NullLocator())
    if ylim is not None:
        lo, hi = math.ceil(math.log10(ylim[0])), math.floor(math.log10(ylim[1]))
        step = -(-(hi - lo + 1) // 6)  # label at most 6 powers of 10 so the labels never crowd
        ax.yaxis.set_major_locator(FixedLocator([10.0**k for k in range(lo, hi + 1) if k % step == 0]))
        ax.yaxis.set_minor_locator(FixedLocator([10.0**k for k in range(lo, hi + 1)]))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(*ylim)
    ax.grid(axis="y", which="both", alpha=0.3)


def flops_bars(
    ax: Axes, flops: Mapping[str, Mapping[str, int]], ylim: tuple[float, float] | None = None
) -> dict[str, BarContainer]:
    """Grouped bars of FLOPs per part (and total) for each design in flops {design: flop_count(...)}.

    Without ylim the y range fits the bars; with it the range stays fixed, so bars rise and fall visibly.
    """
    x = np.arange(len(PART_LABELS))
    width = 0.8 / len(DESIGNS)
    bars = {}
    for j, (design, (label, colour)) in enumerate(DESIGNS.items()):
        heights = [flops[design][p] for p in (*PARTS, "total")]
        bars[design] = ax.bar(x + (j - 1) * width, heights, width, label=label, color=colour)
    log_y(ax, ylim)
    ax.set_axisbelow(True)  # grid lines behind the bars
    ax.set_xticks(x, PART_LABELS, fontsize=9)
    ax.set_xlabel("part of the layer")
    ax.set_ylabel("FLOPs per forward pass")
    set_flops_bars(ax, bars, flops, fit=ylim is None)
    return bars


def set_flops_bars(
    ax: Axes, bars: Mapping[str, BarContainer], flops: Mapping[str, Mapping[str, int]], fit: bool = True
) -> None:
    """Update the bar heights in place; with fit, fit the log-scale y range to them."""
    for design, container in bars.items():
        for rect, part in zip(container.patches, (*PARTS, "total"), strict=True):
            rect.set_height(flops[design][part])
    if fit:
        values = [flops[d][p] for d in bars for p in (*PARTS, "total")]
        ax.set_ylim(min(values) / 3, max(values) * 3)


# Room above a sweep panel, between its title and its top edge, for one row of legend (points): every lower
# panel gets it, with or without a legend, so that their titles line up.
LEGEND_ROOM = 18.0


def legend_above(ax: Axes, handles: Sequence[Artist], labels: Sequence[str], fontsize: float = 9) -> Legend:
    """One row of legend in the room sweep_axes leaves between the title and the top of the axes.

    Outside the data area, so that no line (nor the current-h marker) can pass under it at any control value.
    """
    return ax.legend(
        handles,
        labels,
        loc="lower center",
        bbox_to_anchor=(0.5, 1.0),
        ncols=len(labels),
        fontsize=fontsize,
        frameon=False,
        borderaxespad=0.1,
        borderpad=0.2,
        handlelength=2.2,
        columnspacing=1.2,
    )


def sweep_axes(
    ax: Axes, title: str, ylabel: str, styles: Mapping[str, dict], h_max: int, ylim: tuple[float, float]
) -> tuple[dict[str, Line2D], Line2D]:
    """Empty lines (one per entry of styles: name -> Line2D keywords) against h = 1..h_max on fixed log-log axes,
    and a dotted line marking the current h. The title leaves room for a `legend_above` the axes."""
    lines = {name: ax.plot([], [], **style)[0] for name, style in styles.items()}
    marker = ax.axvline(1, color="k", linestyle=":", linewidth=1)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator([4**k for k in range(int(math.log(h_max, 4)) + 1)]))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(1 / 1.3, h_max * 1.3)
    log_y(ax, ylim)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title, fontsize=10, pad=LEGEND_ROOM)
    ax.set_xlabel("number of heads h")
    ax.set_ylabel(ylabel)
    return lines, marker


def set_sweep(
    lines: Mapping[str, Line2D], marker: Line2D, hs: Sequence[int], ys: Mapping[str, Sequence[float]], h: int
) -> None:
    """Set every line's data over hs and move the marker to the current h."""
    for name, line in lines.items():
        line.set_data(hs, ys[name])
    marker.set_xdata([h, h])


def total_bars(ax: Axes, flops: Mapping[str, Mapping[str, int]]) -> BarContainer:
    """One bar per design of the layer's total FLOPs (linear axis), each labelled with its multiple of one head's."""
    totals = [flops[design]["total"] for design in DESIGNS]
    labels = [label.replace(", ", "\n") for label, _ in DESIGNS.values()]
    bars = ax.bar(labels, [t / 1e6 for t in totals], color=[colour for _, colour in DESIGNS.values()])
    ax.bar_label(bars, [f"{t / totals[0]:.4g} × one head" for t in totals], fontsize=9)
    ax.margins(y=0.12)  # room for the tallest bar's label
    ax.set_xlabel("design")
    ax.set_ylabel("FLOPs per forward pass (millions)")
    return bars
