"""Lesson 17's step-through of the online softmax: one query's keys read block by block, with the running numbers.

online_softmax_state is the pure compute (tests call it); the numbers come from demos.scale.online_softmax_steps.
A move of the slider recolours twelve bars, moves the running-max line and rewrites one text: only those are
redrawn over a cached background (axes, ticks, legend, block separators).
"""

from __future__ import annotations

import math
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..attention import softmax
from ..demos.scale import STEP_BLOCK, STEP_SCORES, STEP_VALUES, online_softmax_steps
from ..plots.scale import DONE, LIVE
from ._base import Explorer, check_start, settle_layout

N_BLOCKS = -(-len(STEP_SCORES) // STEP_BLOCK)
UNREAD = "#f0f0f0"  # keys the loop has not reached: no score computed yet


def online_softmax_state(blocks: int = 2) -> dict[str, Any]:
    """The state after `blocks` key blocks (1 to N_BLOCKS) of the lesson's 12-key row, and the exact answer."""
    if isinstance(blocks, bool) or not isinstance(blocks, (int, np.integer)) or not 1 <= blocks <= N_BLOCKS:
        raise ValueError(f"blocks: expected a number of key blocks from 1 to {N_BLOCKS}, got {blocks!r}")
    steps = online_softmax_steps(STEP_SCORES, STEP_VALUES, STEP_BLOCK)
    return {
        "blocks": int(blocks),
        "steps": steps[:blocks],
        "exact": float(softmax(STEP_SCORES) @ STEP_VALUES),
        "read": steps[blocks - 1]["stop"],  # keys read so far
        "live": (steps[blocks - 1]["start"], steps[blocks - 1]["stop"]),
    }


def _number(x: float) -> str:
    """A running number for the table: -inf before any key, else 4 decimals without trailing zeros."""
    return "-inf" if x == -math.inf else f"{x:.4f}".rstrip("0").rstrip(".")


def describe_state(data: dict[str, Any]) -> str:
    """The running numbers as a fixed-width table, one row per block read, and what the last step did."""
    rows = ["block  blk max  m_old  m    e^(m_old-m)  l       o        o/l"]
    for i, s in enumerate(data["steps"], start=1):
        cols = [
            f"{i:<6}",
            f"{_number(s['block_max']):<8}",
            f"{_number(s['m_old']):<6}",
            f"{_number(s['m']):<4}",
            f"{_number(s['factor']):<12}",
            f"{_number(s['l']):<7}",
            f"{_number(s['o']):<8}",
            _number(s["out"]),
        ]
        rows.append(" ".join(cols))
    last = data["steps"][-1]
    if last["m_old"] == -math.inf:
        what = "first block: its own max is the shift, nothing to rescale"
    elif last["factor"] < 1:
        rose = f"{_number(last['m_old'])} to {_number(last['m'])}"
        what = f"the max rose from {rose}: old l and o times {_number(last['factor'])}"
    else:
        what = "no larger score in this block: the factor is exactly 1"
    rows += ["", f"block {data['blocks']}: {what}",
             f"output so far: o/l = {_number(last['out'])}",
             f"exact answer, softmax(s)·v over all {len(STEP_SCORES)} keys: {_number(data['exact'])}"]  # fmt: skip
    return "\n".join(rows)


class OnlineSoftmaxExplorer(Explorer):
    """A 'blocks read' slider -> one query's scores by block (read, live, unread), the running max, and a table."""

    pixel_ratio = 2  # sharp on HiDPI: a move redraws twelve bars, a line and one text

    def __init__(self, blocks: int = 2) -> None:
        check_start("blocks", blocks, range(1, N_BLOCKS + 1))
        controls = {
            "blocks": widgets.IntSlider(
                value=blocks, min=1, max=N_BLOCKS, description="blocks read", continuous_update=False
            )
        }
        super().__init__(controls, figsize=(6.5, 4.6), dpi=90)  # 585 CSS px wide: fits a laptop's 588

    def setup(self, fig: Figure) -> None:
        """Scores as bars on top, the running numbers as text below (nine lines at most: four blocks)."""
        ax, ax_text = fig.subplots(2, 1, height_ratios=(1.5, 1))
        keys = np.arange(1, len(STEP_SCORES) + 1)
        self.bars = ax.bar(keys, STEP_SCORES, color=UNREAD, edgecolor="0.5", linewidth=0.8)
        for edge in np.arange(STEP_BLOCK, len(STEP_SCORES), STEP_BLOCK) + 0.5:
            ax.axvline(edge, color="0.6", lw=0.8, ls=":")
        (self.max_line,) = ax.plot([0.5, len(STEP_SCORES) + 0.5], [0, 0], "--", color="k", lw=1.2)
        self.max_label = ax.text(0.6, 0, "", va="bottom", fontsize=9)
        ax.set(xlim=(0.5, len(STEP_SCORES) + 0.5), ylim=(0, STEP_SCORES.max() * 1.45), xticks=keys,
               xlabel="key j (its value v_j = j)", ylabel="score s_j",
               title=f"one query's scores, read {STEP_BLOCK} keys at a time")  # fmt: skip
        ax.legend(handles=[Patch(color=DONE, label="read, folded into l and o"), Patch(color=LIVE, label="this block"),
                           Patch(facecolor=UNREAD, edgecolor="0.5", label="not read yet")],
                  loc="upper center", ncols=3, fontsize=8, framealpha=0.9)  # one row, over the tallest bar # fmt: skip
        ax_text.axis("off")
        for spine in ax_text.spines.values():  # the explorer redraws frames on top: hide this one's for good
            spine.set_visible(False)
        ax_text.set_title("the running numbers after each block")
        self.table = ax_text.text(0.0, 0.95, "", family="monospace", fontsize=9, va="top", transform=ax_text.transAxes)
        settle_layout(fig)
        self.animate(*self.bars, self.max_line, self.max_label, self.table)

    def compute(self, blocks: int) -> dict[str, Any]:
        """online_softmax_state at the slider's value."""
        return online_softmax_state(blocks)

    def draw(self, data: dict[str, Any]) -> None:
        """Recolour the bars, move the running-max line, rewrite the table."""
        start, stop = data["live"]
        for j, bar in enumerate(self.bars):
            bar.set_facecolor(DONE if j < start else LIVE if j < stop else UNREAD)
        m = data["steps"][-1]["m"]
        self.max_line.set_ydata([m, m])
        self.max_label.set_y(m)
        self.max_label.set_text(f"running max m = {_number(m)}")
        self.table.set_text(describe_state(data))


def online_softmax_explorer(**values: Any) -> OnlineSoftmaxExplorer:
    """The online-softmax step-through of lesson 17."""
    return OnlineSoftmaxExplorer(**values)
