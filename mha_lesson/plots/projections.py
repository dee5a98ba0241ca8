"""Lesson 3's figures: a matrix cut into per-head column blocks, and queries and keys in a head's 2-D plane."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.text import Text


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
        ax.set_xlabel(f"column (feature):\n{h} blocks of d_k = {d_k}")  # two lines: fits a third of a cell
        ax.set_xticks(range(0, cols, d_k))
    if row_labels is not None:
        ax.set_yticks(range(rows), [str(t) for t in row_labels])
    ax.set_ylabel(row_name)
    return im


# One colour per token, the same wherever the token appears (its query and key, their labels, its row and column
# of the attention map): eight distinct hues, each at least 3.8:1 against white so that a label in it reads.
TOKEN_COLOURS = ("#1f77b4", "#d55e00", "#238b23", "#7b4fb8", "#8c564b", "#c2379b", "#0e8a96", "#9a7d0a")
_QUERY_S, _KEY_S, _RING_S = 40, 48, 170  # marker areas in points²
_LABEL_PT = 9  # label font size
_MAX_LINE_PT = 6  # the chosen query's line to a key of weight 1, in points


def token_colours(n: int) -> tuple[str, ...]:
    """The colour of each of n tokens, in order (TOKEN_COLOURS, repeated beyond eight tokens)."""
    return tuple(TOKEN_COLOURS[i % len(TOKEN_COLOURS)] for i in range(n))


@dataclass
class TokenPlane:
    """The artists of a token plane: a circle per query and a triangle per key, a label per point (with a leader
    line when it had to move away from its point), and the chosen query's ring and lines to the keys."""

    tokens: tuple[str, ...]
    colours: tuple[str, ...]
    queries: PathCollection
    keys: PathCollection
    q_text: list[Text]
    k_text: list[Text]
    leaders: LineCollection
    ring: PathCollection
    weight_lines: LineCollection
    query: int | None = None  # the chosen (ringed) query, once set_token_plane has been given one
    sizes: dict[float, np.ndarray] = field(default_factory=dict)  # per dpi: (2n, 2) label widths, heights in pixels

    @property
    def labels(self) -> list[Text]:
        """The queries' labels, then the keys'."""
        return [*self.q_text, *self.k_text]

    def artists(self) -> list[Artist]:
        """Everything a move changes, in drawing order (lines under points under labels)."""
        return [self.weight_lines, self.leaders, self.keys, self.queries, self.ring, *self.labels]


def token_plane(ax: Axes, tokens: Sequence[str], colours: Sequence[str] | None = None) -> TokenPlane:
    """Queries (circles) and keys (triangles) coloured by token, with a label per point, all at 0 until
    set_token_plane moves them. colours: one per token (default token_colours)."""
    tokens = tuple(str(t) for t in tokens)
    n = len(tokens)
    colours = token_colours(n) if colours is None else tuple(colours)
    if len(colours) != n:
        raise ValueError(f"colours: expected one per token ({n}), got {len(colours)}")
    zeros = np.zeros((n, 2))
    edge = {"edgecolors": "w", "linewidths": 0.5}  # a white rim keeps points that touch apart
    queries = ax.scatter(*zeros.T, marker="o", s=_QUERY_S, c=colours, zorder=2.2, **edge)
    keys = ax.scatter(*zeros.T, marker="^", s=_KEY_S, c=colours, zorder=2.1, **edge)
    ring = ax.scatter([0], [0], marker="o", s=_RING_S, facecolors="none", edgecolors="k", linewidths=1.5, zorder=2.3)
    weight_lines = LineCollection([], zorder=1.5, alpha=0.4, capstyle="round")
    leaders = LineCollection([], zorder=1.6, linewidths=0.7)
    ax.add_collection(weight_lines, autolim=False)
    ax.add_collection(leaders, autolim=False)
    # Labels are centred on a point placed by place_labels, inside the axes: no clipping test needed.
    style = {"ha": "center", "va": "center", "fontsize": _LABEL_PT, "clip_on": False}
    q_text = [ax.text(0, 0, t, color=c, **style) for t, c in zip(tokens, colours, strict=True)]
    k_text = [ax.text(0, 0, t, color=c, **style) for t, c in zip(tokens, colours, strict=True)]
    ax.axhline(0, color="0.8", linewidth=0.8, zorder=0)
    ax.axvline(0, color="0.8", linewidth=0.8, zorder=0)
    ax.set_aspect("equal", adjustable="box")
    # The legend shows the shapes only (the colours are the tokens'); below the panel, where no point hides under it.
    grey = {"linestyle": "", "color": "0.35"}
    handles = [
        Line2D([], [], marker="o", markersize=math.sqrt(_QUERY_S), label="query (a row of $Q_i$)", **grey),
        Line2D([], [], marker="^", markersize=math.sqrt(_KEY_S), label="key (a row of $K_i$)", **grey),
    ]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=2, fontsize=9)
    return TokenPlane(tokens, colours, queries, keys, q_text, k_text, leaders, ring, weight_lines)


