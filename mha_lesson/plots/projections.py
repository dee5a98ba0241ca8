"""Lesson 3's figures: a matrix cut into per-head column blocks, and queries and keys in a head's 2-D plane."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from matplotlib.image import AxesImage
from matplotlib.patches import Rectangle
from matplotlib.text import Annotation


def column_blocks(
    ax: Axes,
    matrix: np.ndarray,
    h: int | None = None,
    *,
    title: str,
    block_name: str = "head {}",
    row_labels: Sequence[str] | None = None,
    row_name: str = "input feature",
) -> AxesImage:
    """Heatmap of a (rows, cols) matrix, red > 0 > blue; with h, a frame and a label block_name.format(i) per head.

    Head i's block is columns i*d_k:(i+1)*d_k with d_k = cols / h. row_labels name the rows (e.g. tokens).
    """
    matrix = np.asarray(matrix)
    if matrix.ndim != 2:
        raise ValueError(f"matrix: expected a 2-D array, got shape {matrix.shape}")
    rows, cols = matrix.shape
    if h is not None and (h < 1 or cols % h):
        raise ValueError(f"h: expected a divisor of the {cols} columns, got {h}")
    vmax = float(np.abs(matrix).max()) or 1.0  # symmetric colour scale, so white is exactly 0
    im = ax.imshow(matrix, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto", interpolation="nearest")
    ax.set_title(title)
    if h is None:
        ax.set_xlabel("column (feature)")
    else:
        d_k = cols // h
        for i in range(h):
            ax.add_patch(Rectangle((i * d_k - 0.5, -0.5), d_k, rows, fill=False, edgecolor="k", linewidth=1.5))
        # Block names on a top axis of their own, so they never collide with the title or the column numbers.
        top = ax.secondary_xaxis("top")
        top.set_xticks([i * d_k + (d_k - 1) / 2 for i in range(h)], [block_name.format(i) for i in range(h)])
        top.tick_params(length=0)
        ax.set_xlabel(f"column (feature): {h} blocks of d_k = {d_k}")
        ax.set_xticks(range(0, cols, d_k))
    if row_labels is not None:
        ax.set_yticks(range(rows), [str(t) for t in row_labels])
    ax.set_ylabel(row_name)
    return im


_Q_OFFSET, _K_OFFSET = (3, 2), (3, -2)  # label offsets in points: queries above right, keys below right
_LINE, _WIDTH = 11, 26  # a label's height and a typical word's width, in points (fontsize 9)


def token_plane(
    ax: Axes, tokens: Sequence[str]
) -> tuple[PathCollection, PathCollection, list[Annotation], list[Annotation]]:
    """Queries (circles) and keys (triangles) with a label per token, all at 0 until set_token_plane moves them."""
    n = len(tokens)
    queries = ax.scatter(np.zeros(n), np.zeros(n), marker="o", s=40, color="C0", label="query (a row of $Q_i$)")
    keys = ax.scatter(np.zeros(n), np.zeros(n), marker="^", s=48, color="C1", label="key (a row of $K_i$)")
    # Labels sit a few points off their marker: queries above right, keys below right. The limits always
    # contain every point (set_token_plane), so skip the per-draw test of whether each point is inside.
    style = {"textcoords": "offset points", "fontsize": 9, "annotation_clip": False}

    def leader(colour: str, corner: tuple[float, float]) -> dict:
        # A thin line from the label's corner nearest its marker to the marker, shown only when spread_labels
        # pushed the label away from it. patchA None: the line starts at that corner, outside the text, so it
        # needs no clipping at the text's box (which cost more than drawing the label).
        line = {"arrowstyle": "-", "color": colour, "lw": 0.6, "relpos": corner}
        return line | {"patchA": None, "shrinkA": 0, "shrinkB": 4}

    q_text = [
        ax.annotate(t, (0, 0), xytext=_Q_OFFSET, color="C0", arrowprops=leader("C0", (0, 0)), **style) for t in tokens
    ]
    k_text = [
        ax.annotate(t, (0, 0), xytext=_K_OFFSET, color="C1", va="top", arrowprops=leader("C1", (0, 1)), **style)
        for t in tokens
    ]
    for label in [*q_text, *k_text]:
        label.arrow_patch.set_visible(False)
    ax.axhline(0, color="0.8", linewidth=0.8, zorder=0)
    ax.axvline(0, color="0.8", linewidth=0.8, zorder=0)
    ax.set_aspect("equal", adjustable="box")
    # Below the panel, where no point can hide under it.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncols=2, fontsize=9)
    return queries, keys, q_text, k_text


def nice_limit(x: float) -> float:
    """The smallest of 1, 1.5, 2, 3, 4, 5, 7.5 times a power of ten that is at least x > 0.

    Few distinct limits mean few distinct backgrounds (ticks and their labels) for a redraw to cache.
    """
    power = 10.0 ** math.floor(math.log10(x))
    return next(m * power for m in (1, 1.5, 2, 3, 4, 5, 7.5, 10) if m * power >= x * (1 - 1e-12))


def set_token_plane(
    ax: Axes,
    artists: tuple[PathCollection, PathCollection, list[Annotation], list[Annotation]],
    q2: np.ndarray,
    k2: np.ndarray,
) -> None:
    """Move the queries to q2 (n, 2) and the keys to k2 (n, 2), with their labels; square limits around 0."""
    queries, keys, q_text, k_text = artists
    queries.set_offsets(q2)
    keys.set_offsets(k2)
    for label, xy in zip([*q_text, *k_text], np.concatenate([q2, k2]), strict=True):
        label.xy = tuple(xy)
    # The cloud fills most of the panel (tick values give the scale), with room for the labels.
    lim = nice_limit(1.2 * max(float(np.abs(np.concatenate([q2, k2])).max()), 1e-9))
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    spread_labels(ax, q_text, k_text)


def spread_labels(ax: Axes, q_text: list[Annotation], k_text: list[Annotation]) -> None:
    """Move a label a line up (queries) or down (keys) while it would cover a label already placed; a label moved
    away from its marker gets a thin leader line to it."""
    points = 72 / ax.figure.dpi  # pixels -> points
    placed: list[tuple[float, float]] = []  # (x, y) of each placed label's corner, in points
    for label, (dx, start) in [*((t, _Q_OFFSET) for t in q_text), *((t, _K_OFFSET) for t in k_text)]:
        x, y = ax.transData.transform(label.xy) * points
        dy, step = start, (_LINE if start > 0 else -_LINE)
        for _ in range(4):  # at most a few lines away, so a label stays next to its marker
            if not any(abs(x + dx - px) < _WIDTH and abs(y + dy - py) < _LINE for px, py in placed):
                break
            dy += step
        label.xyann = (dx, dy)
        label.arrow_patch.set_visible(dy != start)
        placed.append((x + dx, y + dy))
