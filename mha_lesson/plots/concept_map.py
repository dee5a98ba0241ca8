"""Draw the concept map of `mha_lesson.aids.concept_map` with matplotlib alone, at the positions stored in the data."""

from __future__ import annotations

import io

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.text import Text

from ..aids.concept_map import EDGES, GROUPS, NODES, Edge, Node, check_map
from .style import DPI, LAPTOP_OUTPUT_PX

XLIM, YLIM = (0.0, 10.0), (0.0, 12.0)
# Portrait and a little narrower than a laptop's 588-pixel output area, so it is never scaled down there and its
# text shows at its natural size: boxes at NODE_PX, relations and the legend at LABEL_PX (both CSS px at DPI).
FIGSIZE = (5.8, 8.0)
NODE_PX, LABEL_PX = 11.0, 10.4


def _points(px: float) -> float:
    """A font size in points that draws px CSS pixels tall at DPI."""
    return px * 72 / DPI


def draw_concept_map(
    nodes: tuple[Node, ...] = NODES, edges: tuple[Edge, ...] = EDGES, *, figsize: tuple[float, float] = FIGSIZE
) -> Figure:
    """A Figure with one rounded box per node (label + lesson number) and one labelled arrow per edge."""
    check_map(nodes, edges)
    if figsize[0] * DPI > LAPTOP_OUTPUT_PX:
        raise ValueError(f"figsize: expected at most {LAPTOP_OUTPUT_PX / DPI} inches wide, got {figsize[0]}")
    fig = Figure(figsize=figsize, dpi=DPI)
    FigureCanvasAgg(fig)  # attaches itself to fig: text extents and PNG export work without pyplot
    ax = fig.add_axes((0.01, 0.075, 0.98, 0.83))
    ax.set_xlim(*XLIM)
    ax.set_ylim(*YLIM)
    ax.set_axis_off()  # a diagram: positions carry no units, so no axes to label
    fig.suptitle("Multi-head attention and its connections", fontsize=_points(17), fontweight="bold", y=0.985)
    fig.text(
        0.5,
        0.945,
        "Each box names the lesson that covers it.\nRead an arrow as a sentence: box, italic relation, box.",
        ha="center",
        va="top",
        fontsize=_points(NODE_PX),
        color="#333333",
    )
    boxes: dict[str, Text] = {}
    for n in nodes:
        boxes[n.key] = ax.text(
            *n.xy,
            f"{n.label}\nlesson {n.lesson_number}",
            ha="center",
            va="center",
            multialignment="center",
            fontsize=_points(NODE_PX),
            fontweight="bold" if n.group == "core" else "normal",
            bbox={"boxstyle": "round,pad=0.35", "fc": GROUPS[n.group][1], "ec": "#4d4d4d", "lw": 1.0},
            zorder=3,
            gid=f"node:{n.key}",
        )
    # Box sizes depend on the rendered text: draw once, then read every box's half-width and half-height in
    # data coordinates (independent of dpi, since both fonts and figure are sized in inches).
    fig.canvas.draw()
    to_data = ax.transData.inverted()
    half = {}
    for key, t in boxes.items():
        (bx0, by0), (bx1, by1) = to_data.transform(t.get_bbox_patch().get_window_extent())
        half[key] = np.array([(bx1 - bx0) / 2, (by1 - by0) / 2])
    by_key = {n.key: n for n in nodes}
    for e in edges:
        start, end = _clipped(by_key[e.source], half[e.source], by_key[e.target], half[e.target])
        ax.annotate(
            "",
            xy=tuple(end),
            xytext=tuple(start),
            arrowprops={
                "arrowstyle": "-|>",
                "color": "#555555",
                "lw": 1.2,
                "mutation_scale": 12,
                "shrinkA": 0,
                "shrinkB": 0,
            },
            zorder=2,
            gid=f"arrow:{e.source}->{e.target}",
        )
        ax.text(
            *(start + e.at * (end - start)),
            e.relation,
            ha="center",
            va="center",
            fontsize=_points(LABEL_PX),
            style="italic",
            color="#222222",
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.95},
            zorder=4,
            gid=f"edge:{e.source}->{e.target}",
        )
    handles = [Patch(fc=colour, ec="#4d4d4d", label=text) for text, colour in GROUPS.values()]
    fig.legend(handles=handles, loc="lower center", ncol=3, frameon=False, fontsize=_points(LABEL_PX))
    return fig


def _clipped(a: Node, half_a: np.ndarray, b: Node, half_b: np.ndarray, gap: float = 0.06) -> tuple[np.ndarray, ...]:
    """End points of the segment between two box centres, cut where it leaves box a and enters box b."""
    pa, pb = np.array(a.xy), np.array(b.xy)
    d = pb - pa

    def exit_fraction(h: np.ndarray) -> float:
        # The segment from a centre leaves its box where the first of |t*dx| = w or |t*dy| = h is reached.
        with np.errstate(divide="ignore"):
            return float(np.min(np.where(d != 0, h / np.abs(d), np.inf)))

    length = float(np.hypot(*d))
    t0 = exit_fraction(half_a) + gap / length
    t1 = 1.0 - exit_fraction(half_b) - gap / length
    return pa + t0 * d, pa + t1 * d


def text_boxes(fig: Figure) -> dict[str, np.ndarray]:
    """Pixel extents [[x0, y0], [x1, y1]] of every node box and edge label, keyed by their gid."""
    renderer = fig.canvas.get_renderer()
    out = {}
    for t in fig.axes[0].texts:
        gid = t.get_gid()
        if gid and not gid.startswith("arrow:"):
            patch = t.get_bbox_patch()
            t.update_bbox_position_size(renderer)
            out[gid] = patch.get_window_extent(renderer).get_points() if patch else t.get_window_extent(renderer)
    return out


def to_png(fig: Figure, pixel_ratio: int = 2) -> bytes:
    """The figure as PNG bytes with pixel_ratio pixels per CSS pixel: show it at its size and sharp on HiDPI screens
    with IPython.display.Image(png, retina=True) (for pixel_ratio 2), or save it."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi * pixel_ratio)
    return buf.getvalue()