def nice_limit(x: float) -> float:
    """The smallest of 1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 7.5 times a power of ten that is at least x > 0.

    Few distinct limits mean few distinct backgrounds (ticks and their labels) for a redraw to cache.
    """
    power = 10.0 ** math.floor(math.log10(x))
    return next(m * power for m in (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 7.5, 10) if m * power >= x * (1 - 1e-12))


def set_token_plane(
    ax: Axes,
    plane: TokenPlane,
    q2: np.ndarray,
    k2: np.ndarray,
    query: int | None = None,
    weights: np.ndarray | None = None,
) -> None:
    """Move the queries to q2 (n, 2) and the keys to k2 (n, 2), with their labels; square limits around 0.

    query: the token whose query is ringed, with a line to each key as thick as its weight in weights (n,);
    None hides the ring and the lines.
    """
    n = len(plane.tokens)
    q2, k2 = np.asarray(q2, float), np.asarray(k2, float)
    if q2.shape != (n, 2) or k2.shape != (n, 2):
        raise ValueError(f"q2, k2: expected ({n}, 2) arrays, got {q2.shape} and {k2.shape}")
    if query is not None and not 0 <= query < n:
        raise ValueError(f"query: expected a token index in [0, {n}), got {query!r}")
    if query is not None and (weights is None or np.shape(weights) != (n,)):
        raise ValueError(
            f"weights: expected the query's {n} weights, got {None if weights is None else np.shape(weights)}"
        )
    plane.queries.set_offsets(q2)
    plane.keys.set_offsets(k2)
    # The cloud fills most of the panel (tick values give the scale), with room for the labels.
    lim = nice_limit(1.1 * max(float(np.abs(np.concatenate([q2, k2])).max()), 1e-9))
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    plane.query = query
    plane.ring.set_visible(query is not None)
    plane.weight_lines.set_visible(query is not None)
    if query is not None:
        plane.ring.set_offsets(q2[query : query + 1])
        weights = np.asarray(weights, float)
        shown = np.flatnonzero(weights >= 0.01)  # a line for each key with a visible share of the weight
        plane.weight_lines.set_segments([np.array([q2[query], k2[j]]) for j in shown])
        plane.weight_lines.set_linewidths(_MAX_LINE_PT * weights[shown])
        plane.weight_lines.set_color("0.25")
    _place_token_labels(ax, plane, np.concatenate([q2, k2]))


def _place_token_labels(ax: Axes, plane: TokenPlane, xy: np.ndarray) -> None:
    """Put each label next to its point (xy (2n, 2): queries, then keys) where it covers no other label."""
    n = len(plane.tokens)
    ax.apply_aspect()  # the box an equal aspect gives, before data -> pixels
    dpi = ax.figure.dpi
    if dpi not in plane.sizes:  # a label's size depends on its text and the dpi only: measure once
        renderer = ax.figure.canvas.get_renderer()
        plane.sizes[dpi] = np.array(
            [[t.get_window_extent(renderer).width, t.get_window_extent(renderer).height] for t in plane.labels]
        )
    sizes = plane.sizes[dpi]
    px = dpi / 72  # pixels per point
    anchors = ax.transData.transform(xy)
    radii = np.full(2 * n, math.sqrt(_KEY_S) / 2 * px)
    if plane.query is not None:
        radii[plane.query] = math.sqrt(_RING_S) / 2 * px
    # The ringed query's label first (it gets the spot next to its point), then the other queries, then the keys.
    order = ([plane.query] if plane.query is not None else []) + [i for i in range(2 * n) if i != plane.query]
    up = np.array([1] * n + [-1] * n)  # queries' labels prefer above their points, keys' below
    centres, near = place_labels(anchors, sizes, ax.bbox.extents, radii, up, order=order, gap=1.5 * px, pad=2 * px)
    to_data = ax.transData.inverted()
    for label, centre in zip(plane.labels, to_data.transform(centres), strict=True):
        label.set_position(centre)
    # A leader from the edge of each point that had to move away to the nearest point of its label's box.
    far = np.flatnonzero(~near)
    boxes = np.hstack([centres - sizes / 2, centres + sizes / 2])
    segments = []
    for i in far:
        end = np.clip(anchors[i], boxes[i, :2], boxes[i, 2:])
        d = end - anchors[i]
        start = anchors[i] + d * min(1.0, radii[i] / max(float(np.hypot(*d)), 1e-9))
        segments.append(to_data.transform(np.array([start, end])))
    plane.leaders.set_segments(segments)
    plane.leaders.set_color([plane.colours[i % n] for i in far])


# Where a label may go, by preference: a corner beside its point first, then above (or below), then the sides.
_UP = ((1, 1), (-1, 1), (1, -1), (-1, -1), (0, 1), (1, 0), (-1, 0), (0, -1))
_DOWN = tuple((dx, -dy) for dx, dy in _UP)


