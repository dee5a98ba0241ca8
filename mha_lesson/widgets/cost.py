"""Lesson 2's cost explorer: h split heads against h full-width heads, as h, d_model and n move."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import ipywidgets as widgets
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .._checks import check_heads
from ..cost import attention_memory_bytes, flop_count, param_count
from ..plots.cost import DESIGNS, flops_bars, legend_above, log_y, set_flops_bars, set_sweep, sweep_axes
from ._base import Explorer, check_start, divisors

# Widths of well-known models among them (384: MiniLM, 768: BERT-base, 1024: BERT-large); all closed-form.
D_MODELS = (64, 128, 256, 384, 512, 768, 1024)
# Powers of two up to 8192 tokens: every count is a formula, so the cap only keeps the axes readable.
LENGTHS = tuple(2**i for i in range(4, 14))
ATTENTION = ("scores", "weighted_sum")  # the parts the common "same cost as one head" claim is about

# Sweep series drawn in each lower panel, in panel order: FLOPs, parameters, memory.
PANEL_SERIES = (
    ("split_total", "naive_total", "split_attention", "naive_attention"),
    ("split_params", "naive_params"),
    ("memory",),
)
MARGIN = 1.5  # room above the largest and below the smallest value, as a factor on the log axis


def fit_range(values: Iterable[float]) -> tuple[float, float]:
    """A log-axis range around values, snapped out to half-decades so a small move keeps the same axes."""
    values = list(values)
    lo = math.floor(2 * math.log10(min(values) / MARGIN)) / 2
    hi = math.ceil(2 * math.log10(max(values) * MARGIN)) / 2
    return 10.0**lo, 10.0**hi


def axis_ranges(table: dict[str, Any]) -> tuple[tuple[float, float], ...]:
    """The y ranges of the bars and of the three sweep panels, fitted to what `table` draws in them."""
    bars = fit_range(v for f in table["flops"].values() for v in f.values())
    sweeps = (fit_range(v for name in names for v in table["sweep"][name]) for names in PANEL_SERIES)
    return (bars, *sweeps)


def cost_table(d_model: int = 512, h: int = 8, n: int = 128) -> dict[str, Any]:
    """Every number the explorer draws for self-attention over n tokens, from mha_lesson.cost.

    Keys: d_k; flops, params, memory_bytes ({design: value} for designs "one" (one head of width
    d_model), "split" (h heads of d_k = d_model/h) and "naive" (h heads of width d_model)); hs (the
    divisors of d_model) and sweep ({series: list over hs}) for the charts against h.
    """
    d_k = check_heads(d_model, h)  # ValueError naming h unless h divides d_model
    flops = {
        "one": flop_count(n, n, d_model, 1),
        "split": flop_count(n, n, d_model, h),
        "naive": flop_count(n, n, d_model, h, split=False),
    }
    params = {
        "one": param_count(d_model, 1),
        "split": param_count(d_model, h),
        "naive": param_count(d_model, h, split=False),
    }
    # Both designs keep one (n, n) float32 weight map per head: the head width does not enter.
    memory = {"one": attention_memory_bytes(n, n, 1), "split": attention_memory_bytes(n, n, h)}
    memory["naive"] = memory["split"]
    hs = divisors(d_model)
    split_h = [flop_count(n, n, d_model, g) for g in hs]
    naive_h = [flop_count(n, n, d_model, g, split=False) for g in hs]
    sweep = {
        "split_total": [f["total"] for f in split_h],
        "naive_total": [f["total"] for f in naive_h],
        "split_attention": [sum(f[p] for p in ATTENTION) for f in split_h],
        "naive_attention": [sum(f[p] for p in ATTENTION) for f in naive_h],
        "split_params": [param_count(d_model, g) for g in hs],
        "naive_params": [param_count(d_model, g, split=False) for g in hs],
        "memory": [attention_memory_bytes(n, n, g) for g in hs],
    }
    return {
        "d_model": d_model,
        "h": h,
        "n": n,
        "d_k": d_k,
        "flops": flops,
        "params": params,
        "memory_bytes": memory,
        "hs": hs,
        "sweep": sweep,
    }


def summary(table: dict[str, Any]) -> str:
    """One HTML paragraph with the numbers behind the charts."""
    d, h, n, f = table["d_model"], table["h"], table["n"], table["flops"]
    extra = f["split"]["softmax"] - f["one"]["softmax"]
    return (
        f"<b>d_k = {d} / {h} = {table['d_k']}</b> &nbsp;·&nbsp; n = {n} tokens<br>"
        f"Split heads: {f['split']['total']:,} FLOPs = one {d}-wide head ({f['one']['total']:,}) "
        f"+ {extra:,} extra softmax operations ({extra / f['split']['total']:.2%} of the total).<br>"
        f"Naive full-width heads: {f['naive']['total']:,} FLOPs = "
        f"{f['naive']['total'] / f['split']['total']:.2f}× the split design.<br>"
        f"Parameters: split {table['params']['split']:,}, naive {table['params']['naive']:,}. "
        f"Attention weights (float32): {table['memory_bytes']['split']:,} bytes in both designs."
    )


class CostExplorer(Explorer):
    """Sliders h, d_model, n -> FLOPs by part, and FLOPs, parameters and memory against h, for both designs.

    Each panel's log axis fits what it shows (snapped to half-decades), so an 8x difference fills a visible part of
    it; a move that keeps every range only redraws the bars and lines over a cached background.
    """

    backgrounds_kept = 8  # one per set of axis ranges: moving back and forth stays a blit

    def __init__(self, d_model: int = 512, h: int = 8, n: int = 128) -> None:
        check_start("d_model", d_model, D_MODELS)
        check_start("h", h, divisors(d_model))
        check_start("n", n, LENGTHS)
        controls = {
            "d_model": widgets.SelectionSlider(options=D_MODELS, value=d_model, description="d_model"),
            "h": widgets.SelectionSlider(options=divisors(d_model), value=h, description="h"),
            "n": widgets.SelectionSlider(options=LENGTHS, value=n, description="n (tokens)"),
        }
        self.text = widgets.HTML()
        # 584 x 648 CSS pixels: no wider than a laptop's output area (plots.style.LAPTOP_OUTPUT_PX), so its 9-point
        # text shows at 10 CSS pixels there too; the three sweeps take two rows to stay that narrow.
        super().__init__(controls, figsize=(7.3, 8.1), dpi=80)
        self.keep_heads_valid()
        self.add_readout(self.text)
        # The first render laid the axes out; keeping that layout saves re-solving it on every move. The picture is
        # painted again at that layout, and only then are the neighbours' backgrounds painted ahead (warm): painted
        # under the layout engine, each would have moved the axes a fraction of a pixel from the first picture's.
        self.figure.set_layout_engine("none")
        self.warm_controls = ("h", "n")
        self.invalidate_background()
        self.refresh()
        self.warm()

    def setup(self, fig: Figure) -> None:
        """Four panels: bars by part on top, FLOPs against h below, then parameters and memory against h."""
        grid = fig.add_gridspec(3, 2, height_ratios=(1.15, 1, 1))
        self.ax_bars = fig.add_subplot(grid[0, :])
        axes = [fig.add_subplot(grid[1, :]), fig.add_subplot(grid[2, 0]), fig.add_subplot(grid[2, 1])]
        start = cost_table()
        self.ranges = axis_ranges(start)
        self.bars = flops_bars(self.ax_bars, start["flops"], self.ranges[0])
        blue, red = {"color": DESIGNS["split"][1]}, {"color": DESIGNS["naive"][1]}
        dashed = {"linestyle": "--"}
        flops = {
            "split_total": blue,
            "naive_total": red,
            "split_attention": blue | dashed,
            "naive_attention": red | dashed,
        }
        params = {"split_params": blue, "naive_params": red}
        memory = {"memory": {"color": "C4", "label": "both h-head designs"}}
        panels = [  # (title, y label, {series of cost_table()["sweep"]: line style}, y range)
            ("FLOPs against h", "FLOPs", flops, self.ranges[1]),
            ("parameters against h", "learned numbers", params, self.ranges[2]),
            ("attention-weight memory against h", "bytes (float32)", memory, self.ranges[3]),
        ]
        self.sweeps = []
        for ax, (title, ylabel, styles, ylim) in zip(axes, panels, strict=True):
            self.sweeps.append((ax, *sweep_axes(ax, title, ylabel, styles, D_MODELS[-1], ylim)))
        # Legends above the panels, outside the data area: no line can run under them at any control value.
        legend_above(
            axes[0],
            [Line2D([], [], color="k"), Line2D([], [], color="k", linestyle="--")],
            ["total", "scores + weighted sum"],
        )
        legend_above(axes[2], *axes[2].get_legend_handles_labels())
        handles, labels = self.ax_bars.get_legend_handles_labels()
        handles.append(Line2D([], [], color="k", linestyle=":"))
        labels.append("current h")
        fig.legend(handles, labels, loc="outside upper center", ncols=2, fontsize=9)
        # Only these change on a move; everything else (axes, ticks, legends) is painted once and reused.
        self.animate(*(rect for bars in self.bars.values() for rect in bars.patches))
        self.animate(*(artist for _, lines, marker in self.sweeps for artist in (*lines.values(), marker)))
        self.ax_bars.title.set_fontsize(10)
        self.animate(self.ax_bars.title)

    def compute(self, d_model: int, h: int, n: int) -> dict[str, Any]:
        return cost_table(d_model, h, n)

    def background_key(self) -> tuple[tuple[float, float], ...]:
        return self.ranges  # the axes (ticks, grid) are the still background: one per set of ranges

    def draw(self, data: dict[str, Any]) -> None:
        ranges = axis_ranges(data)
        if ranges != self.ranges:
            for ax, ylim in zip((self.ax_bars, *(ax for ax, _, _ in self.sweeps)), ranges, strict=True):
                log_y(ax, ylim)
            self.ranges = ranges
        set_flops_bars(self.ax_bars, self.bars, data["flops"], fit=False)
        # set_text, not set_title: set_title would move the title back to its default place under the blit.
        self.ax_bars.title.set_text(
            f"FLOPs by part: n = {data['n']} tokens, d_model = {data['d_model']}, h = {data['h']}, d_k = {data['d_k']}"
        )
        for _, lines, marker in self.sweeps:
            set_sweep(lines, marker, data["hs"], data["sweep"], data["h"])
        self.text.value = summary(data)


def cost_explorer(d_model: int = 512, h: int = 8, n: int = 128) -> CostExplorer:
    """The lesson 2 explorer, starting at the worked case d_model=512, h=8 (d_k=64)."""
    return CostExplorer(d_model, h, n)
