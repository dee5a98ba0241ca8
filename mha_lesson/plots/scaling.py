"""Figures for "why divide by sqrt(d_k)": score variance against d_k, score histograms, saturation curves.

The *_axes functions create artists once; the set_* functions update them in place (for the explorer).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

RAW, SCALED = ("C3", "unscaled q·k"), ("C0", "scaled q·k / √d_k")
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


HALF_WIDTH = 4.0  # each histogram spans +-4 closed-form standard deviations: +-4 sqrt(d_k) unscaled, +-4 scaled


def histogram_bins(samples: int) -> int:
    """Bins for a histogram of `samples` scores: about sqrt(samples), from 12 to 60, so few scores stay smooth."""
    return int(np.clip(round(math.sqrt(samples)), 12, 60))


def histogram_top(d_k: int) -> float:
    """Fixed top of the scaled histogram's density axis at this d_k (per unit of q·k / sqrt(d_k)).

    A normal density peaks at 0.40; for small d_k the scores are sharper at 0 (at d_k = 1, q·k is the product of
    two normal numbers, whose density is infinite at 0), so the axis leaves them more room. The unscaled
    histogram's axis is this divided by sqrt(d_k): the same picture in units sqrt(d_k) times larger.
    """
    return 0.62 + 1.4 / d_k


def score_histogram_axes(ax_raw: Axes, ax_scaled: Axes) -> dict[str, Any]:
    """Two panels: unscaled scores on an x axis of +-4 sqrt(d_k), scaled ones on +-4; fill with set_score_histograms.

    Each histogram gets the range that suits its own spread, so neither becomes a spike in the other's range;
    the x tick labels (and the titles) carry the comparison, variance d_k against 1, and a band in the unscaled
    panel marks the scaled panel's range, +-4, which the unscaled scores outgrow as d_k grows.
    """
    artists: dict[str, Any] = {"axes": (ax_raw, ax_scaled)}
    for ax, name, (colour, _), xlabel in (
        (ax_raw, "raw", RAW, "q·k (dimensionless; axis ±4√d_k)"),
        (ax_scaled, "scaled", SCALED, "q·k / √d_k (dimensionless; axis ±4)"),
    ):
        edges = np.linspace(-HALF_WIDTH, HALF_WIDTH, BINS + 1)
        artists[name] = ax.stairs(np.zeros(BINS), edges, color=colour, fill=True, alpha=0.6, lw=0)
        # Two lines, set by set_score_histograms; they follow d_k only, like the axis limits.
        artists[f"{name}_title"] = ax.set_title(" \n ", fontsize=9)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("density (per unit of score)")
        ax.set_xlim(-HALF_WIDTH, HALF_WIDTH)
        ax.set_ylim(0, histogram_top(1))
        ax.grid(alpha=0.3)
        ax.set_axisbelow(True)
    # The scaled panel's whole range, drawn in the unscaled one: a narrower strip of it as d_k grows.
    artists["scaled_range"] = ax_raw.axvspan(
        -HALF_WIDTH, HALF_WIDTH, color=SCALED[0], alpha=0.15, lw=0, zorder=0.5, label="±4: the scaled panel's range"
    )
    return artists


def set_score_histograms(artists: dict[str, Any], raw: np.ndarray, scaled: np.ndarray, d_k: int) -> None:
    """Histogram raw scores over +-4 sqrt(d_k) and scaled ones over +-4 (both 4 closed-form standard deviations).

    Densities are counts / (all scores * bin width): scores beyond the axis count in the total, not in a bin.
    """
    bins = histogram_bins(raw.size)
    ax_raw, ax_scaled = artists["axes"]
    for name, values, unit, ax in (("raw", raw, math.sqrt(d_k), ax_raw), ("scaled", scaled, 1.0, ax_scaled)):
        half = HALF_WIDTH * unit
        edges = np.linspace(-half, half, bins + 1)
        counts, _ = np.histogram(values, bins=edges)
        artists[name].set_data(counts / (values.size * (edges[1] - edges[0])), edges)
        ax.set_xlim(-half, half)
        ax.set_ylim(0, histogram_top(d_k) / unit)
    artists["raw_title"].set_text(f"unscaled scores q·k at d_k = {d_k}\nclosed form: Var = d_k = {d_k}")
    artists["scaled_title"].set_text(f"scaled scores q·k / √d_k at d_k = {d_k}\nclosed form: Var = 1")


def variance_axes(ax: Axes, d_ks: Sequence[int]) -> dict[str, Any]:
    """Measured variance of the scores against d_k, unscaled and scaled, with the closed forms d_k and 1.

    Fixed log-log axes (from 1/32, for the noisy variance of a few keys at d_k = 1, to 4096), and a cursor.
    """
    d_ks = np.asarray(d_ks)
    nan = np.full(len(d_ks), np.nan)
    closed = {"color": "k", "ls": "--", "lw": 1}
    artists: dict[str, Any] = {
        "closed_raw": ax.plot(d_ks, d_ks, **closed, label="closed form: Var = d_k")[0],
        "closed_scaled": ax.plot(d_ks, np.ones(len(d_ks)), **closed, label="closed form: Var = 1")[0],
        "var_raw": ax.plot(d_ks, nan, "o-", ms=3, color=RAW[0], label=RAW[1])[0],
        "var_scaled": ax.plot(d_ks, nan, "o-", ms=3, color=SCALED[0], label=SCALED[1])[0],
        "var_cursor": ax.axvline(d_ks[0], color="k", lw=0.8, alpha=0.5),
        "ax": ax,
    }
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlim(d_ks[0] / 1.5, d_ks[-1] * 1.5)
    ax.set_ylim(1 / 32, 4096)
    ax.yaxis.set_major_locator(FixedLocator([2.0**k for k in range(-4, 13, 4)]))
    ax.yaxis.set_minor_locator(FixedLocator([2.0**k for k in range(-5, 13)]))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}" if v >= 1 else f"1/{1 / v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_title("variance of the scores against d_k", fontsize=9)
    ax.set_xlabel("d_k (log scale)")
    ax.set_ylabel("Var (dimensionless; log scale)")
    ax.grid(alpha=0.3)
    return artists


def set_variance(artists: dict[str, Any], curves: dict[str, np.ndarray], d_k: int) -> None:
    """Fill the measured variances (curves "var_raw", "var_scaled") and move the cursor to d_k."""
    artists["var_raw"].set_ydata(curves["var_raw"])
    artists["var_scaled"].set_ydata(curves["var_scaled"])
    artists["var_cursor"].set_xdata([d_k, d_k])


def row_axes(ax: Axes, max_n: int = 256) -> dict[str, Any]:
    """Two lines for one query's weights sorted largest first, unscaled and scaled, on a fixed log axis.

    Sorted by rank, a saturated row shows at a glance: its first weight is near 1 and the rest near 0.
    The axis runs to max_n whatever n is, so changing n moves only the lines. The lines are labelled for a
    legend; the explorer shows one legend for all its panels.
    """
    artists = {
        "raw": ax.plot([], [], "o-", ms=2.5, color=RAW[0], lw=1.2, label="softmax(q·k)")[0],
        "scaled": ax.plot([], [], "o-", ms=2.5, color=SCALED[0], lw=1.2, label="softmax(q·k / √d_k)")[0],
        "ax": ax,
    }
    ax.set_title("one query's weights, largest first", fontsize=9)
    ax.set_xscale("log")
    ax.set_xlim(0.8, max_n * 1.25)
    ax.set_xlabel("rank of the key (log scale)\n1 = largest weight")  # two lines: a half-width panel
    ax.set_ylabel("weight (row sums to 1)")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    return artists


def set_row(artists: dict[str, Any], row_raw: np.ndarray, row_scaled: np.ndarray) -> None:
    """Show the weights of one query over its n keys, each sorted from largest to smallest."""
    rank = np.arange(1, len(row_raw) + 1)
    artists["raw"].set_data(rank, np.sort(row_raw)[::-1])
    artists["scaled"].set_data(rank, np.sort(row_scaled)[::-1])


def saturation_axes(
    ax_entropy: Axes, ax_max: Axes, d_ks: Sequence[int], max_n: int = 256, legend: bool = True
) -> dict[str, Any]:
    """Entropy and max weight of attention rows against d_k (log axis), unscaled and scaled, with a cursor.

    The entropy axis goes up to ln(max_n), the entropy of a uniform row over the most keys shown. With legend,
    each panel gets its own legend, above the axes where no curve can run under it (the explorer passes False
    and shows one legend for all its panels).
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
        ax.set_title(title, pad=22 if legend else None)  # room for the legend between title and axes
        ax.set_xlabel("d_k (log scale)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if legend:
            ax.legend(
                loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=3, fontsize=8, frameon=False, borderaxespad=0.1
            )
    ax_max.set_ylim(0, 1.02)
    ax_entropy.set_ylim(0, 1.05 * math.log(max_n))  # fixed, so that a change of n does not move the axis
    return artists


def set_saturation(artists: dict[str, Any], curves: dict[str, np.ndarray], d_k: int, n: int) -> None:
    """Fill the curves, move the cursor to d_k and the uniform reference to log n and 1/n."""
    for name in ("entropy_raw", "entropy_scaled", "max_raw", "max_scaled"):
        artists[name].set_ydata(curves[name])
    for kind, ref in (("entropy", math.log(n)), ("max", 1.0 / n)):
        artists[f"{kind}_uniform"].set_ydata([ref, ref])
        artists[f"{kind}_cursor"].set_xdata([d_k, d_k])
