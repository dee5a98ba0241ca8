"""Figures for lessons 4-6: updating per-head heatmaps, matrices with head blocks, per-head bar charts.

recovery_bars draws lesson 5's "concatenate, do not sum" numbers, computed by mha_lesson.demos.concat.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.container import BarContainer
from matplotlib.image import AxesImage


def set_heatmaps(images: Sequence[AxesImage], weights: np.ndarray, titles: Sequence[str]) -> None:
    """Put weights (h, n_q, n_kv) into existing heatmaps, resizing them when n changed."""
    n_q, n_kv = weights.shape[-2:]
    for im, w, title in zip(images, weights, titles, strict=True):
        im.set_data(w)
        im.set_extent((-0.5, n_kv - 0.5, n_q - 0.5, -0.5))  # rows = queries from the top
        im.axes.set_xlim(-0.5, n_kv - 0.5)
        im.axes.set_ylim(n_q - 0.5, -0.5)
        im.axes.title.set_text(title)  # not set_title, which would reset a title's place to the default


def matrix_image(
    ax: Axes,
    m: np.ndarray,
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    col_edges: Sequence[int] = (),
    row_edges: Sequence[int] = (),
    colorbar_label: str = "value",
    vmax: float | None = None,
    colorbar: bool = True,
    sequential: bool = False,
    block_names: Sequence[str] | None = None,
) -> AxesImage:
    """Show a matrix on a diverging colour scale centred on 0, with lines before the given columns and rows.

    col_edges / row_edges: indices where a new block starts (e.g. range(d_k, d_model, d_k) for heads).
    colorbar=False leaves the colour bar out (for panels that share one, drawn by the caller).
    sequential=True: a matrix with no negative entry gets a sequential scale from 0 instead (no wasted blue half).
    block_names: one name per column block (len(col_edges) + 1), written above the matrix over its block.
    """
    m = np.asarray(m)
    if m.ndim != 2:
        raise ValueError(f"m: expected a 2-D matrix, got shape {m.shape}")
    if vmax is None:
        vmax = float(np.abs(m).max()) or 1.0  # an all-zero matrix still needs a valid colour range
    if sequential and (m < 0).any():
        raise ValueError(f"m: a sequential colour scale needs entries >= 0, got a minimum of {m.min():.3g}")
    scale = {"cmap": "Blues", "vmin": 0.0} if sequential else {"cmap": "RdBu_r", "vmin": -vmax}
    im = ax.imshow(m, vmax=vmax, aspect="auto", interpolation="nearest", **scale)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if row_labels is not None:
        ax.set_yticks(range(m.shape[0]), list(row_labels))
    if col_labels is not None:
        ax.set_xticks(range(m.shape[1]), list(col_labels), rotation=90)
    for edge in col_edges:
        ax.axvline(edge - 0.5, color="k", lw=1)
    if block_names is not None:
        starts = [0, *col_edges]
        if len(block_names) != len(starts):
            raise ValueError(
                f"block_names: expected {len(starts)} names (one per column block), got {len(block_names)}"
            )
        ends = [*col_edges, m.shape[1]]
        top = ax.secondary_xaxis("top")
        top.set_xticks([(a + b - 1) / 2 for a, b in zip(starts, ends, strict=True)], list(block_names))
        top.tick_params(length=0)
    for edge in row_edges:
        ax.axhline(edge - 0.5, color="k", lw=1)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, label=colorbar_label, shrink=0.85)
    return im


def labelled_bars(
    ax: Axes, labels: Sequence[str], values: Sequence[float], *, title: str, xlabel: str, ylabel: str
) -> BarContainer:
    """One bar per label."""
    bars = ax.bar(range(len(values)), values, color="C0")
    ax.set_xticks(range(len(values)), list(labels))
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return bars


def recovery_bars(ax: Axes, errors: dict[str, np.ndarray]) -> None:
    """Grouped bars: per head, the relative recovery error from the concatenation and from the sum."""
    h = len(errors["concat"])
    x = np.arange(h)
    for shift, key, colour, label in (
        (-0.2, "concat", "C2", "from the concatenation (a slice)"),
        (0.2, "sum", "C3", "from the sum (best linear read-out)"),
    ):
        bars = ax.bar(x + shift, errors[key], width=0.4, color=colour, label=label)
        ax.bar_label(bars, fmt="%.2f", fontsize=9)  # a zero-height bar still shows its 0.00; 9 pt reads on a laptop
    ax.set_xticks(x, [f"head {i}" for i in range(h)])
    ax.set_ylim(0, 1.1)
    ax.set_title("can each head be read back?")
    ax.set_xlabel("head")
    ax.set_ylabel("relative error ‖recovered − head‖ / ‖head‖")
    ax.legend(loc="upper right", fontsize=9)
