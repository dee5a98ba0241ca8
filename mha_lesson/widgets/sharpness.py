"""Lesson 4's sharpness explorer: the toy's four hand-made heads with their scaled scores multiplied by a gain g.

softmax(g · s) for the toy's scaled scores s: at g = 0 every row is uniform (entropy ln n), and as g grows each
row's largest scores take all the weight (entropy towards 0). The broad head's scores are all 0, so no gain changes
it: sharpness comes from score *differences*, and a gain only stretches the differences there are.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from .._checks import check_number
from ..attention import softmax
from ..demos.scaling import row_stats
from ..demos.toy import HEAD_NAMES, TOKENS, toy_embeddings, toy_params
from ..multihead import multi_head_attention_loop
from ..plots.attention import attention_heatmap
from ._base import Explorer, settle_layout

MAX_GAIN = 2.0
STEP = 0.1  # the page shows a slider's value to 0.1 (aria-valuenow), so finer steps look unchanged
CURVE_GAINS = np.linspace(0.0, MAX_GAIN, 81)  # (81,) where the entropy curves are sampled
COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red")  # one per head, in the curves and the titles


@functools.cache
def toy_scaled_scores() -> np.ndarray:
    """(h, n, n): the toy heads' scaled scores Q_i K_i^T / sqrt(d_k) on the toy sentence (gain 1)."""
    x = toy_embeddings()
    _, _, trace = multi_head_attention_loop(x, x, x, toy_params(), return_trace=True)
    scores = np.stack(trace["scaled_scores"])
    scores.setflags(write=False)  # cached and shared: nobody may change it
    return scores


def check_gain(gain: object) -> float:
    """gain as a float in [0, MAX_GAIN], rounded to 1e-9 (so a slider stepped there and back gives the same value)."""
    number = isinstance(gain, int | float | np.integer | np.floating) and not isinstance(gain, bool)
    if not number or not math.isfinite(gain):
        raise ValueError(f"gain: expected a finite number from 0 to {MAX_GAIN:g}, got {gain!r}")
    if not 0.0 <= gain <= MAX_GAIN:
        raise ValueError(f"gain: expected a number from 0 to {MAX_GAIN:g}, got {gain:g}")
    return round(float(gain), 9)


@functools.cache
def entropy_curves() -> np.ndarray:
    """(h, len(CURVE_GAINS)): each head's mean row entropy (nats) at every gain of CURVE_GAINS (computed once)."""
    curves = np.array([[row_stats(g * s)[0] for g in CURVE_GAINS] for s in toy_scaled_scores()])
    curves.setflags(write=False)
    return curves


def sharpened(gain: float = 0.25) -> dict[str, Any]:
    """The toy heads' weights softmax(gain · scaled scores) and how spread out their rows are.

    Returns gain; weights (h, n, n); entropy (h,) mean row entropy in nats; peak (h,) mean largest weight of a row;
    curves (h, len(CURVE_GAINS)) mean row entropy at every gain of CURVE_GAINS; uniform = ln n, a uniform row's entropy.
    """
    gain = check_gain(gain)
    scores = toy_scaled_scores()  # (h, n, n)
    stats = [row_stats(gain * s) for s in scores]  # per head: (mean entropy, mean largest weight)
    return {
        "gain": gain,
        "weights": softmax(gain * scores, axis=-1),
        "entropy": np.array([e for e, _ in stats]),
        "peak": np.array([p for _, p in stats]),
        "curves": entropy_curves(),
        "uniform": math.log(scores.shape[-1]),
    }


def head_title(i: int, entropy: float) -> str:
    """Title of head i's panel, on two lines: its name and its mean row entropy."""
    return f"head {i}: {HEAD_NAMES[i]}\nentropy {entropy:.2f} nats"


