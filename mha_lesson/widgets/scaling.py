"""Lesson 4's "why divide by sqrt(d_k)" explorer; the statistics behind it live in mha_lesson.demos.scaling."""

from __future__ import annotations

import functools
import math
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .._checks import check_positive_int
from ..attention import softmax
from ..demos.scaling import row_stats, score_variance
from ..plots.scaling import (
    RAW,
    SCALED,
    row_axes,
    saturation_axes,
    score_histogram_axes,
    set_row,
    set_saturation,
    set_score_histograms,
    set_variance,
    variance_axes,
)
from ._base import Explorer, check_start, fixed_readout, pin_axis_labels, settle_layout

D_KS = tuple(2**i for i in range(11))  # 1 .. 1024
MAX_N = 256
QUERIES = 64  # rows averaged for the entropy and max-weight curves
READOUT_LINES = 6  # the readout's lines for every d_k, n and seed
PAIRS = 2000  # independent (q, k) pairs: the readout's check of Var(q·k) = d_k


@functools.cache
def independent_variance(seed: int) -> dict[str, np.ndarray]:
    """score_variance over PAIRS independent pairs for every d_k of D_KS (measured, stderr: arrays over D_KS)."""
    return score_variance(D_KS, samples=PAIRS, seed=seed)


def scaling_stats(d_k: int = 64, n: int = 32, seed: int = 0, queries: int = QUERIES) -> dict[str, Any]:
    """Everything the explorer draws for `queries` random queries against n random keys (N(0, 1) components).

    Keys: d_k, n, seed as given; raw (queries, n) = q.k and scaled = raw / sqrt(d_k) at this d_k; row_raw,
    row_scaled (n,) the weights of query 0 over the keys without and with scaling; variance (measured Var of raw);
    curves: for every d_k in D_KS, mean entropy and max weight of the rows and the variance of the scores, unscaled
    and scaled (arrays over D_KS: entropy_raw, entropy_scaled, max_raw, max_scaled, var_raw, var_scaled).
    The first d_k columns of one (queries, 1024) draw are used for every d_k, so curves move smoothly.
    """
    if d_k not in D_KS:
        raise ValueError(f"d_k: expected one of {D_KS}, got {d_k!r}")
    n = check_positive_int("n", n)
    if not 2 <= n <= MAX_N:
        raise ValueError(f"n: expected 2 to {MAX_N} keys, got {n}")
    rng = np.random.default_rng(seed)
    q_all = rng.standard_normal((queries, D_KS[-1]))
    k_all = rng.standard_normal((n, D_KS[-1]))
    names = ("entropy_raw", "entropy_scaled", "max_raw", "max_scaled", "var_raw", "var_scaled")
    curves = {name: np.empty(len(D_KS)) for name in names}
    for i, d in enumerate(D_KS):
        raw_d = q_all[:, :d] @ k_all[:, :d].T  # (queries, n)
        curves["var_raw"][i] = raw_d.var()
        curves["var_scaled"][i] = curves["var_raw"][i] / d  # Var(x / sqrt(d)) = Var(x) / d
        curves["entropy_raw"][i], curves["max_raw"][i] = row_stats(raw_d)
        curves["entropy_scaled"][i], curves["max_scaled"][i] = row_stats(raw_d / math.sqrt(d))
        if d == d_k:
            raw = raw_d
    scaled = raw / math.sqrt(d_k)
    return {
        "d_k": d_k,
        "n": n,
        "seed": seed,
        "raw": raw,
        "scaled": scaled,
        "row_raw": softmax(raw[0]),
        "row_scaled": softmax(scaled[0]),
        "variance": float(raw.var()),
        "d_ks": np.array(D_KS),
        "curves": curves,
    }


