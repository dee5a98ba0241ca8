"""Figures for lesson 12 (connections): cross-attention, equivariance, positional encodings, encoder stages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator


def encoding_heatmap(ax: Axes, pe: np.ndarray, *, title: str = "sinusoidal positional encoding") -> AxesImage:
    """(n, d) encoding: positions on rows, dimensions on columns, colour = value in [-1, 1]."""
    pe = np.asarray(pe)
    if pe.ndim != 2:
        raise ValueError(f"pe: expected an (n, d) matrix, got shape {pe.shape}")
    im = ax.imshow(pe, cmap="RdBu_r", vmin=-1.0, vmax=1.0, aspect="auto", interpolation="nearest")
    ax.set_title(title)
    ax.set_xlabel("dimension (even = sin, odd = cos; clocks slow down to the right)")
    ax.set_ylabel("position in the sequence")
    ax.figure.colorbar(im, ax=ax, label="value (unitless, in [-1, 1])")
    return im


def equivariance_bars(
    ax: Axes, errors: Mapping[str, np.ndarray], tokens: Sequence[str], *, floor: float = 1e-18
) -> None:
    """Grouped bars on a log scale: per token, max |f(P x) - P f(x)| for each input (label -> (n,) errors)."""
    n, k = len(tokens), len(errors)
    width = 0.8 / k
    for j, (label, err) in enumerate(errors.items()):
        err = np.maximum(np.asarray(err, dtype=float), floor)  # exact zeros would vanish from a log axis
        ax.bar(np.arange(n) + (j - (k - 1) / 2) * width, err, width, label=label)
    ax.set_yscale("log")
    # At most 6 plain labels (1e-15), no minor ticks: mathtext labels (10^-15) are slow to lay out and add nothing.
    ax.yaxis.set_major_locator(LogLocator(base=10.0, numticks=6))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0e}"))
    ax.set_xticks(range(n), [f"{i}: {t}" for i, t in enumerate(tokens)], rotation=45, ha="right")
    ax.axhline(1e-12, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("output row (position : word after the permutation)")
    ax.set_ylabel("max |f(P x) − P f(x)| in the row\n(log scale; below 1e-12 = rounding)")
    ax.set_title("Permuting the tokens: outputs just permute, unless positions are added")
    # below the axes in one row: inside, any corner covers bars (every row has all three)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.32), ncols=k)


def feature_heatmaps(
    fig: Figure,
    stages: Mapping[str, np.ndarray],
    tokens: Sequence[str],
    *,
    one_hot: Sequence[str] = (),
    col_edges: Sequence[int] = (),
    block_names: Sequence[str] | None = None,
    xlabel: str = "feature (column of d_model)",
) -> list[AxesImage]:
    """One (n, d_model) heatmap per stage (title -> array): tokens on rows, features on columns, shared scale.

    one_hot: titles of 0/1 stages, drawn on their own 0..1 grey scale with a key: on the others' scale, set by their
    largest |value|, a 1 would be a pale tint. col_edges / block_names: lines before those columns and one name per
    column block above the panels (as plots.heads.matrix_image), for the heads' blocks of d_k columns; xlabel: the
    features' label, once for the row (say there what the block names mean).
    """
    unknown = set(one_hot) - set(stages)
    if unknown:
        raise ValueError(f"one_hot: not a stage title: {sorted(unknown)}")
    for title in one_hot:
        if not np.isin(stages[title], (0.0, 1.0)).all():
            raise ValueError(f"one_hot: stage {title!r} has entries other than 0 and 1")
    if block_names is not None and len(block_names) != len(col_edges) + 1:
        raise ValueError(
            f"block_names: expected {len(col_edges) + 1} names (one per column block), got {len(block_names)}"
        )
    axes = fig.subplots(1, len(stages), sharey=True, squeeze=False)[0]
    shared = [a for title, a in stages.items() if title not in one_hot]
    vmax = max((float(np.abs(a).max()) for a in shared), default=1.0) or 1.0
    images = []
    for ax, (title, a) in zip(axes, stages.items(), strict=True):
        own = title in one_hot
        scale = {"cmap": "Greys", "vmin": 0.0, "vmax": 1.0} if own else {"cmap": "RdBu_r", "vmin": -vmax, "vmax": vmax}
        images.append(ax.imshow(a, aspect="auto", interpolation="nearest", **scale))
        ax.set_title(title)
        for edge in col_edges:  # grey and thin: a black line would hide a lit column next to it
            ax.axvline(edge - 0.5, color="0.45", lw=0.8)
        if col_edges:
            ax.set_xticks([0, *col_edges])  # each block's first column, the one the lesson's prints name
        if block_names is not None:  # on top: under the panels, names and column numbers would share one row
            starts, ends = [0, *col_edges], [*col_edges, a.shape[1]]
            top = ax.secondary_xaxis("top")
            top.set_xticks([(b + e - 1) / 2 for b, e in zip(starts, ends, strict=True)], list(block_names))
            top.tick_params(length=0)
        if own:  # a key instead of a second colour bar: the panels leave no width for one
            keys = [Patch(facecolor="k", label="1"), Patch(facecolor="w", edgecolor="k", label="0")]
            ax.legend(handles=keys, loc="upper right", title="value")
    # once for the row: three panels of 7 in leave each about 190 px, too narrow for a label of its own
    fig.supxlabel(xlabel, fontsize="medium")
    axes[0].set_yticks(range(len(tokens)), list(tokens))
    axes[0].set_ylabel("token")
    shared_images = [im for im, title in zip(images, stages, strict=True) if title not in one_hot]
    if shared_images:
        label = "value (unitless)" + ("; 0/1 panel: its key" if one_hot else "")
        fig.colorbar(shared_images[0], ax=axes, label=label, shrink=0.85)
    return images


def shift_scores(ax: Axes, offsets: np.ndarray, scores: Mapping[str, np.ndarray]) -> None:
    """Lines of PE[p - k] . PE[p - j] (y) against j - k (x), one per label: the score a shifted query gives."""
    # Different line styles and markers: curves that coincide (the point of the figure) stay visible.
    for (label, s), style, marker in zip(scores.items(), ("-", "--", ":"), ("o", "x", "+"), strict=False):
        ax.plot(offsets, s, ls=style, marker=marker, ms=5, label=label)
    ax.axvline(0, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("key position minus wanted position (tokens)")
    ax.set_ylabel("dot product PE[wanted] · PE[key]\n(unitless)")
    ax.set_title("Sinusoidal codes: a dot product peaks at the wanted position")
    ax.legend()