def place_labels(
    anchors: np.ndarray,
    sizes: np.ndarray,
    bounds: Sequence[float],
    radii: np.ndarray,
    up: np.ndarray,
    *,
    order: Sequence[int] | None = None,
    gap: float = 2.0,
    rings: int = 8,
    pad: float = 2.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Centres (m, 2) for m label boxes so that no two boxes meet and every box lies inside bounds, and whether
    each label sits right next to its point (m,) (else it needs a leader line). All in pixels.

    anchors (m, 2): the points labelled; sizes (m, 2): each box's width and height; bounds: (x0, y0, x1, y1) of the
    area; radii (m,): each point's radius, which no label covers; up (m,): +1 for a label that prefers to sit above
    its point, -1 below. Greedy, in `order` (default 0..m-1), so the result depends on the inputs alone: each label
    takes, of the free places inside bounds, the first of (1) the eight places around its point `gap` pixels off
    its rim, corners first, (2) the same at each of `rings` steps of a line's height farther, (3) the nearest free
    place on a grid over the whole area; a place that covers another point counts only when no other is free, and
    one nearer another point than its own only when the nearest other free place is more than half a ring out.
    pad: the least gap between two boxes.
    """
    anchors, sizes, radii = np.asarray(anchors, float), np.asarray(sizes, float), np.asarray(radii, float)
    m = len(anchors)
    x0, y0, x1, y1 = bounds
    order = range(m) if order is None else order
    if sorted(order) != list(range(m)):
        raise ValueError(f"order: expected a permutation of 0..{m - 1}, got {list(order)}")
    step = float(sizes[:, 1].max()) if m else 1.0
    points = np.hstack([anchors - radii[:, None], anchors + radii[:, None]])  # (m, 4) boxes around the points
    grid = np.stack(np.meshgrid(np.arange(x0, x1, step / 2), np.arange(y0, y1, step / 2)), axis=-1).reshape(-1, 2)
    centres, near = np.zeros((m, 2)), np.zeros(m, bool)
    placed = np.zeros((0, 4))
    for i in order:
        w, h = sizes[i]
        r = radii[i]
        directions = np.array(_UP if up[i] > 0 else _DOWN, float)  # (8, 2)
        ring = np.repeat(np.arange(rings + 1), len(directions))
        dirs = np.tile(directions, (rings + 1, 1))
        reach = (r + gap + ring * step)[:, None]
        # Along each direction, the box's near edge (or corner) at `reach` from the point's centre.
        candidates = anchors[i] + dirs * (reach + np.array([w, h]) / 2)
        candidates = np.concatenate([candidates, grid])
        score = np.concatenate([ring.astype(float), rings + 1 + np.hypot(*(grid - anchors[i]).T) / step])
        boxes = np.hstack([candidates - (w / 2, h / 2), candidates + (w / 2, h / 2)])  # (c, 4)
        inside = (boxes[:, 0] >= x0 + 1) & (boxes[:, 1] >= y0 + 1) & (boxes[:, 2] <= x1 - 1) & (boxes[:, 3] <= y1 - 1)
        free = inside & ~_meets(boxes, placed, pad).any(axis=1) & ~_meets(boxes, points[i : i + 1], 0).any(axis=1)
        others = np.delete(points, i, axis=0)
        covered = _meets(boxes, others, 0).sum(axis=1)
        # A label nearer another point than its own reads as that point's: avoid it unless it costs a ring or more.
        own = _distance(anchors[i : i + 1], boxes)[:, 0]
        misleading = (_distance(np.delete(anchors, i, axis=0), boxes) < own[:, None]).sum(axis=1)
        preference = np.concatenate([np.tile(np.arange(len(directions)), rings + 1), np.zeros(len(grid))])
        score = score + 0.01 * preference + 0.6 * misleading + 1000 * covered + np.where(free, 0, np.inf)
        best = int(np.argmin(score))
        if not np.isfinite(score[best]):  # the area is full: cannot happen for a few labels in a panel
            best = 0
        centres[i], near[i] = candidates[best], best < len(directions)
        placed = np.vstack([placed, boxes[best]])
    return centres, near


def _distance(points: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """(len(boxes), len(points)) distance from each point (x, y) to each box (x0, y0, x1, y1); 0 inside."""
    b, p = boxes[:, None, :], points[None, :, :]
    dx = np.maximum(np.maximum(b[..., 0] - p[..., 0], p[..., 0] - b[..., 2]), 0)
    dy = np.maximum(np.maximum(b[..., 1] - p[..., 1], p[..., 1] - b[..., 3]), 0)
    return np.hypot(dx, dy)


def _meets(boxes: np.ndarray, others: np.ndarray, pad: float) -> np.ndarray:
    """(len(boxes), len(others)) True where box and other, each (x0, y0, x1, y1), come closer than pad."""
    b, o = boxes[:, None, :], others[None, :, :]
    return (
        (b[..., 0] < o[..., 2] + pad)
        & (o[..., 0] < b[..., 2] + pad)
        & (b[..., 1] < o[..., 3] + pad)
        & (o[..., 1] < b[..., 3] + pad)
    )
