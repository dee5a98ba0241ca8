"""Lesson 20's figures: training curves, every head's map, distance profiles, ablations, the h sweep, induction."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.transforms import ScaledTranslation

from . import style


def char_label(c: str) -> str:
    """A tick label for one character: a space as ␣ and a line break as ↵, so neither is invisible."""
    return {" ": "␣", "\n": "↵"}.get(c, c)


def running_mean(x: np.ndarray, window: int) -> np.ndarray:
    """(n,) -> (n - window + 1,) mean of every window of consecutive values."""
    return np.convolve(x, np.ones(window) / window, mode="valid")


def training_curves(ax: Axes, log: Mapping[str, np.ndarray], *, smooth: int = 50, title: str) -> None:
    """The training loss (running mean of smooth steps) and the validation loss of a run's log, in nats."""
    loss = np.asarray(log["loss"])
    steps = np.arange(1, len(loss) + 1)
    ax.plot(steps, loss, color="tab:blue", alpha=0.2, lw=0.6)
    ax.plot(steps[smooth - 1 :], running_mean(loss, smooth), color="tab:blue", label=f"training (mean of {smooth})")
    ax.plot(log["val_step"], log["val_loss"], "o-", color="tab:orange", ms=3, label="validation")
    ax.set(xlabel="training step", ylabel="loss (nats per character)", title=title)
    ax.legend()


# Every head's map in one figure that fits a laptop: 5.7 inches wide (about 582 CSS pixels at style.DPI with
# bbox_inches='tight', under the 588-pixel output area, so nothing is scaled down) and 7.4 inches tall (a screen).
# With the colour bar under the grid, each of the 4 x 4 maps is about 130 x 150 pixels, as at 7 inches beside it.
HEAD_MAPS_FIGSIZE = style.figsize(7.4, width=0.815)
CHAR_SIZE = 7.4  # points: the characters on the maps' axes, 10.3 px at style.DPI (about 9 px apart on the rows)
STAGGER = 8.5  # points: how far every other character label steps away from the map: a line of CHAR_SIZE + 0.5


def _stagger_labels(ax: Axes, *, rows: bool) -> None:
    """Step every other tick label (odd positions) away from the map: the row labels left, the column labels down.

    One character per ~7-9 px row or column: side by side they run together; staggered, each label has twice the
    room and still sits at its own row or column. A ␣ row label is also raised by 3 points: the glyph hangs below
    the baseline and would touch the letter under it. tick_params, which would reset the shifts, is called before.
    """
    to_inches = ax.figure.dpi_scale_trans
    labels = ax.get_yticklabels() if rows else ax.get_xticklabels()
    for k, label in enumerate(labels):
        step = STAGGER / 72 if k % 2 else 0.0
        lift = 3 / 72 if rows and label.get_text() == char_label(" ") else 0.0
        shift = ScaledTranslation(-step, lift, to_inches) if rows else ScaledTranslation(0, -step, to_inches)
        label.set_transform(label.get_transform() + shift)


def head_maps(fig: Figure, weights: np.ndarray, text: str) -> None:
    """Every head's attention on text: weights (n_layer, n_head, T, T), one row of panels per layer.

    Queries on rows, keys on columns; characters label the left column's rows and the bottom row's columns,
    every other one stepped away from the map so that neighbours stand apart. Each
    column is titled by its head and each row by its layer (on the left), so the panels need no titles of their own
    and the grid fits HEAD_MAPS_FIGSIZE.
    """
    n_layer, n_head, T, _ = weights.shape
    labels = [char_label(c) for c in text]
    axes = fig.subplots(n_layer, n_head, squeeze=False, gridspec_kw={"hspace": 0.04, "wspace": 0.03})
    for (i, j), ax in np.ndenumerate(axes):
        im = ax.imshow(weights[i, j], vmin=0, vmax=1, cmap="viridis", aspect="auto", interpolation="nearest")
        if i == 0:
            ax.set_title(f"head {j}", fontsize=10)
        ax.set_xticks(range(T), labels if i == n_layer - 1 else [], fontsize=CHAR_SIZE + 0.5)
        ax.set_yticks(range(T), labels if j == 0 else [], fontsize=CHAR_SIZE)
        ax.tick_params(length=0, pad=2)
        if i == n_layer - 1:
            ax.set_xlabel("key")
            _stagger_labels(ax, rows=False)
        if j == 0:
            ax.set_ylabel(f"layer {i}\nquery")
            _stagger_labels(ax, rows=True)
    # under the grid, not beside it: the figure's width goes to the maps, whose columns each carry 17 characters
    fig.colorbar(im, ax=axes, label="attention weight (row sums to 1)", location="bottom", shrink=0.6, aspect=40)


