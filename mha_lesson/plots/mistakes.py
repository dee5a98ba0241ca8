"""Figures for lesson 11 (common mistakes): buggy against correct, side by side."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.patches import Patch

from .attention import attention_heatmap


def compare_maps(
    fig: Figure,
    maps: Mapping[str, np.ndarray],
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
    *,
    row_sums: bool = True,
    annotate: bool | None = None,
    value_size: float = 9,
) -> list[AxesImage]:
    """One (n_q, n_kv) attention map per entry of maps (title -> weights) in a row; row sums on the right.

    The query axis is named once (left of the first map) and each row-sum column beside its map, so the maps keep
    the width for weights printed at value_size points (9: readable once a laptop scales a 7-in figure down).
    """
    axes = fig.subplots(1, len(maps), squeeze=False)[0]
    images = []
    for i, (ax, (title, w)) in enumerate(zip(axes, maps.items(), strict=True)):
        images.append(
            attention_heatmap(
                ax, w, query_labels, key_labels, title=title, annotate=annotate, colorbar=False, value_size=value_size
            )
        )
        if i:
            ax.set_ylabel("")
        if row_sums:
            right = ax.secondary_yaxis("right")
            right.set_yticks(range(len(w)), [f"{s:.2f}" for s in np.asarray(w).sum(axis=-1)])
            # Every column named: unlabelled, "1.70" ran into the next map's first query label.
            right.set_ylabel("row sum (must be 1)" if i == len(maps) - 1 else "row sum")
    fig.colorbar(images[0], ax=axes, label="attention weight", shrink=0.8, location="bottom", aspect=40)
    return images


def ownership_map(
    ax: Axes, owner: np.ndarray, *, title: str, xlabel: str, ylabel: str, legend: bool = True
) -> AxesImage:
    """Integer map (rows, cols) of head indices, one colour per head and grey for -1 (no head), legend on the right."""
    owner = np.asarray(owner)
    h = int(owner.max()) + 1
    colours = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948", "#9c755f"]
    # Index 0 of the colour map is -1 (no head): shift by one so the boundaries stay at half-integers.
    cmap = ListedColormap(["#d9d9d9"] + [colours[i % len(colours)] for i in range(h)])
    im = ax.imshow(owner, cmap=cmap, norm=BoundaryNorm(np.arange(-1, h + 1) - 0.5, h + 1), aspect="auto")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_xticks(range(owner.shape[1]))
    ax.set_yticks(range(owner.shape[0]))
    if legend:
        # A legend of a few patches, not a number in every cell: one text per head keeps the figure cheap to draw.
        shown = [i for i in range(-1, h) if (owner == i).any()]
        handles = [Patch(color=cmap(i + 1), label=f"head {i}" if i >= 0 else "no head") for i in shown]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return im


def influence_map(ax: Axes, influence: np.ndarray, *, title: str, vmax: float | None = None) -> AxesImage:
    """(h, d_model) map: rows = head whose W^V was perturbed, columns = output feature, colour = mean |change|."""
    influence = np.asarray(influence)
    im = ax.imshow(influence, cmap="magma", vmin=0.0, vmax=vmax, aspect="auto", interpolation="nearest")
    ax.set_title(title)
    ax.set_xlabel("output feature")
    ax.set_ylabel("head whose $W^V$ changed")
    ax.set_xticks(range(influence.shape[1]))
    ax.set_yticks(range(influence.shape[0]))
    ax.figure.colorbar(im, ax=ax, label="mean |change of output|")
    return im
