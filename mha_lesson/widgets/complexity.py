"""Lesson 10's explorer: where the n² parts of attention overtake the n parts, for any n, d_model and h."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from .. import cost
from ..demos import complexity as cx
from ..plots.complexity import FlopPartsPlot
from ._base import Explorer, check_start, divisors

# n on a log scale: powers of two and the points halfway between them (16, 24, 32, 48, ...).
N_OPTIONS = sorted({int(b * 2**k) for k in range(4, 17) for b in (1, 1.5)} - {98304})
D_MODEL_OPTIONS = [64, 128, 256, 384, 512, 768, 1024, 2048, 4096]
NS = np.unique(np.geomspace(N_OPTIONS[0], N_OPTIONS[-1], 120).astype(int))  # the curves' x grid
# A fixed FLOP axis, from below the smallest total (shortest n, narrowest d_model, one head) to above the largest
# (longest n, widest d_model, one feature per head): the axes never change and moving d_model moves the curves.
FLOPS_RANGE = (
    cost.flop_count(N_OPTIONS[0], N_OPTIONS[0], D_MODEL_OPTIONS[0], 1)["total"] / 20,
    cost.flop_count(N_OPTIONS[-1], N_OPTIONS[-1], D_MODEL_OPTIONS[-1], D_MODEL_OPTIONS[-1])["total"] * 3,
)


def complexity_data(n: int, d_model: int, h: int) -> dict[str, object]:
    """FLOP curves over NS, the crossover n*, and every part's FLOPs and share at the current n."""
    curves = cx.flop_curves(NS, d_model, h)  # raises ValueError when h does not divide d_model
    here = cx.flop_curves([n], d_model, h)
    parts = {p: int(v[0]) for p, v in here.items()}
    quad = sum(parts[p] for p in cx.QUADRATIC_PARTS)
    return {
        "ns": NS,
        "curves": curves,
        "n": n,
        "d_model": d_model,
        "h": h,
        "n_star": cx.crossover_n(d_model, h),
        "parts": parts,
        "quadratic_share": quad / parts["total"],
    }


class ComplexityExplorer(Explorer):
    """Sliders n, d_model, h -> stacked FLOP parts against n (log-log) above their shares, crossover marked."""

    def __init__(self, n: int = 4096, d_model: int = 512, h: int = 8) -> None:
        check_start("n", n, N_OPTIONS)
        check_start("d_model", d_model, D_MODEL_OPTIONS)
        check_start("h", h, divisors(d_model))
        controls = {
            "n": widgets.SelectionSlider(options=N_OPTIONS, value=n, description="n"),
            "d_model": widgets.SelectionSlider(options=D_MODEL_OPTIONS, value=d_model, description="d_model"),
            "h": widgets.SelectionSlider(options=divisors(d_model), value=h, description="h"),
        }
        self.readout = widgets.HTML()
        # 588 x 560 CSS pixels: as wide as a laptop's output area (style.LAPTOP_OUTPUT_PX), so nothing is scaled down
        super().__init__(controls, figsize=(7.35, 7.0), dpi=80)
        self.add_readout(self.readout)
        self.keep_heads_valid()
        # The first render laid the axes out; keeping that layout saves re-solving it on every move.
        self.figure.set_layout_engine("none")

    def setup(self, fig: Figure) -> None:
        self.plot = FlopPartsPlot(fig, (N_OPTIONS[0], N_OPTIONS[-1]), FLOPS_RANGE)
        self.animate(*self.plot.dynamic)  # only these move: axes, ticks and legend are painted once

    def compute(self, n: int, d_model: int, h: int) -> dict[str, object]:
        return complexity_data(n, d_model, h)

    def draw(self, data: dict[str, object]) -> None:
        self.plot.update(data["ns"], data["curves"], data["n"], data["n_star"], data["d_model"], data["h"])
        share, n, n_star = data["quadratic_share"], data["n"], data["n_star"]
        side = "past" if n > n_star else "below"
        self.readout.value = (
            f"n = {n:,}: {data['parts']['total']:,} FLOPs, of which the n²-parts are {100 * share:.1f}%. "
            f"Crossover n* = 8·d²/(4·d + 5·h) = {n_star:,.1f} tokens ({n_star / data['d_model']:.2f}·d_model); "
            f"n is {side} it."
        )


def complexity_explorer(n: int = 4096, d_model: int = 512, h: int = 8) -> ComplexityExplorer:
    """The lesson's explorer, ready to display."""
    return ComplexityExplorer(n, d_model, h)
