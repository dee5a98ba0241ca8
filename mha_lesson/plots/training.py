"""Figures for lesson 13 (training heads from scratch): the h sweep beside the Transformer paper, accuracy while
training, where each trained head looks, and the low-rank fits of one head's attention."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..demos.one_head import Table3Row
from ..demos.training import OFFSETS, Frames
from .attention import weight_colour
from .one_head import HEAD_COLOURS

# One colour per h in every figure of the lesson; h = 1 and 2 keep lesson 1's colours.
H_COLOURS = {**HEAD_COLOURS, 4: "tab:green", 8: "tab:orange", 16: "tab:purple"}


def h_ticks(ax: Axes, hs: Sequence[int], d_model: int) -> None:
    """A log-2 axis of head counts, each labelled with its width d_k = d_model / h (in brackets, below)."""
    ax.set_xscale("log", base=2)
    # just the number in brackets: "(d_k=16)" at 9 pt ran into its neighbour in a half-width panel
    ax.set_xticks(hs, [f"{h}\n({d_model // h})" for h in hs])
    ax.minorticks_off()


def sweep_panel(ax: Axes, hs: Sequence[int], accuracy: Mapping[int, np.ndarray], d_model: int) -> None:
    """Held-out both-right accuracy against h: one dot per seed, a line through the medians, per step count.

    accuracy: steps -> (len(hs), seeds) array.
    """
    markers = ("o", "s", "^")
    for k, (steps, acc) in enumerate(accuracy.items()):
        offset = 2 ** ((k - (len(accuracy) - 1) / 2) * 0.12)  # nudge the step counts apart on the log axis
        x = np.array(hs) * offset
        for i in range(acc.shape[1]):
            ax.plot(x, acc[:, i], markers[k], ms=4, alpha=0.5, color=f"C{k}", label=None)
        ax.plot(x, np.median(acc, axis=1), "-", marker=markers[k], color=f"C{k}", label=f"after {steps:,} steps")
    h_ticks(ax, hs, d_model)
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlabel(f"heads h (d_k), d_model = {d_model}: equal parameters")
    ax.set_ylabel("held out: both lookups right")
    ax.set_title("our toy: two lookups\n(dots: seeds, line: median)")  # two lines: it shares 7 in with the paper
    ax.legend(loc="lower center")


def offset_grid(
    fig: Figure, masses: Mapping[str, np.ndarray], *, annotate_up_to: int = 8, ncols: int = 3
) -> list[Axes]:
    """One heatmap per run in rows of ncols, heads on rows and offsets on columns: each head's mean weight on each
    offset.

    masses: panel title -> (heads, 4) array (offset_masses of one layer). Numbers (9 pt) are printed in panels of at
    most `annotate_up_to` heads: three panels across 7 in leave each cell room for "0.00" at 9 pt, five did not.
    """
    nrows = -(-len(masses) // ncols)
    grid = fig.subplots(nrows, ncols, squeeze=False)
    axes = list(grid.flat[: len(masses)])
    for spare in grid.flat[len(masses) :]:
        spare.set_visible(False)
    im = None
    for k, (ax, (title, m)) in enumerate(zip(axes, masses.items(), strict=True)):
        heads = len(m)
        im = ax.imshow(m, vmin=0, vmax=1, cmap="viridis", aspect="auto", interpolation="nearest")
        ax.set_xticks(range(len(OFFSETS)), OFFSETS, rotation=45, ha="right")
        step = 1 if heads <= 8 else 2
        ax.set_yticks(range(0, heads, step), [str(i) for i in range(0, heads, step)])
        ax.set_ylabel("head" if k % ncols == 0 else "")
        ax.set_title(title, fontsize=10)
        if heads <= annotate_up_to:
            for i in range(heads):
                for j in range(m.shape[1]):
                    ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", fontsize=9, color=weight_colour(m[i, j]))
    fig.colorbar(im, ax=axes, shrink=0.8, label="mean attention weight")
    return axes


def division_bars(ax: Axes, rates: Mapping[int, float], seeds: int) -> None:
    """For each h, the share of seeds whose heads divide the two lookups between them."""
    hs = list(rates)
    bars = ax.bar(range(len(hs)), [rates[h] for h in hs], color=[H_COLOURS[h] for h in hs])
    for bar, h in zip(bars, hs, strict=True):
        ax.annotate(
            f"{round(rates[h] * seeds)}/{seeds}",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            fontsize=9,
        )
    ax.set_xticks(range(len(hs)), [str(h) for h in hs])
    ax.set_ylim(0, 1.15)
    ax.set_xlabel("heads h")
    ax.set_ylabel("share of seeds")
    ax.set_title("one head mostly on 1 back, another on 2 back")


KL_FLOOR = 1e-6  # fits below this are exact up to rounding: drawn on the floor with a downward marker


def kl_curves(ax: Axes, d_ks: Sequence[int], curves: Mapping[str, np.ndarray], n: int) -> None:
    """Mean KL divergence of the best rank-d_k fit against d_k (log-log), one line per target pattern."""
    d_ks = np.asarray(d_ks)
    for k, (label, kl) in enumerate(curves.items()):
        colour = f"C{k + 3}"
        shown = np.maximum(kl, KL_FLOOR)
        ax.plot(d_ks, shown, "o-", color=colour, label=label)
        exact = kl < KL_FLOOR
        ax.plot(d_ks[exact], shown[exact], "v", ms=10, color=colour)
    ax.axvline(n - 1, color="grey", ls=":", lw=1)
    ax.annotate(
        f"d_k = n − 1 = {n - 1}\n▼: exact (KL < {KL_FLOOR:g})",
        (n - 1, 4),  # the top right corner, above the curves: they fall to the right
        xytext=(-4, 0),
        textcoords="offset points",
        ha="right",
        va="top",
        fontsize=9,
    )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(d_ks, [str(d) for d in d_ks])
    ax.minorticks_off()
    ax.set_ylim(KL_FLOOR / 3, 5)
    ax.set_xlabel(f"head width d_k (rank of the scores), n = {n} tokens")
    ax.set_ylabel("KL(target ‖ fit), nats per query")
    ax.set_title("how close one head can get")
    ax.legend(loc="lower left")


def pattern_row(fig: Figure, patterns: Mapping[str, np.ndarray]) -> list[Axes]:
    """Attention patterns side by side (queries on rows, keys on columns), one shared colour scale."""
    axes = fig.subplots(1, len(patterns), squeeze=False)[0]
    im = None
    for ax, (title, w) in zip(axes, patterns.items(), strict=True):
        im = ax.imshow(w, vmin=0, vmax=1, cmap="viridis", interpolation="nearest")
        ax.set_title(title, fontsize=9)
        ax.set_xticks([0, len(w) - 1])
        ax.set_yticks([0, len(w) - 1] if ax is axes[0] else [])
        ax.set_xlabel("key", fontsize=9, labelpad=1)
        if ax is axes[0]:
            ax.set_ylabel("query", fontsize=9, labelpad=1)
    fig.colorbar(im, ax=axes, shrink=0.8, label="weight")
    return list(axes)


def paper_panel(ax: Axes, rows: Sequence[Table3Row]) -> Axes:
    """Table 3 (A) against h: dev BLEU (solid, left axis) and dev perplexity (dashed, right axis). Returns the twin."""
    hs = [r.h for r in rows]
    ax.plot(hs, [r.bleu for r in rows], "o-", color="tab:purple", label="BLEU (higher is better)")
    for r in rows:
        ax.annotate(f"{r.bleu:g}", (r.h, r.bleu), xytext=(0, 6), textcoords="offset points", ha="center", fontsize=9)
    twin = ax.twinx()
    twin.plot(hs, [r.ppl for r in rows], "s--", color="tab:grey", label="perplexity (lower is better)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(hs, [str(h) for h in hs])
    ax.minorticks_off()
    ax.margins(x=0.08, y=0.25)  # x: room for the first and last BLEU labels inside the frame
    twin.margins(y=0.25)
    ax.set_xlabel(f"heads h (d_k = {rows[0].h * rows[0].d_k} / h: equal computation)")
    ax.set_ylabel("dev BLEU", color="tab:purple")
    twin.set_ylabel("dev perplexity (per wordpiece)", color="tab:grey")
    ax.set_title("paper, Table 3 (A):\ntranslation, dev set")
    lines = ax.get_lines()[:1] + twin.get_lines()
    # below the panel: inside, at 9 pt, it covered the perplexity curve's low point
    ax.legend(lines, [line.get_label() for line in lines], loc="upper center", bbox_to_anchor=(0.5, -0.2))
    return twin


def seed_curves(ax: Axes, steps: np.ndarray, runs: Mapping[str, np.ndarray], colours: Mapping[str, str]) -> None:
    """Held-out both-right accuracy against training step, one thin line per seed (runs: label -> (seeds, C))."""
    for label, acc in runs.items():
        for s, row in enumerate(acc):
            ax.plot(steps, row, "o-", ms=2, lw=1, color=colours[label], alpha=0.8, label=label if s == 0 else None)
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlim(0, steps[-1])
    ax.set_xlabel("training step")
    ax.set_ylabel("held out: both lookups right")
    # outside, right of the axes: five seeds per run leave no corner free of lines
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))


def plateau_figure(fig: Figure, frames: Frames, tokens: np.ndarray) -> None:
    """The training loss with the frames marked (top) and each head's map at each frame (rows = heads).

    frames: demos.training.Frames; tokens (n,): the held-out sequence the maps show (named in the title).
    """
    top, bottom = fig.subfigures(2, 1, height_ratios=(1, 1.6))
    ax = top.subplots()
    window = 10  # a running mean: single steps are noisy
    mean = np.convolve(frames.losses, np.ones(window) / window, mode="valid")
    ax.plot(np.arange(window, len(frames.losses) + 1), mean, color="tab:blue", label="training loss (mean of 10 steps)")
    ax.plot(frames.steps, frames.loss, "o", color="tab:red", ms=4, label="held-out loss at each frame")
    for step in frames.steps:
        ax.axvline(step, color="0.7", lw=0.8, ls=":")
    # Left of 0 too: the step-0 dot sat on the spine, half clipped.
    ax.set(yscale="log", xlabel="training step", ylabel="loss (nats)", xlim=(-10, frames.steps[-1] + 10))
    ax.legend(loc="upper right")
    h = frames.attention.shape[1]
    axes = bottom.subplots(h, len(frames.steps), squeeze=False)
    n = frames.attention.shape[-1]
    im = None
    for c, step in enumerate(frames.steps):
        for i in range(h):
            a = axes[i, c]
            im = a.imshow(frames.attention[c, i], vmin=0, vmax=1, cmap="viridis", interpolation="nearest")
            one, two = frames.masses[c, i, 1:3]
            # 9 pt, the smallest that reads once a laptop scales 7 in down; "|" without spaces: 7 columns
            a.set_title(f"step {step}\n{one:.2f}|{two:.2f}", fontsize=9)
            a.set_xticks([0, n - 1] if i == h - 1 else [])
            a.set_yticks([0, n - 1] if c == 0 else [])
            a.tick_params(labelsize=9, length=2)
    for i in range(h):
        axes[i, 0].set_ylabel(f"head {i}\nquery position", fontsize=9)
    # Once, under the middle map: seven labels would run together, and the subfigure's label floated below the gap
    # that the square maps leave.
    axes[-1, len(frames.steps) // 2].set_xlabel("key position", fontsize=9, labelpad=1)
    bottom.colorbar(im, ax=axes, shrink=0.8, label="attention weight")
    bottom.suptitle(
        f"each head's attention on held-out sequence 0 ({'-'.join(str(int(t)) for t in tokens[:4])}...);\n"
        "titles: mean weight 1 back | 2 back over all held-out sequences",
        fontsize=9,
    )
