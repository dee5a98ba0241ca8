"""Lesson 6's ablation explorer: switch one head off (zero its block of W^O) and see how the output moves.

Because concat(heads) W^O = sum_i head_i W^O_i, switching head i off changes the output by exactly
head_i W^O_i: the explorer shows that difference and, for every head, how large it is.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.container import BarContainer
from matplotlib.figure import Figure

from ..demos.toy import HEAD_NAMES, TOKENS, toy_embeddings, toy_params
from ..multihead import multi_head_attention, multi_head_attention_loop
from ..projections import init_params
from ._base import Explorer, check_start, divisors, fixed_margins, fixed_readout
from .attention_maps import SOURCES

D_MODEL, N = 64, 11  # random inputs: the toy's sizes, so both sources fill the same picture
HEADS = tuple(d for d in divisors(D_MODEL) if d <= 16)
NONE = -1  # value of the "switch off" control when every head is on
READOUT_LINES = 3  # describe's lines for every choice; the readout is that tall, so no choice makes the page jump
# 584 x 520 CSS px at dpi 80: as wide as a laptop's output area beside the file browser (588 px), so nothing scales its
# 9-point text below 10 px; the same size for every choice, so no move makes the page jump.
FIGSIZE = (7.3, 6.5)


def ablation(source: str = "toy sentence", h: int = 4, seed: int = 0, off: int = NONE) -> dict[str, Any]:
    """Output of self-attention with every head on, and with each head switched off in turn.

    Returns out (n, d_model); changes (h,) = ||out - out without head i|| / ||out|| (Frobenius);
    delta (n, d_model) = out - out without head `off` (zeros when off = -1); contribution = head_off W^O_off
    from the loop's trace (equal to delta); tokens (None for random inputs); names of the heads; bar_labels
    (short names for the bars: the toy heads' roles, or their numbers).
    """
    if source not in SOURCES:
        raise ValueError(f"source: expected one of {SOURCES}, got {source!r}")
    if source == "toy sentence":
        x, params, tokens = toy_embeddings(), toy_params(), TOKENS
        names = tuple(f"head {i} ({name})" for i, name in enumerate(HEAD_NAMES))
        bar_labels = tuple(f"{i}\n{name}" for i, name in enumerate(HEAD_NAMES))  # two lines: the bars are wide
    else:
        if h not in HEADS:
            raise ValueError(f"h: expected one of {HEADS} (divisors of d_model={D_MODEL}), got {h!r}")
        x = np.random.default_rng(seed).standard_normal((N, D_MODEL))  # (n, d_model)
        params, tokens, names = init_params(D_MODEL, h, seed=seed), None, tuple(f"head {i}" for i in range(h))
        bar_labels = tuple(str(i) for i in range(h))  # 16 numbers fit across the full-width bars
    if isinstance(off, bool) or not isinstance(off, (int, np.integer)) or not NONE <= off < params.h:
        raise ValueError(f"off: expected -1 (none) or a head index below h={params.h}, got {off!r}")
    out, _, trace = multi_head_attention_loop(x, x, x, params, return_trace=True)
    norm = np.linalg.norm(out)
    without = [multi_head_attention(x, x, x, params.without_heads([i]), need_weights=False)[0] for i in range(params.h)]
    changes = np.array([np.linalg.norm(out - o) / norm for o in without])
    if off == NONE:
        delta = contribution = np.zeros_like(out)
    else:
        delta = out - without[off]
        contribution = trace["head_i"][off] @ params.w_o_head(off)  # (n, d_k) @ (d_k, d_model)
    return {
        "source": source,
        "out": out,
        "changes": changes,
        "off": off,
        "delta": delta,
        "contribution": contribution,
        "tokens": tokens,
        "names": names,
        "bar_labels": bar_labels,
        "h": params.h,
    }


def describe(data: dict[str, Any]) -> str:
    """READOUT_LINES short lines (joined by <br>) about the selected ablation, as many for every choice."""
    if data["off"] == NONE:
        biggest = int(np.argmax(data["changes"]))
        lines = (
            f"All {data['h']} heads on: nothing is switched off, so Δ = 0.",
            "Pick a head to switch off; the bars show the change each choice makes.",
            f"Largest: {data['names'][biggest]}, {data['changes'][biggest]:.0%} of the output's size (‖Δ‖/‖out‖).",
        )
    else:
        i = data["off"]
        gap = float(np.abs(data["delta"] - data["contribution"]).max())
        lines = (
            f"Switched off: {data['names'][i]}.",
            f"The output changes by {data['changes'][i]:.0%} of its size (‖Δ‖/‖out‖).",
            f"Δ (the map) equals head<sub>{i}</sub> W<sup>O</sup><sub>{i}</sub> from the trace: largest difference "
            f"{gap:.1e}.",
        )
    return "<br>".join(lines)


class AblationExplorer(Explorer):
    """Controls source, h, seed and the head to switch off -> bars of every head's effect, and the change."""

    backgrounds_kept = 4

    def __init__(self, source: str = "toy sentence", h: int = 4, seed: int = 0, off: int = 0) -> None:
        check_start("source", source, SOURCES)
        check_start("h", h, HEADS)
        check_start("seed", seed, range(21))
        start_h = 4 if source == "toy sentence" else h
        check_start("off", off, self.off_options(start_h))
        controls = {
            "source": widgets.ToggleButtons(options=SOURCES, value=source, description="input"),
            "h": widgets.SelectionSlider(options=HEADS, value=h, description="h"),
            "seed": widgets.IntSlider(value=seed, min=0, max=20, description="seed", continuous_update=False),
            "off": widgets.ToggleButtons(options=self.off_options(start_h), value=off, description="switch off"),
        }
        controls["off"].style.button_width = "4.5em"
        # READOUT_LINES short lines for every choice (they wrapped to a second line for a head, not for "none", and
        # the page jumped 28 px), and room for them.
        self.text = fixed_readout(READOUT_LINES)
        self.layout_key: tuple | None = None
        super().__init__(controls, figsize=FIGSIZE, dpi=80)
        self.add_readout(self.text)
        self.before_redraw(self.update_off_options, "source", "h")  # offer only existing heads to switch off
        self.update_off_options()

    @staticmethod
    def off_options(h: int) -> list[tuple[str, int]]:
        """(label, value) pairs: none, then every head."""
        return [("none", NONE)] + [(str(i), i) for i in range(h)]

    def update_off_options(self, change: dict | None = None) -> None:
        """Offer only existing heads (a toy head's button tells its role on hover); pin what the toy fixes: h at
        its 4 heads, seed hidden (the toy has none). Random input gets the learner's h and seed back."""
        toy = self.controls["source"].value == "toy sentence"
        if toy:
            self.pin("fixed by the toy sentence", h=toy_params().h, seed=None)
        else:
            self.unpin("h", "seed")
        h = self.controls["h"].value
        off = self.controls["off"]
        if len(off.options) != h + 1:
            current = off.value
            with self.hold():
                off.options = self.off_options(h)
                off.value = current if current < h else NONE
        off.tooltips = ["every head on", *(HEAD_NAMES if toy else (f"head {i}" for i in range(h)))]

    def setup(self, fig: Figure) -> None:
        """Bars of every head's effect on top, across the width; below them the selected change, its colour bar under
        it."""
        # Fixed margins and gaps (inches): constrained layout would measure every label again at each change.
        # gap: the bars' two-line names and x-label, and the map's title; bottom: the map's x-label, then the colour bar
        bars_h, map_h, gap = 1.9, 2.1, 0.95
        fixed_margins(fig, left=0.75, right=0.15, top=0.35, bottom=1.2, hspace=gap / ((bars_h + map_h) / 2))
        self.ax_bars, self.ax_delta = fig.subplots(2, 1, height_ratios=(bars_h, map_h))
        # Changes in units of the largest |output| entry: one fixed scale for every head, input and seed, so
        # bigger changes look bigger and the colour bar stays in the cached background.
        self.im = self.ax_delta.imshow(
            np.zeros((N, D_MODEL)), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest"
        )
        # Half the width, centred under the map's x-label: five short ticks, its label underneath.
        bar = self.ax_delta.inset_axes((0.25, -0.3, 0.5, 0.055))
        fig.colorbar(self.im, cax=bar, orientation="horizontal", label="Δ / max |output|", ticks=(-1, -0.5, 0, 0.5, 1))
        self.ax_delta.set_xlabel("output feature (column of out)")
        self.ax_delta.set_ylabel("token (query position)")
        self.ax_bars.set_title("effect of switching one head off")
        self.ax_bars.set_xlabel("head switched off")
        self.ax_bars.set_ylabel("‖Δ‖ / ‖out‖ (ratio)")  # as the readout writes it
        self.bars: BarContainer | None = None  # made in draw: one bar per head
        self.animate(self.im, self.ax_delta.title)
        # The bars' labels and y range, and the rows' labels, follow h, the input and the largest change: drawn
        # per background key over the common background (a full draw on each new h cost about 0.2 s).
        self.follow_key(self.ax_bars.xaxis, self.ax_bars.yaxis, self.ax_delta.yaxis)

    def compute(self, source: str, h: int, seed: int, off: int) -> dict[str, Any]:
        """ablation at the controls' values."""
        return ablation(source, h, seed, off)

    def draw(self, data: dict[str, Any]) -> None:
        """Update bars (rebuilt when h changes) and the change heatmap."""
        h, off = data["h"], data["off"]
        key = (h, data["tokens"] is None)
        if key != self.layout_key:  # another number of heads, or names instead of numbers under the bars
            if self.bars is not None:
                self.bars.remove()
            self.bars = self.ax_bars.bar(range(h), data["changes"], color="C0")
            self.ax_bars.set_xticks(range(h), data["bar_labels"])
            self.ax_bars.set_xlim(-0.6, h - 0.4)
            self.moving = [self.im, self.ax_delta.title]  # not the old bars
            self.animate(*self.bars)
        for i, bar in enumerate(self.bars):
            bar.set_height(data["changes"][i])
            bar.set_color("C3" if i == off else "C0")
        self.ax_bars.set_ylim(0, max(1.0, 1.1 * float(data["changes"].max())))
        self.im.set_data(data["delta"] / (float(np.abs(data["out"]).max()) or 1.0))
        tokens = data["tokens"]
        if tokens is not None:
            self.ax_delta.set_yticks(range(len(tokens)), tokens)
        else:
            self.ax_delta.set_yticks(range(0, N, 2), [str(i) for i in range(0, N, 2)])
        what = "every head on: no change" if off == NONE else f"Δ = out − out without {data['names'][off]}"
        self.ax_delta.set_title(what)
        self.text.value = describe(data)
        self.layout_key = key

    def background_key(self) -> tuple:
        """The background changes with the bars' number and y-limit and the row labels."""
        return (self.layout_key, self.ax_bars.get_ylim())


def ablation_explorer(**values: Any) -> AblationExplorer:
    """The ablation explorer of lesson 6 (keyword arguments set the starting values)."""
    return AblationExplorer(**values)
