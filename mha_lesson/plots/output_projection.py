"""Lesson 6's picture of W^O in blocks: concat times W^O as one full-width term per head, coloured by head.

A schematic, not data: random weights drawn as a heatmap read as noise, while the point of the lesson is the block
structure (head i's columns of the concatenation meet only the rows of W^O_i, and each term is as wide as the
output), which colours show directly.
"""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.patches import Rectangle

from .._checks import check_positive_int

CELL = 0.15  # data units per row or column of a matrix
GAP = 0.7  # between two matrices, for the sign
PALE = 0.45  # alpha of a head's colour: the black labels stay readable on it


def head_colour(i: int) -> str:
    """Head i's colour (the tab10 cycle), the same in every block that belongs to it."""
    return f"C{i % 10}"


def _matrix(ax: Axes, x: float, y: float, rows: int, cols: int, lines: str) -> None:
    """A matrix frame rows x cols at (x, y) (lower left), with faint lines between its rows or columns."""
    w, h = cols * CELL, rows * CELL
    ax.add_patch(Rectangle((x, y), w, h, fill=False, edgecolor="black", linewidth=1.2, zorder=3))
    if lines == "cols":
        for c in range(1, cols):
            ax.plot([x + c * CELL] * 2, [y, y + h], color="white", linewidth=0.5, zorder=2)
    else:
        for r in range(1, rows):
            ax.plot([x, x + w], [y + r * CELL] * 2, color="white", linewidth=0.5, zorder=2)


def _block(ax: Axes, xy: tuple[float, float], w: float, h: float, i: int, label: str, rotation: float = 0) -> None:
    """Head i's coloured block with its label in the middle."""
    ax.add_patch(Rectangle(xy, w, h, facecolor=head_colour(i), alpha=PALE, edgecolor="black", linewidth=0.8))
    ax.text(xy[0] + w / 2, xy[1] + h / 2, label, ha="center", va="center", rotation=rotation, fontsize=10)


def block_product(ax: Axes, h: int, d_k: int, n: int) -> None:
    """Draw [head_0 | ... | head_{h-1}] W^O = sum_i head_i W^O_i on ax: concat (n, h d_k), W^O (h d_k, d_model) in h
    row blocks, then h full-width terms (n, d_model); d_model = h d_k."""
    h, d_k, n = (check_positive_int(name, v) for name, v in (("h", h), ("d_k", d_k), ("n", n)))
    d_model = h * d_k
    cw, ch = d_model * CELL, n * CELL  # concat: h d_k columns, n rows; the terms have the same size
    wo = d_model * CELL  # W^O is square
    # Top row: concat x W^O. Bottom row: = term_0 + ... + term_{h-1}.
    top_y, bottom_y = 1.45 + ch, 0.6
    for i in range(h):
        _block(ax, (i * d_k * CELL, top_y + (wo - ch) / 2), d_k * CELL, ch, i, f"head$_{i}$", rotation=90)
        _block(ax, (cw + GAP, top_y + wo - (i + 1) * d_k * CELL), wo, d_k * CELL, i, f"$W^O_{i}$")
    _matrix(ax, 0, top_y + (wo - ch) / 2, n, d_model, "cols")
    _matrix(ax, cw + GAP, top_y, d_model, d_model, "rows")
    mid = top_y + wo / 2
    ax.text(cw + GAP / 2, mid, "×", ha="center", va="center", fontsize=14, weight="bold")
    ax.text(cw / 2, top_y + (wo - ch) / 2 - 0.12, f"concat\nn × h·d$_k$ = {n} × {d_model}", ha="center", va="top")
    ax.text(cw + GAP + wo / 2, top_y - 0.12, f"$W^O$\nh·d$_k$ × d$_{{model}}$ = {d_model} × {d_model}", ha="center",
            va="top")  # fmt: skip
    note = "head $i$'s columns of the concatenation\nmeet only the rows of $W^O_i$ (same colour)"
    ax.text(cw + 2 * GAP + wo, mid, note, ha="left", va="center")
    x = 0.0
    ax.text(x - GAP / 2, bottom_y + ch / 2, "=", ha="center", va="center", fontsize=14, weight="bold")
    for i in range(h):
        _block(ax, (x, bottom_y), cw, ch, i, f"head$_{i}$ $W^O_{i}$")
        _matrix(ax, x, bottom_y, n, d_model, "cols")
        if i < h - 1:
            ax.text(x + cw + GAP / 2, bottom_y + ch / 2, "+", ha="center", va="center", fontsize=14, weight="bold")
        x += cw + GAP
    span = x - GAP
    ax.text(span / 2, bottom_y - 0.12, f"each term is n × d$_{{model}}$ = {n} × {d_model}, as wide as the output:\n"
            "every head writes into every output column", ha="center", va="top")  # fmt: skip
    ax.set_xlim(-GAP, span + 0.1)
    ax.set_ylim(0, top_y + wo + 0.1)
    ax.set_aspect("equal")
    ax.axis("off")
