"""Lesson 10's figures: FLOP parts against n, the crossover, measured against predicted times, weight memory."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from ..cost import attention_memory_bytes
from ..demos import complexity as cx
from .style import figsize

# Linear parts in blues, quadratic parts in reds: the stack reads as two groups, n-bound below n²-bound.
STACK_ORDER = ("projections", "output_projection", "scores", "weighted_sum", "softmax")
COLOURS = {
    "projections": "#2b6ca3",
    "output_projection": "#7fb3dc",
    "scores": "#c0392b",
    "weighted_sum": "#e67e51",
    "softmax": "#f5b7a1",
}
LABELS = {
    "projections": "projections Q, K, V (n·d²)",
    "output_projection": "output projection (n·d²)",
    "scores": "scores Q_i K_iᵀ (n²·d)",
    "weighted_sum": "weighted sum A_i V_i (n²·d)",
    "softmax": "softmax (h·n²)",
}
GB = 1e9
GPU_GB = 16  # the memory of many current GPUs, as a yardstick for the memory figure
TOKEN_TICKS = [16, 64, 256, 1024, 4096, 16384, 65536]


def _log2_tokens_axis(ax: Axes) -> None:
    """Log-2 x axis labelled in tokens (16, 64, ..., 64k) without minor ticks."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(TOKEN_TICKS, [f"{t // 1024}k" if t >= 1024 else str(t) for t in TOKEN_TICKS])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("sequence length n (tokens)")


def _plain_log_ticks(ax: Axes) -> None:
    """Label a log y axis at 1-2-5 steps (0.5, 1, 2, 5, 10, ...) in plain numbers instead of powers like 3×10¹."""
    lo, hi = ax.get_ylim()
    steps = [m * 10.0**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1) for m in (1, 2, 5)]
    ticks = [t for t in steps if lo <= t <= hi]
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_ylim(lo, hi)


