"""Figures for lessons 15 and 16: a trained model's sentence similarities, its 72 heads' scores, and head ablation;
syntax and co-reference heads, pruning on a task, and attention weighted by value norms."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.patches import Patch, Rectangle

from ..head_analysis import LABELS, MODES, relation_grid
from .attention import attention_heatmap


def similarity_heatmap(ax: Axes, sims: np.ndarray, labels: Sequence[str], *, title: str) -> AxesImage:
    """Cosine similarities (N, N) between sentences, annotated, on a -1..1 diverging scale.

    Rows show each sentence numbered, columns only its number: N sentences written out on both axes would leave the
    matrix a third of a laptop-wide cell."""
    sims = np.asarray(sims)
    if sims.ndim != 2 or sims.shape[0] != sims.shape[1] or sims.shape[0] != len(labels):
        raise ValueError(f"sims: expected a ({len(labels)}, {len(labels)}) matrix for the labels, got {sims.shape}")
    im = ax.imshow(sims, cmap="RdBu_r", vmin=-1.0, vmax=1.0, interpolation="nearest")
    ax.set_xticks(range(len(labels)), [str(i + 1) for i in range(len(labels))])
    ax.set_yticks(range(len(labels)), [f"{label} ({i + 1})" for i, label in enumerate(labels)])
    for i in range(sims.shape[0]):
        for j in range(sims.shape[1]):
            colour = "w" if abs(sims[i, j]) > 0.6 else "k"
            ax.text(j, i, f"{sims[i, j]:.2f}", ha="center", va="center", fontsize=9, color=colour).set_in_layout(False)
    ax.set_title(title)
    ax.set_xlabel("sentence (its number on the rows)")
    ax.set_ylabel("sentence")
    ax.figure.colorbar(im, ax=ax, label="cosine similarity (1 = same direction)", shrink=0.8)
    return im


def _no_negative_zero(text: str) -> str:
    """A formatted number without the sign of a value that rounds to zero ("-0", "-0.000" -> "0", "0.000")."""
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text  # "-0" reads as a negative effect


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
    if fmt is not None:  # at 9 points, the smallest text that reads once a laptop scales a 7-inch figure down
        for (li, hi), v in np.ndenumerate(values):
            light = (v - vmin) < 0.6 * (vmax - vmin)
            label = _no_negative_zero(fmt.format(v))
            text = ax.text(hi, li, label, ha="center", va="center", fontsize=9, color="w" if light else "k")
            text.set_in_layout(False)  # inside the axes anyway: measuring every label would only slow the layout
    for li, hi in marked:
        ax.add_patch(Rectangle((hi - 0.5, li - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2))
    ax.figure.colorbar(im, ax=ax, label=colorbar_label, shrink=0.9)
    return im


def score_grids(
    fig: Figure, scores: Mapping[str, np.ndarray], baseline: Mapping[str, float], threshold: float = 0.5
) -> None:
    """One (layers, heads) heatmap per score on fig; fractions share a 0..1 scale, heads above threshold framed."""
    axes = fig.subplots(3, 2).ravel()  # two panels a row: a laptop-wide cell leaves each title its width
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
        # Two panels and their colour bars share a cell's width: a smaller title, every other head numbered.
        ax.title.set_fontsize(9)
        ax.set_xticks(range(0, values.shape[1], 2))
    n_heads = np.asarray(next(iter(scores.values()))).size
    fig.suptitle(
        f"Where each of the {n_heads} heads attends,\naveraged over every token of the corpus (red: > {threshold})"
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
    """Top: 1 - cosine for every switched-off head (layers, heads); below: the same numbers sorted, log scale."""
    drift = 1.0 - np.asarray(cosine)
    top, bottom = fig.subplots(2, 1)  # stacked: 72 numbers of three decimals need a cell's whole width at 9 points
    layer_head_heatmap(
        top, drift, title="How far the sentence embedding moves\nwhen one head is switched off",
        colorbar_label="1 - cosine(ablated, intact)", fmt="{:.3f}",
    )  # fmt: skip
    order = np.argsort(drift.ravel())[::-1]
    h = drift.shape[1]
    colours = [f"C{i // h}" for i in order]  # one colour per layer
    bottom.bar(range(drift.size), np.maximum(drift.ravel()[order], 1e-7), color=colours, width=0.9)
    bottom.set_yscale("log")
    bottom.set_xlabel("heads, sorted by effect (colour = layer)")
    bottom.set_ylabel("1 - cosine(ablated, intact), log scale")
    bottom.set_title(f"The same {drift.size} heads, sorted by how far they move the embedding")
    handles = [Patch(color=f"C{li}", label=f"layer {li}") for li in range(drift.shape[0])]
    bottom.legend(handles=handles, ncols=3)


# Syntax and co-reference heads, pruning on a task, value-norm weighting (lesson 15, sections 7-9) -------------


def frame_cells(ax: Axes, rows: Sequence[int], cols: Sequence[int], colour: str = "red", **style: object) -> Rectangle:
    """Frame the block of cells rows x cols (consecutive indices) of an image on ax; returns the frame."""
    rows, cols = list(rows), list(cols)
    if not rows or not cols:
        raise ValueError(f"rows, cols: expected non-empty runs of cell indices, got {rows} and {cols}")
    frame = Rectangle((cols[0] - 0.5, rows[0] - 0.5), len(cols), len(rows), fill=False, edgecolor=colour,
                      linewidth=style.pop("linewidth", 2.0), **style)  # fmt: skip
    ax.add_patch(frame)
    return frame


def word_level_figure(
    fig: Figure,
    pieces: np.ndarray,
    piece_labels: Sequence[str],
    words: np.ndarray,
    word_labels: Sequence[str],
    *,
    head: tuple[int, int],
    arc: tuple[int, int] | None = None,
) -> None:
    """Left: one head's word-piece map; right: the same as word-level attention; arc (query word, key word) framed."""
    left, right = fig.subplots(1, 2)
    layer, h = head
    attention_heatmap(left, pieces, piece_labels, piece_labels, title=f"head ({layer}, {h}): word pieces",
                      colorbar=False, annotate=False)  # fmt: skip
    im = attention_heatmap(right, words, word_labels, word_labels, title="the same head: words (Clark et al.)",
                           colorbar=False, annotate=False)  # fmt: skip
    if arc is not None:
        frame_cells(right, [arc[0]], [arc[1]])
    fig.colorbar(im, ax=[left, right], label="weight (row sums to 1)", shrink=0.8)


