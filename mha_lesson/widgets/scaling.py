"""Lesson 3's "why divide by sqrt(d_k)" explorer, and the numbers behind it.

For q and k with d_k independent components of mean 0 and variance 1, q.k is a sum of d_k products of
variance 1 each, so Var(q.k) = d_k: scores spread out as sqrt(d_k). Fed unscaled to a softmax, wide scores
put almost all of a row's weight on its largest score (the softmax saturates, and its gradient,
diag(p) - p p^T, goes to 0). Dividing by sqrt(d_k) brings the variance back to 1 for every d_k.
"""

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
from ._base import Explorer
from .attention_maps import Blitter, settle_layout

D_KS = tuple(2**i for i in range(11))  # 1 .. 1024
MAX_N = 256
QUERIES = 64  # rows averaged for the entropy and max-weight curves


def score_variance(d_ks: tuple[int, ...] | list[int], samples: int = 2000, seed: int = 0) -> dict[str, np.ndarray]:
    """Measured Var(q.k) over `samples` independent pairs with N(0, 1) components, for each d_k.

    Returns arrays over d_ks: d_k, measured (sample variance), stderr (its standard error, estimated
    from the samples' fourth moment) and closed_form (= d_k, the claim being checked).
    """
    samples = check_positive_int("samples", samples)
    if samples < 4:
        raise ValueError(f"samples: expected at least 4 to estimate a standard error, got {samples}")
    d_ks = [check_positive_int("d_k", d) for d in d_ks]
    rng = np.random.default_rng(seed)
    measured, stderr = [], []
    for d_k in d_ks:
        q = rng.standard_normal((samples, d_k))
        k = rng.standard_normal((samples, d_k))
        s = np.einsum("sd,sd->s", q, k)  # (samples,) one dot product per independent pair
        var = s.var(ddof=1)
        m4 = np.mean((s - s.mean()) ** 4)
        # Standard error of a sample variance: sqrt((m4 - (N-3)/(N-1) var^2) / N).
        stderr.append(math.sqrt(max(m4 - (samples - 3) / (samples - 1) * var**2, 0.0) / samples))
        measured.append(var)
    d = np.array(d_ks, dtype=float)
    return {"d_k": d, "measured": np.array(measured), "stderr": np.array(stderr), "closed_form": d.copy()}


def row_stats(scores: np.ndarray) -> tuple[float, float]:
    """Mean entropy (nats) and mean max weight of softmax rows of scores (m, n)."""
    p = softmax(scores, axis=-1)
    # 0 * log 0 counts as 0: where p underflows to 0 the term vanishes instead of giving NaN.
    entropy = -np.sum(p * np.log(np.where(p > 0, p, 1.0)), axis=-1)
    return float(entropy.mean()), float(p.max(axis=-1).mean())


def jacobian_norm(scores: np.ndarray) -> float:
    """Mean Frobenius norm of the softmax's Jacobian diag(p) - p p^T over the rows of scores (m, n).

    It measures how much the weights move when the scores move: 0 for a one-hot (saturated) row.
    """
    p = softmax(scores, axis=-1)  # (m, n)
    jac = np.einsum("mi,ij->mij", p, np.eye(p.shape[-1])) - p[:, :, None] * p[:, None, :]  # (m, n, n)
    return float(np.linalg.norm(jac, axis=(1, 2)).mean())


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
        # What a move changes; the rest (axis limits included) depends only on d_k and n: see Blitter.
        self.animated = [self.hist["raw"], self.hist["scaled"], axes[0].title, self.row["raw"], self.row["scaled"]]
        self.animated += [artist for name, artist in self.sat.items() if name != "axes"]
        for artist in self.animated:
            artist.set_animated(True)
        self.blitter = Blitter(self.canvas, size=len(D_KS))

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

    def render_png(self) -> bytes:
        """Blit: the background holds the histogram's axis limits, which follow d_k (the other axes are fixed)."""
        return self.blitter.render(self.data["d_k"], self.animated)

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