def _band(x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Vertices of the polygon between two curves: (2*len(x), 2)."""
    return np.column_stack([np.r_[x, x[::-1]], np.r_[upper, lower[::-1]]])


class FlopPartsPlot:
    """Stacked FLOPs per part (log-log) above each part's share (%), against the same n axis, on fixed axes.

    The axes, ticks, labels and legend never change (the limits are fixed to cover every n and d_model
    the caller will show), so an explorer can render them once and redraw only `self.dynamic` on top.
    """

    def __init__(self, fig: Figure, n_range: tuple[int, int], flops_range: tuple[float, float]) -> None:
        # one above the other on a shared n axis: n* and your n line up, and the figure fits a laptop's output area
        self.ax_abs, self.ax_share = fig.subplots(2, 1, sharex=True)
        self.floor = flops_range[0]
        x, zero = np.array([1.0, 2.0]), np.zeros(2)
        self.abs_bands = [self.ax_abs.fill_between(x, zero + 1, zero + 1, color=COLOURS[p], lw=0) for p in STACK_ORDER]
        self.share_bands = [
            self.ax_share.fill_between(x, zero, zero, color=COLOURS[p], lw=0, label=LABELS[p]) for p in STACK_ORDER
        ]
        (self.lin_line,) = self.ax_abs.plot([], [], "--", color="#0b3d66", lw=1.5, label="n-parts: 8·n·d²")
        (self.quad_line,) = self.ax_abs.plot([], [], "--", color="#7b1d12", lw=1.5, label="n²-parts: 4·n²·d + 5·h·n²")
        self.cross_lines = [
            ax.axvline(1, color="k", lw=1.2, label="crossover n*") for ax in (self.ax_abs, self.ax_share)
        ]
        self.n_lines = [
            ax.axvline(1, color="#6a1b9a", lw=1.2, ls=":", label="your n") for ax in (self.ax_abs, self.ax_share)
        ]
        (self.half_line,) = self.ax_share.plot(n_range, [50, 50], color="0.3", lw=0.8, ls="--")
        box = {"fc": "white", "alpha": 0.85, "lw": 0, "pad": 1.5}
        self.cross_text = self.ax_share.text(1, 52, "", fontsize=9, ha="left", va="bottom", bbox=box)
        self.n_text = self.ax_share.text(1, 3, "", fontsize=9, ha="left", va="bottom", color="#6a1b9a", bbox=box)
        self.size_text = self.ax_abs.text(0.03, 0.96, "", transform=self.ax_abs.transAxes, va="top", fontsize=9)
        _log2_tokens_axis(self.ax_share)  # the shared axis: ticks for both, labelled once, below
        self.ax_share.set_xlim(*n_range)
        self.ax_abs.tick_params(labelbottom=False)
        self.ax_abs.set_yscale("log")
        self.ax_abs.yaxis.set_minor_locator(NullLocator())  # minor log ticks cost render time and say little
        self.ax_abs.set_ylim(*flops_range)
        self.ax_abs.set(ylabel="FLOPs per forward pass", title="FLOPs by part, stacked (log-log)")
        self.ax_share.set(
            ylabel="share of the FLOPs (%)", ylim=(0, 100), title="each part's share: n² parts pass 50% at n*"
        )
        handles = [*self.share_bands[::-1], self.quad_line, self.lin_line, self.cross_lines[0], self.n_lines[0]]
        # below the panels, parts in the first column and lines in the second
        fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=9)
        self.dynamic = [
            *self.abs_bands, *self.share_bands, self.lin_line, self.quad_line, self.half_line,
            *self.cross_lines, *self.n_lines, self.cross_text, self.n_text, self.size_text,
        ]  # fmt: skip

    def update(
        self, ns: np.ndarray, curves: dict[str, np.ndarray], n: int, n_star: float, d_model: int, h: int
    ) -> None:
        """Redraw for FLOP curves over ns (from complexity.flop_curves), current n and crossover n_star."""
        lower, share_lower = np.full(len(ns), self.floor), np.zeros(len(ns))
        for part, band, share in zip(STACK_ORDER, self.abs_bands, self.share_bands, strict=True):
            upper = lower + curves[part]
            band.set_verts([_band(ns, lower, upper)])
            share_upper = share_lower + 100 * curves[part] / curves["total"]
            share.set_verts([_band(ns, share_lower, share_upper)])
            lower, share_lower = upper, share_upper
        self.lin_line.set_data(ns, sum(curves[p] for p in cx.LINEAR_PARTS))
        self.quad_line.set_data(ns, sum(curves[p] for p in cx.QUADRATIC_PARTS))
        for line in self.cross_lines:
            line.set_xdata([n_star, n_star])
        for line in self.n_lines:
            line.set_xdata([n, n])
        right_end = self.ax_share.get_xlim()[1] / 8  # past this, a label goes on the left of its line
        for text, x, y, label in (
            (self.cross_text, n_star, 52, f"n* ≈ {n_star:,.0f}"),
            (self.n_text, n, 3, f"n = {n:,}"),
        ):
            left = x > right_end
            text.set_position((x / 1.1 if left else x * 1.1, y))
            text.set_horizontalalignment("right" if left else "left")
            text.set_text(label)
        self.size_text.set_text(f"d_model = {d_model}, h = {h}")


def _prepare(fig: Figure, size: tuple[float, float]) -> Figure:
    """Give a fresh figure (pyplot's or a bare Figure) the lesson's size and constrained layout."""
    fig.set_size_inches(*size)
    fig.set_layout_engine("constrained")
    return fig


def crossover_figure(fig: Figure, d_models: Sequence[int], d_k: int = 64, slope_d_model: int = 512) -> Figure:
    """Left: n* against d_model (h = d_model/d_k) beside 2·d_model. Right: the local slope of FLOPs in n."""
    _prepare(fig, figsize(4.6))
    ax_n, ax_s = fig.subplots(1, 2)
    d = np.asarray(d_models)
    n_star = [cx.crossover_n(int(di), int(di) // d_k) for di in d]
    ax_n.plot(d, 2 * d, "--", color="0.5", label="2·d_model (scores + weighted sum only)")
    ax_n.plot(d, d, ":", color="0.5", label="d_model (the rule of thumb 'n ≫ d_model')")
    ax_n.plot(d, n_star, "o-", color="#c0392b", label=f"n* with the softmax (h = d_model/{d_k})")
    ax_n.set(xlabel="d_model (features)", ylabel="crossover length n* (tokens)")
    ax_n.set_title("where the n² parts\novertake the n parts")  # two lines: two titles share 7 in
    # below the panel: at 9 pt the three long labels would cover the lines
    ax_n.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16))
    h = slope_d_model // d_k
    ns = np.geomspace(16, 65536, 200)
    star = cx.crossover_n(slope_d_model, h)
    ax_s.plot(ns, cx.local_slope(ns, slope_d_model, h), color="#2b6ca3", label="d log FLOPs / d log n")
    ax_s.axvline(star, color="k", lw=1)
    ax_s.axhline(1.5, color="0.5", lw=0.8, ls="--")
    ax_s.annotate(f"n* ≈ {star:,.0f}:\nslope 1.5", (star, 1.5), xytext=(8, -40), textcoords="offset points", fontsize=9)
    _log2_tokens_axis(ax_s)
    ax_s.set(xlim=(ns[0], ns[-1]), ylabel="local log-log slope (exponent of n)", ylim=(0.95, 2.05))
    ax_s.set_title(f"FLOPs grow like n¹, then like n²\n(d_model={slope_d_model}, h={h})")
    ax_s.legend(loc="upper left")
    return fig


def _timing_panel(
    ax: Axes, x: np.ndarray, seconds: np.ndarray, flops: np.ndarray, rate: float, label: str, fit_from: int
) -> None:
    """Measured ms as markers and FLOPs / rate as a dashed line, both with slopes fitted over x >= fit_from."""
    long = x >= fit_from
    measured = cx.fit_loglog_slope(x[long], seconds[long])
    predicted = cx.fit_loglog_slope(x[long], flops[long])
    (line,) = ax.plot(x, 1e3 * seconds, "o", label=f"{label}: measured, slope {measured:.2f}")
    ax.plot(x, 1e3 * flops / rate, "--", color=line.get_color(), label=f"{label}: FLOPs ÷ R, slope {predicted:.2f}")


def timing_figure(fig: Figure, by_n: cx.Timings, by_d: cx.Timings, fit_from_n: int, fit_from_d: int) -> Figure:
    """Measured forward times beside FLOP predictions (one fitted rate R per panel), log-log, with slopes."""
    _prepare(fig, figsize(5.6))
    ax_n, ax_d = fig.subplots(1, 2)
    rate_n, rate_d = cx.fitted_rate(by_n), cx.fitted_rate(by_d)
    for i, d in enumerate(by_n.d_models):
        _timing_panel(ax_n, by_n.ns, by_n.seconds[i], by_n.flops[i], rate_n, f"d_model={d}", fit_from_n)
    for j, n in enumerate(by_d.ns):
        _timing_panel(ax_d, by_d.d_models, by_d.seconds[:, j], by_d.flops[:, j], rate_d, f"n={n}", fit_from_d)
    panels = (
        (ax_n, by_n.ns, "sequence length n (tokens)", "n", fit_from_n, rate_n),
        (ax_d, by_d.d_models, "d_model (features)", "d_model", fit_from_d, rate_d),
    )
    for ax, ticks, xlabel, name, fit_from, rate in panels:
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_yscale("log")
        _plain_log_ticks(ax)
        ax.set(xlabel=xlabel, ylabel="forward time (ms)")
        ax.set_title(f"time against {name} (h={by_n.h if ax is ax_n else by_d.h})")
        # below its panel, at the series' 9 pt: inside, four entries would cover the markers of a 3.5-in panel
        ax.legend(
            loc="upper center",
            bbox_to_anchor=(0.5, -0.16),
            title=f"slopes fitted for {name} ≥ {fit_from};\nR = {rate / 1e9:.2g} GFLOP/s",
        )
    return fig


def memory_figure(
    fig: Figure, ns: Sequence[int], hs: Sequence[int], mark_n: int = 10_000, dtype: type = np.float32
) -> Figure:
    """Bytes of one layer's attention weights (h·n² numbers) against n for each h, log-log, mark_n marked."""
    _prepare(fig, figsize(4.2))
    ax = fig.subplots()
    ns = np.asarray(ns)
    itemsize = np.dtype(dtype).itemsize
    for h in hs:
        gb = np.array([attention_memory_bytes(int(n), int(n), h, dtype) for n in ns]) / GB
        at = attention_memory_bytes(mark_n, mark_n, h, dtype) / GB
        (line,) = ax.plot(ns, gb, label=f"h={h}: {at:.1f} GB at n={mark_n:,}")
        ax.plot([mark_n], [at], "o", color=line.get_color())
    ax.axvline(mark_n, color="0.5", lw=0.8, ls=":")
    ax.axhline(GPU_GB, color="0.3", lw=0.8, ls="--")
    ax.text(ns[0] * 1.1, GPU_GB * 1.1, f"{GPU_GB} GB: all the memory of many GPUs", fontsize=9, va="bottom")
    _log2_tokens_axis(ax)
    ax.set_xlim(ns[0], ns[-1])
    ax.set_yscale("log")
    ax.set_ylabel(f"attention weights per layer (GB, {itemsize}-byte floats)")
    ax.set_title(f"weights memory = h·n²·{itemsize} bytes per layer, batch 1 (n = {mark_n:,} marked)")
    ax.legend(title="heads", loc="lower right")  # the empty corner: lines rise to the right
    return fig
