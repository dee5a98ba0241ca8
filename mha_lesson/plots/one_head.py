"""Figures for lesson 1 (one head is not enough): a head as a lookup, the R^2 of one head against two, one head's
R^2 curves for many random pairs (A, B), the Transformer paper's Table 3 (A), and learning curves of a trained
preview."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.patches import Rectangle

from ..demos.one_head import TABLE3_BASE_H, Table3Row, offset_weights
from . import style
from .attention import attention_heatmap

HEAD_COLOURS = {1: "tab:red", 2: "tab:blue"}  # one head, two heads: the same colours in every figure
# The sentence map's lookup labels sit on viridis' dark end (#440154): plain red reads at a contrast of 3.8, this
# light red at 6.3 (WCAG 2 asks for 4.5). The outline of a looked-up cell stays red.
LOOKUP_LABEL_COLOUR = "#ff8080"
# Curves on top; below, 4 maps across the cell's width, the colour bar under them so that each map keeps about
# 150 CSS px (9 px a cell: t-1 tells from t-2), and at most 800 px tall (a laptop's screen).
PLATEAU_FIGSIZE = style.figsize(7.6)
# The plateau's weight curves: head 0 orange, head 1 green (not the colours of h = 1 and 2); solid t-1, dotted t-2.
PLATEAU_STYLES = {
    (0, 0): ("tab:orange", "-"),
    (0, 1): ("tab:orange", ":"),
    (1, 0): ("tab:green", "-"),
    (1, 1): ("tab:green", ":"),
}


def sentence_map(
    ax: Axes, weights: np.ndarray, tokens: Sequence[str], lookups: Mapping[str, str], *, title: str
) -> AxesImage:
    """One head's (n, n) weights on a sentence, with the cell of every named lookup outlined in red and labelled
    beside it in LOOKUP_LABEL_COLOUR."""
    im = attention_heatmap(ax, weights, tokens, tokens, title=title, annotate=False)
    for query, key in lookups.items():
        i, j = tokens.index(query), tokens.index(key)
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", lw=2))
        ax.annotate(
            f"{query} → {key}: {weights[i, j]:.2f}",
            (j + 0.5, i),
            xytext=(8, 0),
            textcoords="offset points",
            va="center",
            color=LOOKUP_LABEL_COLOUR,
            fontsize=10,
        )
    return im


def r2_curves(
    ax: Axes,
    alphas: np.ndarray,
    curves: Mapping[str, np.ndarray],
    *,
    best: tuple[float, float] | None = None,
    two_heads: float | None = None,
    title: str = "How much of y_t one head can explain, by where it looks",
) -> None:
    """One head's R^2 against the weight alpha on key t-1 (label -> (len(alphas),) R^2), with the best single head
    starred and, if given, the R^2 of two heads (one per key) as a line."""
    for label, r2 in curves.items():
        closed = "closed form" in label  # the limit of infinitely many samples: a thin line over the measured one
        style = {"color": "k", "ls": "--", "lw": 1.2} if closed else {"color": HEAD_COLOURS[1], "lw": 3, "alpha": 0.7}
        ax.plot(alphas, r2, label=label, **style)
    if best is not None:
        ax.plot(*best, "k*", ms=12, clip_on=False, label=f"best single head: R² = {best[1]:.3f} at α = {best[0]:.2f}")
    if two_heads is not None:
        ax.axhline(
            two_heads, color=HEAD_COLOURS[2], lw=3, label=f"two heads (one on t−1, one on t−2): R² = {two_heads:.3f}"
        )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.05)
    ax.axhline(0.5, color="grey", lw=0.8, ls=":", label="R² = 0.5: one head's average over random A, B")
    ax.set_xlabel("α: weight on key t−1  (1 − α on key t−2)")
    ax.set_ylabel("R² (share of the variance of y_t explained)")
    ax.set_title(title)
    # Between the two-head line at 1 and one head's curves (all near 0.5): the band where no line runs.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.93))


def pair_curves(
    ax: Axes, alphas: np.ndarray, curves: np.ndarray, overlaps: np.ndarray, *, mean: np.ndarray, mean_of: int, d: int
) -> None:
    """One-head R^2 curves (k, len(alphas)) of k random (A, B) pairs of width d, coloured by the sign of their
    cos(A, B) (k,), each with its best point; curve 0 (the lesson's pair) in red; `mean` (len(alphas),) averages
    mean_of pairs."""
    kinds = (
        (1, "tab:green", "cos(A, B) > 0: bulges up, best α inside"),
        (-1, "tab:purple", "cos(A, B) < 0: sags, best α at an end"),
    )
    for sign, colour, label in kinds:
        rows = np.flatnonzero(np.sign(overlaps) == sign)
        for k, r in enumerate(rows):
            ax.plot(alphas, curves[r], color=colour, lw=0.8, alpha=0.6, label=label if k == 0 else None)
        best = curves[rows].argmax(axis=1)  # (len(rows),): each curve's best grid point
        ax.plot(alphas[best], curves[rows, best], "o", color=colour, ms=4, clip_on=False)
    ax.plot(alphas, curves[0], color=HEAD_COLOURS[1], lw=2.5, label="our A, B (the curve above)")
    ax.plot(alphas, mean, color="k", lw=2.5, label=f"average of {mean_of} pairs")
    ax.axhline(0.5, color="grey", lw=0.8, ls=":", label="R² = 0.5")
    ax.set_xlim(0, 1)
    ax.set_xlabel("α: weight on key t−1  (1 − α on key t−2)")
    ax.set_ylabel("R² (best map at each α)")
    ax.set_title(f"One head on {len(curves)} random pairs (A, B), d = {d}: dots mark each pair's best α")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncols=2)  # below: the curves fill the panel


def table3_plot(ax_ppl: Axes, ax_bleu: Axes, rows: Sequence[Table3Row]) -> None:
    """Dev perplexity and BLEU against h (log 2 axis) for Table 3 (A), the base model starred; ax_ppl above ax_bleu,
    sharing its x axis (named once, under ax_bleu)."""
    hs = [r.h for r in rows]
    for ax, values, name, better, digits in (
        (ax_ppl, [r.ppl for r in rows], "dev perplexity (per wordpiece)", "lower is better", 2),
        (ax_bleu, [r.bleu for r in rows], "dev BLEU", "higher is better", 1),
    ):
        ax.plot(hs, values, "o-", color="tab:purple")
        base = hs.index(TABLE3_BASE_H)
        ax.plot(hs[base], values[base], "k*", ms=14, label=f"base model (h = {TABLE3_BASE_H})")
        for h, v in zip(hs, values, strict=True):
            ax.annotate(f"{v:.{digits}f}", (h, v), xytext=(0, 7), textcoords="offset points", ha="center", fontsize=9)
        ax.set_xscale("log", base=2)
        ax.set_xticks(hs, [f"{h}\n(d_k={r.d_k})" for h, r in zip(hs, rows, strict=True)])
        ax.minorticks_off()
        ax.margins(y=0.2)
        ax.set_ylabel(name)
        ax.set_title(f"{name}: {better}")
        ax.legend(loc="best")
    ax_bleu.set_xlabel("heads h (d_k = 512 / h: equal computation)")


def learning_curves(
    ax: Axes, losses: Mapping[int, np.ndarray], *, chance: float | None = None, smooth: int = 25
) -> None:
    """Training loss per step for each h (h -> (steps,) losses), raw in light colour and a running mean on top."""
    for h, loss in losses.items():
        colour = HEAD_COLOURS.get(h)
        steps = np.arange(1, len(loss) + 1)
        ax.plot(steps, loss, color=colour, alpha=0.25, lw=0.8)
        mean = np.convolve(loss, np.ones(smooth) / smooth, mode="valid")  # (steps - smooth + 1,)
        ax.plot(steps[smooth - 1 :], mean, color=colour, lw=2, label=f"h = {h} (running mean of {smooth} steps)")
    if chance is not None:
        ax.axhline(chance, color="grey", ls=":", lw=1, label=f"guessing both tokens: {chance:.2f} nats")
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("training loss (nats, log scale)")
    ax.set_title("Learning the two lookups: one head against two")
    ax.legend(loc="lower left", fontsize=8)


def plateau(
    fig: Figure,
    steps: Sequence[int],
    weights: np.ndarray,
    losses: Mapping[str, np.ndarray],
    maps: Mapping[int, np.ndarray],
) -> None:
    """The two-head model leaving its plateau. Top: held-out loss (left) and each head's mean weight on the keys 1 and
    2 back (right) against the step; weights (len(steps), h, 2). Bottom: the heads' (n, n) maps at a few steps
    (step -> (h, n, n)), one column per step (the step on top), one row per head, each map's mean weights on t-1 and
    t-2 in its dark top-right corner, one colour bar under them; the maps' steps are dashed in the curves. Give fig
    about PLATEAU_FIGSIZE."""
    top, bottom = fig.subfigures(2, 1, height_ratios=(1, 2))
    ax_loss, ax_w = top.subplots(1, 2)
    for label, loss in losses.items():
        ax_loss.plot(steps, loss, color=HEAD_COLOURS[1 if "one" in label else 2], lw=2, label=label)
    ax_loss.set_yscale("log")
    ax_loss.set_xlabel("training step")
    ax_loss.set_ylabel("held-out loss (nats)")
    ax_loss.set_title("held-out loss")
    ax_loss.legend(loc="lower left")
    for (head, key), (colour, ls) in PLATEAU_STYLES.items():
        ax_w.plot(steps, weights[:, head, key], color=colour, ls=ls, lw=2, label=f"head {head} on t−{key + 1}")
    ax_w.set_ylim(0, 1)
    ax_w.set_xlabel("training step")
    ax_w.set_ylabel("mean weight on the key")
    ax_w.set_title("where the two heads look")
    ax_w.legend(loc="upper left")  # one column: above the plateau's curves, left of the break-out
    for ax in (ax_loss, ax_w):
        for step in maps:
            ax.axvline(step, color="grey", lw=0.8, ls="--")
    h = next(iter(maps.values())).shape[0]
    axes = bottom.subplots(h, len(maps), squeeze=False, sharex=True, sharey=True)
    image = None
    for col, (step, att) in enumerate(maps.items()):
        means = offset_weights(att)  # (h, 2): each head's mean weight on t-1 and t-2
        for head in range(h):
            ax = axes[head, col]
            image = ax.imshow(att[head], vmin=0, vmax=1, cmap="viridis", interpolation="nearest")
            n = att.shape[-1]
            ax.set_xticks(range(0, n, 5))
            ax.set_yticks(range(0, n, 5))
            if head == 0:
                ax.set_title(f"step {step}", fontsize=10)
            if head == h - 1:
                ax.set_xlabel("key position", fontsize=9)
            if col == 0:
                ax.set_ylabel(f"head {head}: query position", fontsize=9)  # one line: the width goes to the maps
            # Above the diagonal the maps are dark (a query sees no later key): room for the head's two means.
            ax.text(
                0.97,
                0.97,
                f"t−1: {means[head, 0]:.2f}\nt−2: {means[head, 1]:.2f}",
                transform=ax.transAxes,
                ha="right",
                va="top",
                fontsize=9,
                color="white",
            )
    bottom.colorbar(image, ax=axes, location="bottom", shrink=0.6, aspect=40, label="weight (row sums to 1)")
    bottom.suptitle(
        "The two heads' maps on one held-out sequence\n"
        "t−1 is the diagonal just below the main one, t−2 the next; top right: the map's mean weight on each",
        fontsize=9,
    )