class SharpnessExplorer(Explorer):
    """Slider gain g -> the four toy heads' maps softmax(g · scaled scores), and each head's mean row entropy
    against g (the curves are fixed; a cursor and one dot per head mark the current g)."""

    def __init__(self, gain: float = 1.0) -> None:
        if not 0 <= check_number("gain", gain) <= MAX_GAIN:
            raise ValueError(f"gain: expected a number from 0 to {MAX_GAIN}, got {gain!r}")
        controls = {
            "gain": widgets.FloatSlider(
                value=gain,
                min=0.0,
                max=MAX_GAIN,
                step=STEP,
                description="gain g",
                readout_format=".2f",
                continuous_update=False,
            ),
        }
        self.text = widgets.HTML()
        self.settled = False
        # 588 x 640 CSS pixels: as wide as a laptop's output area (style.LAPTOP_OUTPUT_PX), so nothing is scaled down
        super().__init__(controls, figsize=(7.35, 8.0), dpi=80)
        self.add_readout(self.text)

    def setup(self, fig: Figure) -> None:
        """Four heatmaps in two rows of two (queries on rows, token labels), below them entropy against g."""
        grid = fig.add_gridspec(3, 2, height_ratios=[1, 1, 1.05])
        n = len(TOKENS)
        blank = np.full((n, n), 1 / n)
        self.images = []
        for i in range(len(HEAD_NAMES)):
            row, col = divmod(i, 2)
            ax = fig.add_subplot(grid[row, col])
            im = attention_heatmap(ax, blank, TOKENS, TOKENS, title=head_title(i, 0.0), colorbar=False, annotate=False)
            ax.title.set_fontsize("medium")
            ax.title.set_color(COLOURS[i])
            if col:  # the same queries in every row: named once, on the left
                ax.tick_params(labelleft=False)
                ax.set_ylabel("")
            if row:  # the same keys in every column: named once, on top
                ax.tick_params(labeltop=False)
                ax.set_xlabel("")
            self.images.append(im)
        ax = fig.add_subplot(grid[2, :])
        uniform = math.log(n)
        ax.axhline(uniform, color="k", ls=":", lw=1.2, zorder=4, label=f"uniform: ln {n}")
        for i, curve in enumerate(entropy_curves()):
            ax.plot(CURVE_GAINS, curve, color=COLOURS[i], lw=1.8, label=f"head {i}")  # named in its map's title
        self.cursor = ax.axvline(0.0, color="k", lw=1)
        self.dots = ax.scatter(
            np.zeros(len(HEAD_NAMES)), np.zeros(len(HEAD_NAMES)), c=COLOURS, s=30, zorder=3, clip_on=False
        )
        ax.set_xlim(-0.03, MAX_GAIN + 0.05)  # a margin: the dots at g = 0 and g = 2 are whole
        ax.set_ylim(-0.05, uniform + 0.35)
        ax.set_xlabel("gain g (g = 1: the toy as built)")
        ax.set_ylabel("mean row entropy (nats)")
        ax.set_title("mean row entropy against g", fontsize="medium")
        # short labels, upper right under the uniform line: clear of the steep part (g < 0.9) and the flat tails
        ax.legend(loc="upper right", bbox_to_anchor=(1, 0.84), fontsize=9, frameon=True, framealpha=0.9)
        fig.colorbar(self.images[-1], ax=fig.axes[:4], label="weight (row sums to 1)", shrink=0.8, pad=0.02)
        self.titles = [im.axes.title for im in self.images]
        self.animate(*self.images, *self.titles, self.cursor, self.dots)

    def compute(self, gain: float) -> dict[str, Any]:
        """sharpened at the slider's gain."""
        return sharpened(gain)

    def draw(self, data: dict[str, Any]) -> None:
        """Update the heatmaps, titles, cursor and dots in place."""
        if not self.settled:  # nothing but the animated artists moves: lay the axes out once
            settle_layout(self.figure)
            self.settled = True
        for i, (im, w) in enumerate(zip(self.images, data["weights"], strict=True)):
            im.set_data(w)
            self.titles[i].set_text(head_title(i, data["entropy"][i]))
        self.cursor.set_xdata([data["gain"], data["gain"]])
        self.dots.set_offsets(np.column_stack([np.full(len(data["entropy"]), data["gain"]), data["entropy"]]))
        self.text.value = self.summary(data)

    @staticmethod
    def summary(data: dict[str, Any]) -> str:
        """One HTML line: the gain and each head's mean row entropy and mean largest weight."""
        heads = "; ".join(
            f"head {i} ({HEAD_NAMES[i]}): {e:.2f} nats, largest weight {p:.2f}"
            for i, (e, p) in enumerate(zip(data["entropy"], data["peak"], strict=True))
        )
        return (
            f"softmax(g · Q_i K_iᵀ / √d_k) with g = {data['gain']:.2f}. Mean over the {data['weights'].shape[-1]} "
            f"rows, {heads}. A uniform row has {data['uniform']:.2f} nats, a one-hot row 0."
        )


def sharpness_explorer(gain: float = 1.0) -> SharpnessExplorer:
    """The gain explorer of lesson 4 (gain sets the starting value)."""
    return SharpnessExplorer(gain)
