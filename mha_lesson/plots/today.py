"""Lesson 19's figures: the sink demo, MLA's cache against retrieval, local/global reach and memory, recall."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes

QUERY_LABELS = ("q0 match", "q1 match", "q2 match", "q3 none", "q4 none", "q5 none")


def sink_map(ax: Axes, weights: np.ndarray):
    """Attention weights (6, 8) as a heat map, queries on rows; returns the image (set_data redraws it)."""
    im = ax.imshow(weights, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set_xticks(range(weights.shape[1]), [f"k{j}" for j in range(weights.shape[1])])
    ax.set_yticks(range(len(QUERY_LABELS)), QUERY_LABELS)
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    return im


def sink_bars(ax: Axes, row_sums: np.ndarray, norms: np.ndarray):
    """Row sums and output norms per query, side by side, query 0 on top; returns the two bar containers.

    The legend goes below the figure (outside lower center): at low sink logits every bar is long, and no corner
    of the axes stays free of them."""
    y = np.arange(len(row_sums))
    sums = ax.barh(y - 0.2, row_sums, height=0.4, label="row sum of weights (share, 0 to 1)")
    out = ax.barh(y + 0.2, norms, height=0.4, label="output norm |w V| (length of a vector)")
    ax.set_yticks(y, QUERY_LABELS)
    ax.invert_yaxis()  # query 0 on top, as in the map
    ax.set_xlim(0, max(2.5, float(norms.max()) * 1.1))
    ax.set_xlabel("row sum or output norm")
    ax.figure.legend(loc="outside lower center", ncols=2)
    return sums, out


def mla_cache_plot(ax: Axes, d_cs: np.ndarray, mha_numbers: int) -> None:
    """Numbers cached per token and layer against d_c, beside MHA's 2·h·d_k."""
    ax.plot(d_cs, d_cs, "o-", label="latent: d_c numbers")
    ax.axhline(mha_numbers, color="k", ls="--", label=f"MHA keys + values: {mha_numbers}")
    ax.set_xlabel("latent width d_c")
    ax.set_ylabel("numbers cached\nper token and layer")
    ax.set_ylim(0, mha_numbers * 1.1)
    ax.legend(loc="center left", framealpha=1)  # over the latent line's low start, clear of MHA's line above


def mla_quality_plot(ax: Axes, ref: dict[str, np.ndarray]) -> None:
    """Retrieval accuracy and margin of MiniLM with rank-d_c keys and values."""
    ax.plot(ref["d_c"], ref["accuracy"], "o-", label="accuracy (share of sentences)")
    ax.plot(ref["d_c"], ref["margin"] / ref["margin"][0], "s-", label="margin ÷ intact model's margin")
    ax.set_xlabel("latent width d_c")
    ax.set_ylabel("accuracy, or margin ratio")
    ax.set_ylim(0, 1.05)
    ax.legend(loc="lower right", framealpha=1)


def reach_plot(ax: Axes, reach: np.ndarray, n: int):
    """How far back the last token reaches after each layer (log scale), against the whole sequence of n tokens.
    Returns the line. reach: (layers,) tokens."""
    layers = np.arange(1, len(reach) + 1)
    (line,) = ax.plot(layers, np.maximum(reach, 1), "-", color="C0")
    ax.set_yscale("log")
    ax.set_ylim(100, n * 2)
    ax.axhline(n - 1, color="k", ls=":", lw=1, label=f"whole sequence ({n:,} tokens)")
    ax.set_xlabel("layer")
    ax.set_ylabel("tokens of reach (log)")
    ax.legend(loc="lower right")
    return line


def recall_plot(ax: Axes, pairs: Sequence[int], curves: dict[str, np.ndarray], d_k: int) -> None:
    """Associative recall accuracy against the number of stored pairs, one curve per rule."""
    for name, acc in curves.items():
        ax.plot(pairs, acc, "o-", label=name)
    ax.axvline(d_k, color="k", ls=":", label=f"d_k = {d_k}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(pairs), [str(p) for p in pairs])
    ax.set_xlabel("keys stored (log scale, powers of 2), each written twice: old value, then new")
    ax.set_ylabel("recall accuracy")
    ax.set_ylim(0, 1.05)
    ax.legend()
