"""Lesson 14's explorer: scrub through the saved snapshots of the induction runs and watch the heads form.

Every snapshot (maps, losses, scores) is computed once by mha_lesson.demos.circuits.trained_runs; a move only
swaps precomputed arrays into the images and moves the loss marker.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from ..circuits import previous_token_pattern, repeat_pattern
from ..demos.circuits import DISPLAY_K, EVERY, STEPS, H, Run, phase_change, trained_runs
from ..plots.attention import attention_heatmap
from ..plots.circuits import pattern_cells
from ._base import Explorer, check_start, settle_layout

MODELS = {"two layers": 2, "one layer": 1}


def snapshot(runs: dict[int, Run], step: int, model: str) -> dict[str, Any]:
    """The chosen run's maps (2, h, n, n; a one-layer run's second layer masked), scores and both runs' losses."""
    if model not in MODELS:
        raise ValueError(f"model: expected one of {list(MODELS)}, got {model!r}")
    run = runs[MODELS[model]]
    i = run.at(step)
    n = run.tokens.shape[0]
    maps = np.ma.masked_array(np.zeros((2, H, n, n)), mask=True)  # (2, h, n, n): layer 2 stays masked in a 1-layer run
    maps[: run.layers] = run.attention[i]
    return {
        "step": step,
        "model": model,
        "layers": run.layers,
        "maps": maps,
        "previous": run.previous[i, 0],  # (h,) layer 1's heads
        "induction": run.induction[i, -1],  # (h,) the last layer's heads
        "loss": {layers: float(r.loss[r.at(step)]) for layers, r in runs.items()},
        "accuracy": float(run.accuracy[i]),
    }


def describe(data: dict[str, Any]) -> str:
    """Two HTML lines: the step and both losses; the chosen run's accuracy and its heads' detector scores."""
    previous = ", ".join(f"{s:.2f}" for s in data["previous"])
    induction = ", ".join(f"{s:.2f}" for s in data["induction"])
    return (
        f"step {data['step']}: loss on the repeated copy <b>{data['loss'][2]:.2f}</b> with two layers, "
        f"<b>{data['loss'][1]:.2f}</b> with one.<br>{data['model']}: next-token accuracy on the copy "
        f"{data['accuracy']:.2f}; previous-token score of layer 1's heads {previous}; induction score of layer "
        f"{data['layers']}'s heads <b>{induction}</b> (held-out means)."
    )


class CheckpointExplorer(Explorer):
    """A step slider and a one/two-layer switch -> the heads' maps at that step and a marker on the loss curves."""

    def __init__(self, step: int | None = None, model: str = "two layers") -> None:
        self.runs = trained_runs()
        if step is None:
            step = phase_change(self.runs[2])["step"]  # open where the induction head is forming
        check_start("step", step, range(0, STEPS + 1, EVERY))
        check_start("model", model, MODELS)
        controls = {
            "step": widgets.IntSlider(value=step, min=0, max=STEPS, step=EVERY, description="step"),
            "model": widgets.ToggleButtons(options=list(MODELS), value=model, description="model"),
        }
        self.text = widgets.HTML()
        super().__init__(controls, figsize=(5.85, 7.3), dpi=100)  # 585 CSS px wide: fits a laptop's 588
        self.add_readout(self.text)

    def setup(self, fig: Figure) -> None:
        """Loss curves on top, the whole width; below, layer 1's and layer 2's maps of the display sequence, 2 x h."""
        grid = fig.add_gridspec(1 + 2, H, height_ratios=[0.42, 1, 1])
        ax_loss = fig.add_subplot(grid[0, :])
        for layers, colour in ((2, "tab:blue"), (1, "tab:orange")):
            run = self.runs[layers]
            label = "two layers" if layers == 2 else "one layer"
            ax_loss.plot(run.steps, run.loss, color=colour, lw=2, label=label)
        ax_loss.set_xlabel("training step")
        ax_loss.set_ylabel("loss (nats)")
        ax_loss.set_ylim(bottom=0)
        legend = ax_loss.legend(loc="upper right", framealpha=1)
        ax_loss.set_title("held-out loss on the repeated copy, while training")
        self.marker = ax_loss.axvline(0, color="k", lw=1)
        (self.dots,) = ax_loss.plot([0, 0], [0, 0], "o", color="k", ms=6)
        run = self.runs[2]
        labels = [str(t) for t in run.tokens]
        n = len(labels)
        # Layer 1 is scored on the previous token; layer 2 on the induction cells of the second copy.
        patterns = (previous_token_pattern(n), repeat_pattern(n, DISPLAY_K, DISPLAY_K - 1))
        self.images, rings, self.absent = [], [], []
        for li in range(2):
            for hi in range(H):
                ax = fig.add_subplot(grid[1 + li, hi])
                title = f"layer {li + 1}, head {hi}"
                im = attention_heatmap(
                    ax, np.zeros((n, n)), labels, labels, title=title, annotate=False, colorbar=False
                )
                im.set_cmap(im.get_cmap().with_extremes(bad="0.88"))  # a one-layer run has no layer 2
                # Token labels on the outer edges only: every map shows the same sequence.
                # 7.5 pt: 10.4 CSS px at 100 dpi; a 24-token map has rows of about 9 px, still clear for digits
                ax.tick_params(labelsize=7.5, labeltop=li == 0, labelleft=hi == 0)
                ax.set_xlabel("key token" if li == 0 else "")
                ax.set_ylabel("query token" if hi == 0 else "")
                rings.append(pattern_cells(ax, patterns[li], label="previous token" if li == 0 else "induction"))
                self.absent.append(ax.text(n / 2, n / 2, "", ha="center", va="center", fontsize=9))
                self.images.append(im)
        fig.colorbar(self.images[0], ax=[im.axes for im in self.images], label="weight (row sums to 1)",
                     shrink=0.7, aspect=30, pad=0.02)  # fmt: skip
        fig.suptitle(
            f"A held-out sequence: {DISPLAY_K} tokens, repeated, then random ones. Red rings:\n"
            "the cells the detectors score (layer 1: previous token; layer 2: induction).",
            fontsize=10,
        )
        settle_layout(fig)
        # The rings do not move, but they must be drawn after the maps they sit on, which do. Scores go to the
        # readout, not the titles: re-drawing four titles per move cost more than the four maps.
        # The legend is drawn after the marker, which would otherwise cross it at the last steps.
        self.animate(self.marker, self.dots, legend, *self.images, *rings, *self.absent)

    def compute(self, step: int, model: str) -> dict[str, Any]:
        """snapshot() at the controls' values."""
        return snapshot(self.runs, step, model)

    def draw(self, data: dict[str, Any]) -> None:
        """Swap in the maps; move the marker and the dots to the step."""
        step = data["step"]
        self.marker.set_xdata([step, step])
        self.dots.set_data([step, step], [data["loss"][2], data["loss"][1]])
        for idx, im in enumerate(self.images):
            im.set_data(data["maps"][divmod(idx, H)])
            self.absent[idx].set_text("" if idx // H < data["layers"] else "a one-layer model\nhas no layer 2")
        self.text.value = describe(data)


def checkpoint_explorer(**values: Any) -> CheckpointExplorer:
    """The snapshot explorer of lesson 14."""
    return CheckpointExplorer(**values)
