"""Figures for the circuits and induction heads lesson: additive head paths, circuit matrices and their spectra,
attention maps with the cells a detector looks for, and training curves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D

from .attention import attention_heatmap
from .heads import matrix_image


def additive_paths(fig: Figure, terms: np.ndarray, total: np.ndarray, tokens: Sequence[str], *, ncols: int = 2) -> None:
    """Each head's path A_i X W_OV^i (h, n, d_model), their sum, and the layer's output, on one colour scale.

    The h + 2 panels read row by row in rows of `ncols` (two: a laptop-wide cell fits two readable panels).
    """
    terms, total = np.asarray(terms), np.asarray(total)
    if terms.ndim != 3 or total.shape != terms.shape[1:]:
        raise ValueError(f"terms: expected (h, n, d_model) matching total {total.shape}, got {terms.shape}")
    if ncols < 1:
        raise ValueError(f"ncols: expected at least 1 panel per row, got {ncols}")
    panels = [(f"head {i}: $A_{i} X W_{{OV}}^{i}$", t) for i, t in enumerate(terms)]
    panels += [("sum of the paths", terms.sum(axis=0)), ("multi_head_attention(x, x, x)", total)]
    vmax = float(max(np.abs(m).max() for _, m in panels)) or 1.0
    nrows = -(-len(panels) // ncols)
    axes = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False)
    for j, ax in enumerate(axes.flat):
        if j >= len(panels):
            ax.set_visible(False)
            continue
        title, m = panels[j]
        im = ax.imshow(m, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto", interpolation="nearest")
        ax.set_title(("+ " if 0 < j < len(terms) else "= " if j >= len(terms) else "") + title, fontsize=10)
        ax.set_yticks(range(len(tokens)), list(tokens))
        if j + ncols >= len(panels):  # the lowest panel of its column: the only one to name the shared axis
            ax.set_xlabel("output feature")
            ax.tick_params(labelbottom=True)
        if j % ncols == 0:
            ax.set_ylabel("token (query)")
    fig.colorbar(im, ax=axes, label="value", shrink=0.85)


def circuit_matrix(
    ax: Axes,
    w: np.ndarray,
    blocks: Mapping[str, slice],
    *,
    title: str,
    row_label: str,
    col_label: str,
) -> AxesImage:
    """A (d_model, d_model) circuit on a diverging scale, with the residual stream's named blocks marked."""
    edges = [s.start for s in blocks.values()][1:]
    centres = [(s.start + s.stop - 1) / 2 for s in blocks.values()]
    im = matrix_image(
        ax, w, title=title, xlabel=col_label, ylabel=row_label, col_edges=edges, row_edges=edges, colorbar_label="entry"
    )
    # Slanted: the narrow blocks' names, level, would run into each other in a half-cell-wide panel.
    ax.set_xticks(centres, list(blocks), rotation=30, ha="right", rotation_mode="anchor")
    ax.set_yticks(centres, list(blocks))
    return im


def pattern_cells(ax: Axes, pattern: np.ndarray, *, label: str) -> Line2D:
    """Mark the True cells of a (n, n) pattern on an attention map with small red rings."""
    rows, cols = np.nonzero(np.asarray(pattern))
    (line,) = ax.plot(cols, rows, "o", ms=5, mfc="none", mec="red", mew=1.0, label=label)
    return line