class ScalingExplorer(Explorer):
    """Slider d_k (and n, seed) -> the scores (two histograms, variance against d_k) and what the softmax makes
    of them (one attention row, entropy and max weight against d_k), unscaled and scaled."""

    # Every d_k's background (11 of about 1.5 MB at 1x): painting one again took 50-80 ms, the slowest moves.
    backgrounds_kept = len(D_KS)
    warm_controls = ("d_k",)  # the first move to either side of the starting d_k finds its background ready

    def __init__(self, d_k: int = 64, n: int = 32, seed: int = 0) -> None:
        check_start("d_k", d_k, D_KS)
        check_start("n", n, range(2, MAX_N + 1))
        check_start("seed", seed, range(21))
        controls = {
            "d_k": widgets.SelectionSlider(options=D_KS, value=d_k, description="d_k"),
            "n": widgets.IntSlider(value=n, min=2, max=MAX_N, description="n (keys)", continuous_update=False),
            "seed": widgets.IntSlider(value=seed, min=0, max=20, description="seed", continuous_update=False),
        }
        # READOUT_LINES short lines, each broken by hand so that none wraps even beside the file browser at 1024 px,
        # in a readout that tall: no move makes the page jump (three long lines wrapped to a fourth from d_k = 128).
        self.text = fixed_readout(READOUT_LINES)
        self.settled = False
        # 584 x 736 CSS pixels: no wider than a laptop's output area (plots.style.LAPTOP_OUTPUT_PX), so its text at
        # 9 points shows 10 pixels tall there too.
        super().__init__(controls, figsize=(7.3, 9.2), dpi=80)
        self.add_readout(self.text)

    def setup(self, fig: Figure) -> None:
        """Three rows of two panels, read row by row: the scores (histograms unscaled and scaled, then variance against
        d_k), then the softmax rows (one query's weights, entropy and max weight against d_k); one legend above."""
        axes = fig.subplots(3, 2)
        self.hist = score_histogram_axes(axes[0, 0], axes[0, 1])
        self.var = variance_axes(axes[1, 0], D_KS)
        self.row = row_axes(axes[1, 1], MAX_N)
        self.sat = saturation_axes(axes[2, 0], axes[2, 1], D_KS, MAX_N, legend=False)
        for ax in axes.flat:  # titles and axis labels at the tick labels' 9 points: the long y labels fit a panel
            for text in (ax.title, ax.xaxis.label, ax.yaxis.label):
                text.set_fontsize(9)
        # Every panel draws with the same few styles: one legend for all, outside the panels, so it covers no data.
        key = {
            RAW[1]: Line2D([], [], color=RAW[0], marker="o", ms=3),
            SCALED[1]: Line2D([], [], color=SCALED[0], marker="o", ms=3),
            "closed form: Var = d_k unscaled, 1 scaled": self.var["closed_raw"],
            self.hist["scaled_range"].get_label(): self.hist["scaled_range"],
            "uniform row (entropy ln n, max weight 1/n)": self.sat["max_uniform"],
            "current d_k": self.sat["max_cursor"],
        }
        self.legend = fig.legend(
            list(key.values()), list(key), loc="outside upper center", ncols=2, fontsize=9, frameon=False
        )
        # What a move changes. The histograms' axes follow d_k (limits, so ticks, grid, titles and the band of the
        # scaled range): they go into a background per d_k, drawn over the common one (a full draw, about 0.3 s,
        # on the first visit of each d_k would be the slowest move of the explorer).
        ax_raw, ax_scaled = self.hist["axes"]  # (the scaled panel's x axis is always ±4: common background)
        self.follow_key(ax_raw.xaxis, ax_raw.yaxis, ax_scaled.yaxis, self.hist["scaled_range"])
        self.follow_key(self.hist["raw_title"], self.hist["scaled_title"])
        self.animate(self.hist["raw"], self.hist["scaled"])
        self.animate(self.var["var_raw"], self.var["var_scaled"], self.var["var_cursor"])
        self.animate(self.row["raw"], self.row["scaled"])
        self.animate(*(artist for name, artist in self.sat.items() if name != "axes"))

    def background_key(self) -> int:
        """The histograms' axes (see follow_key in setup) follow d_k; the rest of the background is fixed."""
        return self.data["d_k"]

    def compute(self, d_k: int, n: int, seed: int) -> dict[str, Any]:
        """scaling_stats at the controls' values."""
        return scaling_stats(d_k, n, seed)

    def draw(self, data: dict[str, Any]) -> None:
        """Update every artist in place."""
        if not self.settled:  # the axes never move: lay them out once, then skip layout on every move
            # ... with the unscaled histogram's widest tick labels (those of the largest d_k), so that none overlap.
            set_score_histograms(self.hist, data["raw"], data["scaled"], D_KS[-1])
            settle_layout(self.figure)
            pin_axis_labels(*self.hist["axes"])
            self.settled = True
        set_score_histograms(self.hist, data["raw"], data["scaled"], data["d_k"])
        set_variance(self.var, data["curves"], data["d_k"])
        set_row(self.row, data["row_raw"], data["row_scaled"])
        set_saturation(self.sat, data["curves"], data["d_k"], data["n"])
        self.text.value = self.summary(data)

    @staticmethod
    def summary(data: dict[str, Any]) -> str:
        """READOUT_LINES short HTML lines: measured variances against closed forms, an independent check, entropy
        and max weight.

        The shown scores are queries × n products of only queries + n random vectors: at small d_k their variance
        strays from d_k by chance (at d_k = 1 it is mean(q²)·mean(k²) - (mean q · mean k)²), so the readout adds
        the variance over PAIRS independent pairs, the estimate the closed form is about.
        """
        i = D_KS.index(data["d_k"])
        c, d, n = data["curves"], data["d_k"], data["n"]
        pairs = independent_variance(data["seed"])
        lines = [
            f"d_k = {d}: Var(q·k) = {data['variance']:.2f} (closed form: d_k = {d}),",
            f"Var(q·k / √d_k) = {c['var_scaled'][i]:.2f} (closed form: 1), over the {data['raw'].size:,} scores drawn.",
            f"Those scores share {data['raw'].shape[0]} + {n} random vectors, so at small d_k chance moves them;",
            f"{PAIRS:,} independent pairs give Var(q·k) = {pairs['measured'][i]:.2f} ± {pairs['stderr'][i]:.2f}.",
            f"Rows of {n} keys, unscaled: entropy {c['entropy_raw'][i]:.2f} nats, max weight {c['max_raw'][i]:.2f};",
            f"scaled: {c['entropy_scaled'][i]:.2f} nats, {c['max_scaled'][i]:.2f} "
            f"(uniform: ln n = {math.log(n):.2f} nats, 1/n = {1 / n:.3g}).",
        ]
        return "<br>".join(lines)


def scaling_explorer(d_k: int = 64, n: int = 32, seed: int = 0) -> ScalingExplorer:
    """The d_k explorer of lesson 4."""
    return ScalingExplorer(d_k, n, seed)