def distance_profile(ax: Axes, profile: np.ndarray, *, title: str) -> None:
    """profile (n_layer, n_head, D + 1): the mean weight at distance 0..D-1 back and beyond, one row per head."""
    n_layer, n_head, width = profile.shape
    im = ax.imshow(profile.reshape(-1, width), cmap="viridis", vmin=0, aspect="auto", interpolation="nearest")
    ax.set_yticks(range(n_layer * n_head), [f"L{i} H{j}" for i in range(n_layer) for j in range(n_head)])
    ax.set_xticks(range(width), [str(d) for d in range(width - 1)] + [f"{width - 1}+"])
    ax.set(xlabel="distance back from the query (characters)", ylabel="layer, head", title=title)
    for i in range(1, n_layer):
        ax.axhline(i * n_head - 0.5, color="w", lw=1)
    ax.figure.colorbar(im, ax=ax, label="mean attention weight", shrink=0.8)


ROLE_TEXT_SIZE = 9  # points: the table's numbers and role names, as the tick labels (12.5 px at style.DPI)


def role_table(ax: Axes, shares: np.ndarray, ratios: np.ndarray, labels: Sequence[str], *, title: str) -> None:
    """Each cell: a head's share on a role and its ratio to the baseline, which also sets the colour.

    Every number and role name is ROLE_TEXT_SIZE points, as large as the tick labels."""
    vmax = max(4.0, float(ratios.max()))
    im = ax.imshow(ratios, cmap="magma", vmin=0, vmax=vmax, aspect="auto")
    n_heads, n_roles = shares.shape
    n_head = 4 if n_heads % 4 == 0 else n_heads
    ax.set_yticks(range(n_heads), [f"L{i // n_head} H{i % n_head}" for i in range(n_heads)])
    # Each line of a role's name wrapped at 12 characters: at ROLE_TEXT_SIZE that is about a column's width.
    ax.set_xticks(range(n_roles), ["\n".join(textwrap.fill(part, 12) for part in name.split("\n")) for name in labels])
    ax.tick_params(axis="x", labelsize=ROLE_TEXT_SIZE)
    for i in range(n_heads):
        for j in range(n_roles):
            ax.text(j, i, f"{shares[i, j]:.2f}  {ratios[i, j]:.1f}x", ha="center", va="center",
                    fontsize=ROLE_TEXT_SIZE, color="k" if ratios[i, j] > 0.6 * vmax else "w")  # fmt: skip
    ax.set(ylabel="layer, head", title=title)
    ax.figure.colorbar(im, ax=ax, label="share / baseline (colour)", shrink=0.8)


def ablation_bars(ax: Axes, rise: np.ndarray, *, title: str) -> None:
    """rise (n_layer, n_head): the validation loss increase when each head alone is zeroed, sorted."""
    n_layer, n_head = rise.shape
    names = np.array([f"L{i} H{j}" for i in range(n_layer) for j in range(n_head)])
    order = np.argsort(rise.ravel())[::-1]
    ax.bar(range(rise.size), rise.ravel()[order], color=[f"C{int(n[1])}" for n in names[order]])
    ax.legend(handles=[Patch(color=f"C{i}", label=f"layer {i}") for i in range(n_layer)])
    ax.set_xticks(range(rise.size), names[order], rotation=90)
    ax.set(xlabel="head zeroed (colour: its layer)", ylabel="validation loss rise (nats)", title=title)


def sweep_panel(ax: Axes, hs: Sequence[int], final: np.ndarray, *, title: str) -> None:
    """final (len(hs), seeds): validation loss after the budget, every seed a dot, the mean a line."""
    for s in range(final.shape[1]):
        ax.plot(hs, final[:, s], "o", color="tab:blue", alpha=0.6, label="one seed" if s == 0 else None)
    ax.plot(hs, final.mean(axis=1), "-", color="tab:blue", label="mean of seeds")
    ax.set_xscale("log", base=2)
    ax.set_xticks(hs, [str(h) for h in hs])
    ax.set(xlabel="heads h (d_model = 128, d_k = 128 / h)", ylabel="validation loss (nats)", title=title)
    ax.legend()


def table3_panel(ax: Axes, rows: Sequence, *, title: str) -> None:
    """Vaswani et al.'s Table 3 (A): dev perplexity against h at d_model = 512."""
    hs = [r.h for r in rows]
    ax.plot(hs, [r.ppl for r in rows], "s-", color="tab:green")
    ax.set_xscale("log", base=2)
    ax.set_xticks(hs, [str(h) for h in hs])
    ax.set(xlabel="heads h (d_model = 512, d_k = 512 / h)", ylabel="dev perplexity (per word piece)", title=title)


def induction_panel(ax: Axes, steps: np.ndarray, curves: Mapping[str, np.ndarray], *, title: str) -> None:
    """Induction score of the best head over training, one line per probe kind."""
    for (label, scores), dashes in zip(curves.items(), ("-", "--", ":", "-."), strict=False):
        ax.plot(steps, scores, dashes, label=label)
    ax.set(xlabel="training step", ylabel="best head's induction score", ylim=(0, 1), title=title)
    ax.legend()
