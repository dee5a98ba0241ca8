"""Figures for "why divide by sqrt(d_k)": score variance against d_k, score histograms, saturation curves.

The *_axes functions create artists once; the set_* functions update them in place (for the explorer).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes

RAW, SCALED = ("C3", "unscaled  q·k"), ("C0", "scaled  q·k / √d_k")
BINS = 60


def variance_plot(ax: Axes, result: dict[str, np.ndarray]) -> None:
    """Measured Var(q.k) with 2-standard-error bars against d_k, and the closed form d_k, on log-log axes."""
    d = result["d_k"]
    ax.plot(d, result["closed_form"], color="k", lw=1, label="closed form: Var = d_k")
    ax.errorbar(
        d,
        result["measured"],
        yerr=2 * result["stderr"],
        fmt="o",
        ms=4,
        color=RAW[0],
        capsize=3,
        label="measured (± 2 standard errors)",
    )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_title("variance of q·k for unit-variance components")
    ax.set_xlabel("d_k (components per vector)")
    ax.set_ylabel("Var(q·k) (dimensionless)")
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)


def score_histogram_axes(ax: Axes) -> dict[str, Any]:
    """Two empty step histograms (unscaled, scaled scores) on ax; fill them with set_score_histograms."""
    edges = np.linspace(-4, 4, BINS + 1)
    zeros = np.zeros(BINS)
    artists = {
        "raw": ax.stairs(zeros, edges, color=RAW[0], fill=True, alpha=0.35, label=RAW[1]),
        "scaled": ax.stairs(zeros, edges, color=SCALED[0], lw=1.5, label=SCALED[1]),
        "ax": ax,
    }
    ax.set_xlabel("score (dimensionless)")
    ax.set_ylabel("density (per unit of score)")
    ax.set_ylim(0, 0.5)
    ax.legend(loc="upper right", fontsize=7)
    return artists


def set_score_histograms(artists: dict[str, Any], raw: np.ndarray, scaled: np.ndarray, d_k: int) -> None:
    """Histogram raw scores over +-4 sqrt(d_k) and scaled ones over +-4 (both about 4 standard deviations)."""
    width = 4 * math.sqrt(d_k)
    for name, values, half in (("raw", raw, width), ("scaled", scaled, 4.0)):
        edges = np.linspace(-half, half, BINS + 1)
        density, _ = np.histogram(values, bins=edges, density=True)
        artists[name].set_data(density, edges)
    ax = artists["ax"]
    ax.set_xlim(-width, width)
    ax.set_title(f"scores at d_k = {d_k}: std {raw.std():.1f} vs {scaled.std():.2f}")


def row_axes(ax: Axes, max_n: int = 256) -> dict[str, Any]:
    """Two lines for one query's weights sorted largest first, unscaled and scaled, on a fixed log axis.

    Sorted by rank, a saturated row shows at a glance: its first weight is near 1 and the rest near 0.
    The axis runs to max_n whatever n is, so changing n moves only the lines.
    """
    artists = {
        "raw": ax.plot([], [], "o-", ms=2.5, color=RAW[0], lw=1.2, label="softmax(q·k)")[0],
        "scaled": ax.plot([], [], "o-", ms=2.5, color=SCALED[0], lw=1.2, label="softmax(q·k / √d_k)")[0],
        "ax": ax,
    }
    ax.set_title("one query's weights, largest first")
    ax.set_xscale("log")
    ax.set_xlim(0.8, max_n * 1.25)
    ax.set_xlabel("rank of the key (1 = largest weight; log scale)")
    ax.set_ylabel("weight (row sums to 1)")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="upper right", fontsize=7)
    ax.grid(alpha=0.3)
    return artists


def set_row(artists: dict[str, Any], row_raw: np.ndarray, row_scaled: np.ndarray) -> None:
    """Show the weights of one query over its n keys, each sorted from largest to smallest."""
    rank = np.arange(1, len(row_raw) + 1)
    artists["raw"].set_data(rank, np.sort(row_raw)[::-1])
    artists["scaled"].set_data(rank, np.sort(row_scaled)[::-1])


def saturation_axes(ax_entropy: Axes, ax_max: Axes, d_ks: Sequence[int], max_n: int = 256) -> dict[str, Any]:
    """Entropy and max weight of attention rows against d_k (log axis), unscaled and scaled, with a cursor.

    The entropy axis goes up to ln(max_n), the entropy of a uniform row over the most keys shown.
    """
    artists: dict[str, Any] = {"axes": (ax_entropy, ax_max)}
    for ax, kind, title, ylabel in (
        (ax_entropy, "entropy", "row entropy against d_k", "mean entropy per row (nats)"),
        (ax_max, "max", "largest weight against d_k", "mean max weight per row (0 to 1)"),
    ):
        nan = np.full(len(d_ks), np.nan)
        artists[f"{kind}_raw"] = ax.plot(d_ks, nan, "o-", ms=3, color=RAW[0], label=RAW[1])[0]
        artists[f"{kind}_scaled"] = ax.plot(d_ks, nan, "o-", ms=3, color=SCALED[0], label=SCALED[1])[0]
        artists[f"{kind}_uniform"] = ax.axhline(np.nan, color="grey", ls=":", lw=1, label="uniform row")
        artists[f"{kind}_cursor"] = ax.axvline(d_ks[0], color="k", lw=0.8, alpha=0.5)
        ax.set_xscale("log", base=2)
        ax.set_xlim(d_ks[0] / 1.5, d_ks[-1] * 1.5)  # the curves start as NaN, so autoscaling cannot find them
        ax.set_title(title)
        ax.set_xlabel("d_k (log scale)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    ax_max.set_ylim(0, 1.02)
    ax_entropy.set_ylim(0, 1.05 * math.log(max_n))  # fixed, so that a change of n does not move the axis
    ax_entropy.legend(loc="lower left", fontsize=7)
    return artists


def set_saturation(artists: dict[str, Any], curves: dict[str, np.ndarray], d_k: int, n: int) -> None:
    """Fill the curves, move the cursor to d_k and the uniform reference to log n and 1/n."""
    for name in ("entropy_raw", "entropy_scaled", "max_raw", "max_scaled"):
        artists[name].set_ydata(curves[name])
    for kind, ref in (("entropy", math.log(n)), ("max", 1.0 / n)):
        artists[f"{kind}_uniform"].set_ydata([ref, ref])
        artists[f"{kind}_cursor"].set_xdata([d_k, d_k])
