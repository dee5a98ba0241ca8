"""Attention-map heatmaps: queries on rows, keys on columns, token labels where there are tokens."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.image import AxesImage

# A lone punctuation token is a speck as a tick label: its name goes beside it.
PUNCTUATION = {
    ".": "period",
    ",": "comma",
    "'": "apostrophe",
    '"': "quote",
    "?": "question mark",
    "!": "exclamation mark",
    ";": "semicolon",
    ":": "colon",
    "-": "hyphen",
    "(": "open bracket",
    ")": "close bracket",
}


def token_label(token: str) -> str:
    """A tick label for a token: the token itself, with its name beside it if it is a lone punctuation mark."""
    token = str(token)
    return f"{token} ({PUNCTUATION[token]})" if token in PUNCTUATION else token


def _checked_labels(name: str, labels: Sequence[str], n: int) -> list[str]:
    if len(labels) != n:
        raise ValueError(f"{name}: expected {n} token labels, got {len(labels)}")
    return [token_label(t) for t in labels]


def weight_colour(w: float) -> str:
    """Colour of a printed weight: white on viridis' dark low end, black on its light high end."""
    return "w" if w < 0.6 else "k"


def attention_heatmap(
    ax: Axes,
    weights: np.ndarray,
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
    *,
    title: str = "attention weights",
    annotate: bool | None = None,
    colorbar: bool = True,
    value_size: float = 7,
    decimals: int = 2,
) -> AxesImage:
    """Draw one (n_q, n_kv) weight matrix on ax, rows = queries, columns = keys, colour scale 0..1.

    annotate: print each weight in its cell with `decimals` decimals (value_size points; default: for 64 cells or
    fewer). A lone punctuation token is labelled with its name (see token_label).
    """
    weights = np.asarray(weights)
    if weights.ndim != 2:
        raise ValueError(f"weights: expected a (n_q, n_kv) matrix, got shape {weights.shape}")
    n_q, n_kv = weights.shape
    im = ax.imshow(weights, vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto", interpolation="nearest")
    ax.set_title(title)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    if query_labels is not None:
        ax.set_yticks(range(n_q), _checked_labels("query_labels", query_labels, n_q))
    if key_labels is not None:
        ax.set_xticks(range(n_kv), _checked_labels("key_labels", key_labels, n_kv), rotation=90)
    ax.xaxis.set_ticks_position("top")
    ax.xaxis.set_label_position("top")
    if annotate is None:
        annotate = n_q * n_kv <= 64
    if annotate:
        for i in range(n_q):
            for j in range(n_kv):
                w = weights[i, j]
                ax.text(
                    j, i, f"{w:.{decimals}f}", ha="center", va="center", fontsize=value_size, color=weight_colour(w)
                )
    if colorbar:
        ax.figure.colorbar(im, ax=ax, label="weight (row sums to 1)", shrink=0.8)
    return im


def heatmap_grid(
    fig: Figure,
    weights: np.ndarray,
    tokens: Sequence[str] | None = None,
    *,
    titles: Sequence[str] | None = None,
    ncols: int = 4,
    colorbar: bool = True,
) -> list[AxesImage]:
    """One heatmap per head on fig from weights (h, n_q, n_kv), sharing one colour bar (unless colorbar=False: the
    caller places its own) and the query labels of a row."""
    weights = np.asarray(weights)
    if weights.ndim != 3:
        raise ValueError(f"weights: expected (h, n_q, n_kv), got shape {weights.shape}")
    h = weights.shape[0]
    ncols = min(ncols, h)
    nrows = -(-h // ncols)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    images = []
    for i, ax in enumerate(axes.flat):
        if i >= h:
            ax.set_visible(False)
            continue
        title = titles[i] if titles is not None else f"head {i}"
        images.append(attention_heatmap(ax, weights[i], tokens, tokens, title=title, colorbar=False, annotate=False))
        ax.title.set_fontsize("medium")  # a grid's panels are narrow: one size down from a single map's title
        if i % ncols:  # rows are the same queries in every panel: name them once per row of panels
            ax.tick_params(labelleft=False)
            ax.set_ylabel("")
    if colorbar:
        fig.colorbar(images[0], ax=axes, label="weight (row sums to 1)", shrink=0.8)
    return images