def layer_maps(
    fig: Figure,
    attention: np.ndarray,
    tokens: Sequence[str],
    patterns: Sequence[np.ndarray | None],
    *,
    titles: Sequence[str],
    label_every: int = 1,
) -> list[AxesImage]:
    """Heatmaps of attention (rows, cols, n, n) in a grid; red rings mark patterns[panel]'s cells (row-major order).

    label_every: name every label_every-th token on both axes (2: two-digit tokens of a long sequence stay apart).
    """
    attention = np.asarray(attention)
    if attention.ndim != 4:
        raise ValueError(f"attention: expected (rows, cols, n, n), e.g. (layers, h, n, n), got shape {attention.shape}")
    if label_every < 1:
        raise ValueError(f"label_every: expected at least 1 (every token), got {label_every}")
    rows, cols = attention.shape[:2]
    if len(patterns) != rows * cols or len(titles) != rows * cols:
        raise ValueError(
            f"patterns, titles: expected one per panel ({rows * cols}), got {len(patterns)}, {len(titles)}"
        )
    axes = fig.subplots(rows, cols, squeeze=False)
    images = []
    for idx, ax in enumerate(axes.flat):
        r, c = divmod(idx, cols)
        im = attention_heatmap(ax, attention[r, c], tokens, tokens, title=titles[idx], annotate=False, colorbar=False)
        if label_every > 1:
            # Level, every other one: 24-28 rotated two-digit labels at every position ran together on a laptop.
            shown = range(0, len(tokens), label_every)
            ax.set_xticks(shown, [tokens[j] for j in shown], rotation=0)
            ax.set_yticks(shown, [tokens[j] for j in shown])
            ax.set_xticks(range(len(tokens)), minor=True)
            ax.set_yticks(range(len(tokens)), minor=True)
        # Every panel shows the same tokens: the queries on the left edge only; the keys over every row of panels,
        # so each row names its axis. The style's 9-point ticks: they read on a laptop.
        ax.tick_params(labelleft=c == 0)
        if patterns[idx] is not None:
            pattern_cells(ax, patterns[idx], label="cells the detector scores")
        if c:
            ax.set_ylabel("")
        images.append(im)
    fig.colorbar(images[0], ax=axes, label="weight (row sums to 1)", shrink=0.8)
    return images


def spectra_plot(ax: Axes, trained: np.ndarray, random: np.ndarray, *, title: str) -> None:
    """Singular values (..., d_k), each spectrum divided by its largest: every trained head faint, medians bold."""
    trained = np.asarray(trained).reshape(-1, np.shape(trained)[-1])
    random = np.asarray(random).reshape(-1, np.shape(random)[-1])
    index = np.arange(1, trained.shape[-1] + 1)
    for s in trained:
        ax.plot(index, s / s[0], color="tab:blue", alpha=0.15, lw=0.8)
    ax.plot(index, np.median(trained / trained[:, :1], axis=0), color="tab:blue", lw=2.5, label="MiniLM, median head")
    ax.plot(index, np.median(random / random[:, :1], axis=0), "k--", lw=1.5, label="random (Glorot) weights, median")
    ax.set_xlabel("singular value index (1 = largest)")
    ax.set_ylabel("singular value / largest")
    ax.set_title(title)
    ax.set_xlim(1, index[-1])
    ax.set_ylim(0, 1.02)
    ax.legend(loc="upper right")


def loss_curves(ax: Axes, runs: Mapping[str, tuple[np.ndarray, np.ndarray]], *, phase: tuple[int, int] | None) -> None:
    """Held-out loss on the repeated copy against step for each run {label: (steps, loss)}; phase shaded."""
    for label, (steps, loss) in runs.items():
        ax.plot(steps, loss, lw=2, label=label)
    if phase is not None:
        ax.axvspan(*phase, color="0.85", zorder=0, label="phase change (±100 steps)")
    ax.set_xlabel("training step")
    ax.set_ylabel("loss on the repeated copy (nats)")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper right")


def score_curves(ax: Axes, steps: np.ndarray, scores: Mapping[str, np.ndarray], *, title: str) -> None:
    """Detector scores against training step, one line per {label: (S,) scores}."""
    for label, s in scores.items():
        ax.plot(steps, s, lw=2, label=label)
    ax.set_xlabel("training step")
    ax.set_ylabel("fraction of attention on the pattern")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    # Below the axes: inside, a legend a third of a 7-inch axes wide would cover the rising curves.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2)
