"""Lesson 3's "why divide by sqrt(d_k)" explorer; the statistics behind it live in mha_lesson.scaling."""

from __future__ import annotations

import math
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from .._checks import check_positive_int
from ..attention import softmax
from ..plots.scaling import (
    row_axes,
    saturation_axes,
    score_histogram_axes,
    set_row,
    set_saturation,
    set_score_histograms,
)
from ..scaling import row_stats
from ._base import Explorer, settle_layout

D_KS = tuple(2**i for i in range(11))  # 1 .. 1024
MAX_N = 256
QUERIES = 64  # rows averaged for the entropy and max-weight curves


def scaling_stats(d_k: int = 64, n: int = 32, seed: int = 0, queries: int = QUERIES) -> dict[str, Any]:
    """Everything the explorer draws for `queries` random queries against n random keys (N(0, 1) components).

    Keys: raw (queries, n) = q.k and scaled = raw / sqrt(d_k) at this d_k; row_raw, row_scaled (n,) the
    weights of query 0 over the keys without and with scaling; variance (measured Var of raw); curves: for every d_k in
    D_KS, mean entropy and max weight of the rows, unscaled and scaled (arrays over D_KS).
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
    curves = {name: np.empty(len(D_KS)) for name in ("entropy_raw", "entropy_scaled", "max_raw", "max_scaled")}
    for i, d in enumerate(D_KS):
        raw_d = q_all[:, :d] @ k_all[:, :d].T  # (queries, n)
        curves["entropy_raw"][i], curves["max_raw"][i] = row_stats(raw_d)
        curves["entropy_scaled"][i], curves["max_scaled"][i] = row_stats(raw_d / math.sqrt(d))
        if d == d_k:
            raw = raw_d
    scaled = raw / math.sqrt(d_k)
    return {
        "d_k": d_k,
        "n": n,
        "raw": raw,
        "scaled": scaled,
        "row_raw": softmax(raw[0]),
        "row_scaled": softmax(scaled[0]),
        "variance": float(raw.var()),
        "d_ks": np.array(D_KS),
        "curves": curves,
    }


class ScalingExplorer(Explorer):
    """Slider d_k (and n, seed) -> score histograms, one attention row, entropy and max weight against d_k."""

    backgrounds_kept = len(D_KS)  # one per d_k

    def __init__(self, d_k: int = 64, n: int = 32, seed: int = 0) -> None:
        controls = {
            "d_k": widgets.SelectionSlider(options=D_KS, value=d_k, description="d_k"),
            "n": widgets.IntSlider(value=n, min=2, max=MAX_N, description="n (keys)", continuous_update=False),
            "seed": widgets.IntSlider(value=seed, min=0, max=20, description="seed", continuous_update=False),
        }
        self.text = widgets.HTML()
        self.settled = False
        super().__init__(controls, figsize=(12, 3.4), dpi=80)
        self.add_readout(self.text)

    def setup(self, fig: Figure) -> None:
        """Four panels: score histograms, one row's weights, entropy and max weight against d_k."""
        axes = fig.subplots(1, 4)
        self.hist = score_histogram_axes(axes[0])
        self.row = row_axes(axes[1], MAX_N)
        self.sat = saturation_axes(axes[2], axes[3], D_KS, MAX_N)
        # What a move changes; the rest (axis limits included) depends only on d_k: see background_key.
        self.animate(self.hist["raw"], self.hist["scaled"], axes[0].title, self.row["raw"], self.row["scaled"])
        self.animate(*(artist for name, artist in self.sat.items() if name != "axes"))

    def compute(self, d_k: int, n: int, seed: int) -> dict[str, Any]:
        """scaling_stats at the controls' values."""
        return scaling_stats(d_k, n, seed)

    def draw(self, data: dict[str, Any]) -> None:
        """Update every artist in place."""
        set_score_histograms(self.hist, data["raw"], data["scaled"], data["d_k"])
        set_row(self.row, data["row_raw"], data["row_scaled"])
        set_saturation(self.sat, data["curves"], data["d_k"], data["n"])
        self.text.value = self.summary(data)
        if not self.settled:  # the axes never change: lay them out once, then skip layout on every move
            settle_layout(self.figure)
            self.settled = True

    def background_key(self) -> int:
        """The background holds the histogram's axis limits, which follow d_k (the other axes are fixed)."""
        return self.data["d_k"]

    @staticmethod
    def summary(data: dict[str, Any]) -> str:
        """One HTML line: the measured variance against d_k, and the rows' entropy and max weight."""
        i = D_KS.index(data["d_k"])
        c = data["curves"]
        return (
            f"d_k = {data['d_k']}: measured Var(q·k) = {data['variance']:.1f} (closed form: d_k = {data['d_k']}). "
            f"Rows of {data['n']} keys, unscaled: entropy {c['entropy_raw'][i]:.2f} nats, max weight "
            f"{c['max_raw'][i]:.2f}; scaled by 1/√d_k: entropy {c['entropy_scaled'][i]:.2f} nats, max weight "
            f"{c['max_scaled'][i]:.2f} (uniform: {math.log(data['n']):.2f} nats, {1 / data['n']:.2f})."
        )


def scaling_explorer(d_k: int = 64, n: int = 32, seed: int = 0) -> ScalingExplorer:
    """The d_k explorer of lesson 3."""
    return ScalingExplorer(d_k, n, seed)