def relation_grids(fig: Figure, rows: Sequence[Mapping], compared: Sequence[Mapping]) -> None:
    """One (layers, heads) accuracy map per relation; the best head framed, its accuracy and the baseline in the title.

    rows: head_analysis.relation_table; compared: demos.real_heads.compare_relations (one entry per relation).
    """
    axes = fig.subplots(-(-len(compared) // 2), 2, squeeze=False).ravel()  # two a row: each title keeps its width
    for ax, r in zip(axes, compared, strict=False):
        grid = relation_grid(rows, r["relation"])
        im = ax.imshow(grid, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
        frame_cells(ax, [r["layer"]], [r["head"]])
        ax.set_title(f"{r['label']} ({r['count']} arcs)\nbest ({r['layer']}, {r['head']}): {r['accuracy']:.2f}, "
                     f"baseline {r['baseline']:.2f}", fontsize=10)  # fmt: skip
        ax.set_xticks(range(grid.shape[1]))
        ax.set_yticks(range(grid.shape[0]))
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
    for ax in axes[len(compared) :]:
        ax.set_visible(False)
    fig.colorbar(im, ax=axes, label="accuracy: fraction of dependents whose most-attended word is the gold head",
                 location="bottom", shrink=0.8, aspect=40)  # fmt: skip
    fig.suptitle("Which head finds each relation's head word\n(red: the best head; baseline: best fixed offset)")


def importance_figure(fig: Figure, ref: Mapping[str, np.ndarray], n_sentences: int) -> None:
    """Each head's importance for paraphrase retrieval, switched off alone by zero and by mean: margin drop x 1000.

    Red frames mark heads whose removal alone loses at least one sentence. ref: head_analysis.pruning_reference().
    """
    drops = {mode: 1000 * np.asarray(ref[f"margin_drop_{mode}"]) for mode in MODES}
    low = min(float(d.min()) for d in drops.values())
    high = max(float(d.max()) for d in drops.values())
    for ax, mode in zip(fig.subplots(2, 1), MODES, strict=True):  # stacked: each number keeps a cell's width
        lost = np.round(np.asarray(ref[f"accuracy_drop_{mode}"]) * n_sentences)
        layer_head_heatmap(
            ax, drops[mode], title=f"{mode}-ablation: margin drop when one head is off\n(red: loses a sentence)",
            colorbar_label="margin drop (thousandths of a cosine)", vmin=low, vmax=high,
            marked=list(zip(*np.nonzero(lost > 0), strict=True)), fmt="{:.0f}",
        )  # fmt: skip


def pruning_figure(fig: Figure, ref: Mapping[str, np.ndarray], word_overlap: float) -> None:
    """Top: retrieval accuracy as heads go, least important first, both ablations, with the no-attention controls.

    Below: each head's margin drop under zero- against mean-ablation (one dot per head, colour = layer).
    """
    top, bottom = fig.subplots(2, 1)  # stacked: side by side, a laptop-wide cell squeezes the legends onto the data
    fractions = np.asarray(ref["fractions"])
    for mode, style in zip(MODES, ("-", "--"), strict=True):
        top.plot(fractions, ref[f"curve_{mode}"], style, marker=".", label=f"{mode}-ablation")
    controls = [
        (float(ref["intact_accuracy"]), "intact model", "k"),
        (float(ref["no_heads_accuracy_zero"]), "every head off (zero)", "C3"),
        (float(ref["embedding_accuracy"]), "mean of input embeddings (no layer)", "C4"),
        (word_overlap, "shared words, no model", "C5"),
    ]
    # The y range fits the curves and the model's own controls, so their sentence-sized steps read; the word count,
    # far below, stays in the legend with its value rather than squashing the curves into a tenth of the panel.
    low = min(float(np.min(ref[f"curve_{mode}"])) for mode in MODES)
    low = min(low, *(value for value, _, _ in controls[:3])) - 0.01
    for value, label, colour in controls:
        below = " (below the axis)" if value < low else ""
        top.axhline(value, color=colour, linestyle=":", linewidth=1.2, label=f"{label}: {value:.3f}{below}")
    top.set_ylim(low, 1.0 + 0.01 * (1.0 - low))
    top.set_xlim(0, 1)
    top.set_xlabel("fraction of the heads switched off")
    top.set_ylabel("retrieval accuracy (fraction of sentences)")
    top.set_title("Pruning on the paraphrase task, least important head first")
    top.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2)  # below: inside, it would hide the curves
    top.grid(alpha=0.3)
    zero, mean = (1000 * np.ravel(ref[f"margin_drop_{mode}"]) for mode in MODES)
    h = np.asarray(ref["margin_drop_zero"]).shape[1]
    bottom.scatter(zero, mean, c=[f"C{i // h}" for i in range(zero.size)], s=18)
    lo, hi = min(zero.min(), mean.min()), max(zero.max(), mean.max())
    bottom.plot([lo, hi], [lo, hi], color="grey", linewidth=1, label="same importance")
    bottom.set_xlabel("margin drop, zero-ablation (thousandths)")
    bottom.set_ylabel("margin drop, mean-ablation (thousandths)")
    bottom.set_title("One head off at a time: zero against mean")
    handles = [Patch(color=f"C{li}", label=f"layer {li}") for li in range(zero.size // h)]
    bottom.legend(handles=handles + bottom.get_legend_handles_labels()[0], ncols=2, loc="lower right")
    bottom.grid(alpha=0.3)


def sink_figure(fig: Figure, sinks: Mapping[str, Mapping], threshold: float = 0.5) -> None:
    """The sink plot both ways: [CLS]'s share per head by weight and by weight x value norm, per layer, and the norms.

    sinks: head_analysis.sink_scores. Heads above threshold framed red.
    """
    (raw, weighted), (per_layer, norms) = fig.subplots(2, 2)
    for ax, way, what in ((raw, "attention", "weight"), (weighted, "value-norm", r"weight $\times \|v_j W^O_i\|$")):
        values = np.asarray(sinks[way]["[CLS]"])
        layer_head_heatmap(ax, values, title=f"[CLS]'s share of\neach head's {what}", colorbar_label="share",
                           vmax=1.0, marked=list(zip(*np.nonzero(values > threshold), strict=True)),
                           fmt=None)  # fmt: skip
        ax.set_xticks(range(0, values.shape[1], 2))  # every other head: at 9 points, 10 and 11 would touch
    fig.suptitle(f"Top: red frames mark heads with over {threshold:.0%} of their share on [CLS] (sinks)")
    layers = np.arange(np.asarray(sinks["attention"]["[CLS]"]).shape[0])
    for token, colour in (("[CLS]", "C0"), ("[SEP]", "C1")):
        for way, style in (("attention", "-"), ("value-norm", "--")):
            share = np.asarray(sinks[way][token]).mean(axis=1)
            per_layer.plot(layers, share, style, color=colour, marker="o", label=f"{token}, by {way}")
    per_layer.set_ylim(0, 1)
    per_layer.set_xticks(layers)
    per_layer.set_xlabel("layer")
    per_layer.set_ylabel("share (mean over the layer's heads)")
    per_layer.set_title("By weight (solid)\nand by value norm (dashed)")
    per_layer.legend()
    per_layer.grid(alpha=0.3)
    for token, colour in (("[CLS]", "C0"), ("[SEP]", "C1"), ("other", "C2")):
        norms.plot(layers, np.asarray(sinks["norms"][token]).mean(axis=1), marker="o", color=colour,
                   label="words" if token == "other" else token)  # fmt: skip
    norms.set_yscale("log")
    norms.set_xticks(layers)
    norms.set_xlabel("layer")
    norms.set_ylabel(r"mean $\|v_j W^O_i\|$ over heads (log)")
    norms.set_title("How much a token can add\nthrough a head")
    norms.legend()
    norms.grid(alpha=0.3)


def order_curve_figure(
    ax: Axes, fractions: np.ndarray, retrieval: np.ndarray, gap: np.ndarray, intact_gap: float
) -> None:
    """The same pruning order measured two ways, as a fraction of the intact model: retrieval and the order gap."""
    ax.plot(fractions, np.asarray(retrieval) / retrieval[0], "-", marker=".", label="paraphrase retrieval accuracy")
    ax.plot(fractions, np.asarray(gap) / intact_gap, "--", marker="o", label="word-order gap 1 − cos(s, swapped s)")
    ax.axhline(0, color="grey", linewidth=1)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.05, 1.1)
    ax.set_xlabel("fraction of the heads switched off (zero-ablation, retrieval's order)")
    ax.set_ylabel("score / intact model's score")
    ax.set_title("One pruning order, two measures")
    ax.legend(loc="lower left")
    ax.grid(alpha=0.3)
