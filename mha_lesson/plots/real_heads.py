"""Figures for lesson 13: a trained model's sentence similarities, its 72 heads' scores, and head ablation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.patches import Patch, Rectangle

from ..headscores import LABELS


def similarity_heatmap(ax: Axes, sims: np.ndarray, labels: Sequence[str], *, title: str) -> AxesImage:
    """Cosine similarities (N, N) between sentences, annotated, on a -1..1 diverging scale."""
    sims = np.asarray(sims)
    if sims.ndim != 2 or sims.shape[0] != sims.shape[1] or sims.shape[0] != len(labels):
        raise ValueError(f"sims: expected a ({len(labels)}, {len(labels)}) matrix for the labels, got {sims.shape}")
    im = ax.imshow(sims, cmap="RdBu_r", vmin=-1.0, vmax=1.0, interpolation="nearest")
    ax.set_xticks(range(len(labels)), list(labels), rotation=35, ha="right")
    ax.set_yticks(range(len(labels)), list(labels))
    for i in range(sims.shape[0]):
        for j in range(sims.shape[1]):
            colour = "w" if abs(sims[i, j]) > 0.6 else "k"
            ax.text(j, i, f"{sims[i, j]:.2f}", ha="center", va="center", fontsize=8, color=colour).set_in_layout(False)
    ax.set_title(title)
    ax.set_xlabel("sentence")
    ax.set_ylabel("sentence")
    ax.figure.colorbar(im, ax=ax, label="cosine similarity (1 = same direction)", shrink=0.8)
    return im


def layer_head_heatmap(
    ax: Axes,
    values: np.ndarray,
    *,
    title: str,
    colorbar_label: str,
    vmin: float = 0.0,
    vmax: float | None = None,
    marked: Sequence[tuple[int, int]] = (),
    fmt: str | None = "{:.2f}",
) -> AxesImage:
    """One number per head, (layers, heads), annotated with fmt (None: not annotated); `marked` heads framed red."""
    values = np.asarray(values)
    if values.ndim != 2:
        raise ValueError(f"values: expected a (layers, heads) array, got shape {values.shape}")
    vmax = float(values.max()) if vmax is None else vmax
    im = ax.imshow(values, cmap="viridis", vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
    n_layers, h = values.shape
    ax.set_xticks(range(h))
    ax.set_yticks(range(n_layers))
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_title(title, fontsize=10)
    if fmt is not None:
        for (li, hi), v in np.ndenumerate(values):
            light = (v - vmin) < 0.6 * (vmax - vmin)
            text = ax.text(hi, li, fmt.format(v), ha="center", va="center", fontsize=6, color="w" if light else "k")
            text.set_in_layout(False)  # inside the axes anyway: measuring every label would only slow the layout
    for li, hi in marked:
        ax.add_patch(Rectangle((hi - 0.5, li - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2))
    ax.figure.colorbar(im, ax=ax, label=colorbar_label, shrink=0.9)
    return im


def score_grids(
    fig: Figure, scores: Mapping[str, np.ndarray], baseline: Mapping[str, float], threshold: float = 0.5
) -> None:
    """One (layers, heads) heatmap per score on fig; fractions share a 0..1 scale, heads above threshold framed."""
    axes = fig.subplots(2, 3).ravel()
    for ax, (name, values) in zip(axes, scores.items(), strict=True):
        fraction = name != "entropy"
        marked = list(zip(*np.nonzero(values > threshold), strict=True)) if fraction else []
        unit = "nats" if not fraction else "fraction of attention"
        layer_head_heatmap(
            ax,
            values,
            title=f"{LABELS[name]}\n(uniform attention: {baseline[name]:.2f})",
            colorbar_label=unit,
            vmax=1.0 if fraction else float(max(values.max(), baseline[name])),
            marked=marked,
            fmt=None,  # 432 numbers would crowd the panels; the lesson prints the heads that stand out
        )
    n_heads = np.asarray(next(iter(scores.values()))).size
    fig.suptitle(
        f"Where each of the {n_heads} heads attends, averaged over every token of the corpus (red: > {threshold})"
    )


def layer_profile(ax: Axes, scores: Mapping[str, np.ndarray], names: Sequence[str]) -> None:
    """Mean of each named fraction over the heads of each layer, one line per score."""
    for name in names:
        per_layer = np.asarray(scores[name]).mean(axis=1)
        ax.plot(range(len(per_layer)), per_layer, marker="o", label=name)
    ax.set_ylim(0, 1)
    ax.set_xticks(range(len(per_layer)))
    ax.set_xlabel("layer")
    ax.set_ylabel("attention (fraction, mean over the layer's heads)")
    ax.set_title("Where each layer's attention goes, on average")
    ax.legend()
    ax.grid(alpha=0.3)


def ablation_figure(fig: Figure, cosine: np.ndarray) -> None:
    """Left: 1 - cosine for every switched-off head (layers, heads); right: the same numbers sorted, log scale."""
    drift = 1.0 - np.asarray(cosine)
    left, right = fig.subplots(1, 2, width_ratios=[1.2, 1])
    layer_head_heatmap(
        left, drift, title="How far the sentence embedding moves\nwhen one head is switched off",
        colorbar_label="1 - cosine(ablated, intact)", fmt="{:.3f}",
    )  # fmt: skip
    order = np.argsort(drift.ravel())[::-1]
    h = drift.shape[1]
    colours = [f"C{i // h}" for i in order]  # one colour per layer
    right.bar(range(drift.size), np.maximum(drift.ravel()[order], 1e-7), color=colours, width=0.9)
    right.set_yscale("log")
    right.set_xlabel("heads, sorted by effect (colour = layer)")
    right.set_ylabel("1 - cosine(ablated, intact), log scale")
    right.set_title(f"The same {drift.size} heads, sorted by how far they move the embedding")
    handles = [Patch(color=f"C{li}", label=f"layer {li}") for li in range(drift.shape[0])]
    right.legend(handles=handles, fontsize=7, ncols=2)
