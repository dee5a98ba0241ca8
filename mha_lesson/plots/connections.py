"""Figures for lesson 12 (connections): cross-attention, equivariance, positional encodings, encoder stages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
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


def feature_heatmaps(fig: Figure, stages: Mapping[str, np.ndarray], tokens: Sequence[str]) -> list[AxesImage]:
    """One (n, d_model) heatmap per stage (title -> array): tokens on rows, features on columns, shared scale."""
    axes = fig.subplots(1, len(stages), sharey=True, squeeze=False)[0]
    vmax = max(float(np.abs(a).max()) for a in stages.values()) or 1.0
    images = []
    for ax, (title, a) in zip(axes, stages.items(), strict=True):
        images.append(ax.imshow(a, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto", interpolation="nearest"))
        ax.set_title(title)
    # once for the row: three panels of 7 in leave each about 190 px, too narrow for a label of its own
    fig.supxlabel("feature (column of d_model)", fontsize="medium")
    axes[0].set_yticks(range(len(tokens)), list(tokens))
    axes[0].set_ylabel("token")
    fig.colorbar(images[0], ax=axes, label="value (unitless)", shrink=0.85)
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
