"""Lesson 13's live training explorer: train the two-lookup model with h heads and watch its loss fall and its heads
find their offsets, redrawn every REDRAW steps while it trains.

Training runs on a background thread (widgets._threaded.BackgroundTraining says why): the thread holds the lock for
REDRAW steps and a redraw at a time, so a control move waits at most that long. The lock also guards the
one-BLAS-thread setting, a process-wide switch both threads set and restore.

States of a setting (h, seed): untrained (the starting model, nothing in self.runs) -> training -> stopped
(Train resumes it; the result is the same to the last bit as an uninterrupted run) or trained (Train starts it
again from scratch). Moving h or the seed stops a run and shows that setting's last state.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from .._blas import one_blas_thread
from ..demos.training import offset_masses
from ..training import TASKS, Trainer
from ._base import Explorer, check_start
from ._threaded import BackgroundTraining

TASK = "two_lookups"
HS = (1, 2, 4, 8, 16)  # every h that divides d_model = 16
SEEDS = 10  # seeds 0..SEEDS-1
STEPS = TASKS[TASK]["steps"]  # 1,500
REDRAW = 50  # steps between redraws while training
SMOOTH = 25  # steps in the loss curve's running mean
GRID = {1: (1, 1), 2: (1, 2), 4: (2, 2), 8: (2, 4), 16: (4, 4)}  # (rows, columns) of head maps
FIGSIZE = (7.35, 7.2)  # inches: 588 x 576 CSS pixels at dpi 80, as wide as a laptop's output area, for every h
CHANCE_LOSS = 2 * np.log(TASKS[TASK]["vocab"])  # guessing both tokens: 2 ln(vocab) nats
STATES = ("untrained", "training", "stopped", "trained")


# Head maps, in inches: the area they share (left, right, top, bottom margins), the gap between rows (a title) and
# columns, the space between two columns' titles, and the largest map (h = 1 alone would fill the area).
MAPS_MARGINS = (0.7, 1.0, 3.45, 0.45)
ROW_GAP, COLUMN_GAP, TITLE_GAP, MAX_SIDE = 0.25, 0.15, 0.12, 2.6


def map_title(i: int, one: float, two: float, h: int) -> str:
    """Head i's map title: its mean weight on the key 1 back | 2 back ("head" left out where 8 or more share a row)."""
    return f"head {i}: {one:.2f} | {two:.2f}" if h <= 4 else f"{i}: {one:.2f} | {two:.2f}"


def map_layout(rows: int, cols: int, title_width: float) -> tuple[float, float]:
    """(side, pitch) in inches: the largest square maps in rows x cols that fit the maps' area of FIGSIZE, and the
    distance between the left edges of two columns, so that neither two maps nor two titles title_width wide meet."""
    width = FIGSIZE[0] - MAPS_MARGINS[0] - MAPS_MARGINS[1]
    height = FIGSIZE[1] - MAPS_MARGINS[2] - MAPS_MARGINS[3]
    side = min(MAX_SIDE, (height - (rows - 1) * ROW_GAP) / rows)
    if cols > 1:  # (cols - 1) pitches and one map across: pitch = max(side + COLUMN_GAP, title_width + TITLE_GAP)
        side = min(side, (width - (cols - 1) * COLUMN_GAP) / cols, width - (cols - 1) * (title_width + TITLE_GAP))
    return side, max(side + COLUMN_GAP, title_width + TITLE_GAP)


def snapshot(trainer: Trainer, state: str, checks: list[tuple[int, float]]) -> dict[str, Any]:
    """What the explorer shows of a trainer now: losses, held-out accuracy history, attention and offset masses."""
    _, accuracy = trainer.evaluate()
    step = len(trainer.losses)
    checks = [*checks, (step, accuracy)] if not checks or checks[-1][0] != step else checks
    h = trainer.config["h"]
    return {
        "h": h,
        "seed": trainer.config["seed"],
        "d_k": trainer.config["d_model"] // h,
        "step": step,
        "steps": STEPS,
        "state": state,
        "losses": np.array(trainer.losses),
        "checks": np.array(checks, dtype=float).reshape(-1, 2),  # (k, 2): step, held-out both right
        "accuracy": accuracy,
        "readout": trainer.readout_accuracy(),  # (2,): the 1-back and 2-back lookups on their own
        "attention": trainer.attention()[0],  # (h, n, n) on held-out sequence 0
        "masses": offset_masses(trainer)[0],  # (h, 4): weight on itself, 1, 2, 3+ back
    }


def untrained_view(h: int = 2, seed: int = 0) -> dict[str, Any]:
    """The explorer's picture of a setting before training: the starting model of Trainer(h, seed)."""
    if h not in HS:
        raise ValueError(f"h: expected one of {HS}, got {h!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < SEEDS:
        raise ValueError(f"seed: expected an integer from 0 to {SEEDS - 1}, got {seed!r}")
    return dict(_untrained_view(h, int(seed)))  # a copy: the cached one stays as it was


@functools.lru_cache(maxsize=len(HS) * SEEDS)
def _untrained_view(h: int, seed: int) -> dict[str, Any]:
    with one_blas_thread():
        return snapshot(Trainer(TASK, h=h, seed=seed), "untrained", [])


def describe(data: dict[str, Any]) -> str:
    """One HTML line: the state, the step and the held-out accuracies."""
    state = {
        "untrained": "untrained (press <b>Train</b>)",
        "training": "training",
        "stopped": "stopped (<b>Train</b> resumes)",
        "trained": "trained",
    }[data["state"]]
    one, two = data["readout"]
    return (
        f"h = {data['h']} heads of d_k = {data['d_k']}, seed {data['seed']}: {state}, step {data['step']:,} of "
        f"{data['steps']:,}. Held out: both lookups right <b>{data['accuracy']:.2f}</b> "
        f"(1 back {one:.2f}, 2 back {two:.2f})"
    )


class Run:
    """One setting's training: its trainer, the held-out accuracy at every redraw, and its last snapshot."""

    def __init__(self, h: int, seed: int) -> None:
        self.trainer = Trainer(TASK, h=h, seed=seed)
        self.checks: list[tuple[int, float]] = []
        self.view = self.record("training")

    @property
    def step(self) -> int:
        return len(self.trainer.losses)

    def record(self, state: str) -> dict[str, Any]:
        """Take a snapshot in the given state and keep its accuracy in the history."""
        self.view = snapshot(self.trainer, state, self.checks)
        self.checks = [tuple(row) for row in self.view["checks"]]
        return self.view


def trained_run(h: int, seed: int) -> Run:
    """A Run of the setting trained to the end, with the held-out accuracy recorded every REDRAW steps (seconds)."""
    run = Run(h, seed)
    with one_blas_thread():
        while run.step < STEPS:
            run.trainer.run(min(REDRAW, STEPS - run.step))
            run.record("training" if run.step < STEPS else "trained")
    return run


class TrainingExplorer(BackgroundTraining, Explorer):
    """Train / Stop buttons, a progress bar, h and seed -> the loss curve, held-out accuracy and every head's map."""

    backgrounds_kept = len(HS)  # one figure per h, each with its own still background
    warm_controls = ("h",)  # a new h builds a new figure: the two next to the starting h are built ahead

    def __init__(self, h: int = 2, seed: int = 0, *, start_trained: bool = False) -> None:
        check_start("h", h, HS)
        check_start("seed", seed, range(SEEDS))
        check_start("start_trained", start_trained, (False, True))
        controls = {
            "h": widgets.ToggleButtons(options=[(str(v), v) for v in HS], value=h, description="heads h"),
            "seed": widgets.IntSlider(value=seed, min=0, max=SEEDS - 1, description="seed", continuous_update=False),
        }
        controls["h"].style.button_width = "3em"
        self.init_background("Train")  # before super().__init__, whose first refresh takes the lock
        self.runs: dict[tuple[int, int], Run] = {}
        if start_trained:  # the first picture then teaches without a kernel: a finished run, with its curves
            self.runs[h, seed] = trained_run(h, seed)
        self.grids: dict[int, dict[str, Any]] = {}  # one figure per h, built on first use
        self.shown_h: int | None = None
        self.progress = widgets.IntProgress(value=0, min=0, max=STEPS, layout=widgets.Layout(width="14em"))
        self.text = widgets.HTML()
        super().__init__(controls, figsize=FIGSIZE, dpi=80)
        self.add_readout(widgets.HBox([self.train_button, self.stop_button, self.progress]))
        self.add_readout(self.text)
        self.train_button.on_click(self.on_train)
        self.stop_button.on_click(self.on_stop)
        self.before_redraw(self.on_setting, "h", "seed")

    # --- the state machine ------------------------------------------------------------------------------------
    def on_train(self, _: Any = None) -> None:
        """Train button: start (or resume) the shown setting on the background thread; ignored while one runs."""
        with self.lock:
            if self.running:
                return  # a second click before the button greyed out
            key = (self.controls["h"].value, self.controls["seed"].value)
            run = self.runs.get(key)
            if run is None or run.step >= STEPS:  # nothing yet, or finished: from scratch
                with one_blas_thread():
                    run = self.runs[key] = Run(*key)
            self.start_worker(self.train_loop, run, name="mha-train")
            self.worker.start()

    def train_loop(self, run: Run, stop: threading.Event) -> None:
        """The thread's work: REDRAW steps at a time under the lock, redrawing whenever its setting is shown."""
        try:
            while run.step < STEPS and not stop.is_set():
                with self.lock, one_blas_thread():
                    for _ in range(min(REDRAW, STEPS - run.step)):
                        if stop.is_set():
                            break
                        run.trainer.step()
                    run.record("training" if run.step < STEPS else "trained")
                    self.redraw_if_shown(run)
            with self.lock:
                if run.view["state"] == "training":
                    with one_blas_thread():
                        run.record("stopped")
                self.set_running(False)
                self.redraw_if_shown(run)
        except Exception as exc:  # a thread's traceback would land in whichever cell ran last: say it here
            with self.lock:
                self.set_running(False)
                self.show_message(f"training stopped: {type(exc).__name__}: {exc}")

    def redraw_if_shown(self, run: Run) -> None:
        """Redraw (under the lock) when the controls show run's setting."""
        config = run.trainer.config
        if (self.controls["h"].value, self.controls["seed"].value) == (config["h"], config["seed"]):
            Explorer.refresh(self)

    # --- Explorer -----------------------------------------------------------------------------------------------
    def setup(self, fig: Figure) -> None:
        """Figures are made in draw: the number of head maps depends on h."""

    def compute(self, h: int, seed: int) -> dict[str, Any]:
        """The setting's last snapshot if it was ever trained, else its untrained model."""
        run = self.runs.get((h, seed))
        return dict(run.view) if run is not None else untrained_view(h, seed)

    def draw(self, data: dict[str, Any]) -> None:
        """Switch to the figure for this h (built on first use) and update its curves, maps and titles."""
        h = data["h"]
        if h != self.shown_h:
            if h not in self.grids:
                self.grids[h] = self.build(h)
            grid = self.grids[h]
            self.figure, self.canvas = grid["figure"], grid["canvas"]
            self.moving = []
            self.animate(*grid["animated"])
            self.shown_h = h
        grid = self.grids[h]
        losses = data["losses"]
        steps = np.arange(1, len(losses) + 1)
        grid["raw"].set_data(steps, losses)
        if len(losses) >= SMOOTH:
            grid["mean"].set_data(steps[SMOOTH - 1 :], np.convolve(losses, np.ones(SMOOTH) / SMOOTH, mode="valid"))
        else:
            grid["mean"].set_data([], [])
        checks = data["checks"]
        grid["accuracy"].set_data(checks[:, 0], checks[:, 1])
        for i, (im, title) in enumerate(zip(grid["images"], grid["titles"], strict=True)):
            im.set_data(data["attention"][i])
            one, two = data["masses"][i, 1:3]
            title.set_text(map_title(i, one, two, h))
        self.progress.value = data["step"]
        self.train_button.description = {"stopped": "Resume", "trained": "Train again"}.get(data["state"], "Train")
        self.text.value = describe(data)

    def build(self, h: int) -> dict[str, Any]:
        """A figure for h heads, FIGSIZE: loss and accuracy side by side on top, a grid of head maps below."""
        rows, cols = GRID[h]
        fig = self.new_figure(FIGSIZE)  # no layout engine: every box is placed below, in inches from the edges
        width, height = FIGSIZE

        def box(left: float, right: float, top: float, bottom: float) -> dict[str, float]:
            """A gridspec's extent from its margins in inches (as figure fractions)."""
            return {
                "left": left / width,
                "right": 1 - right / width,
                "top": 1 - top / height,
                "bottom": bottom / height,
            }

        curves = fig.add_gridspec(1, 2, wspace=0.42, **box(0.7, 0.3, 0.5, height - 2.3))
        ax_loss, ax_acc = fig.add_subplot(curves[0]), fig.add_subplot(curves[1])
        (raw,) = ax_loss.plot([], [], color="tab:blue", alpha=0.3, lw=0.8)
        (mean,) = ax_loss.plot([], [], color="tab:blue", lw=2)
        ax_loss.axhline(CHANCE_LOSS, color="grey", ls=":", lw=1)
        # labelled on the line, at the right end: the curves start at chance on the left and fall below it
        ax_loss.text(STEPS * 0.98, CHANCE_LOSS * 1.3, f"guessing both: {CHANCE_LOSS:.1f}", ha="right", va="bottom",
                     color="0.35", fontsize=9)  # fmt: skip
        ax_loss.set(xlim=(0, STEPS), ylim=(1e-4, 60), yscale="log", xlabel="training step", ylabel="loss (nats)")
        ax_loss.set_title(f"training loss: each step (pale),\nrunning mean of {SMOOTH} steps", fontsize=10)
        (acc,) = ax_acc.plot([], [], "o-", ms=3, color="tab:green")
        ax_acc.set(xlim=(0, STEPS), ylim=(-0.03, 1.03), xlabel="training step", ylabel="fraction right")
        ax_acc.set_title(f"held out, every {REDRAW} steps:\nboth lookups right", fontsize=10)
        for ax in (ax_loss, ax_acc):
            ax.set_xticks([0, 500, 1000, 1500])
        probe = fig.text(0, 0, map_title(h - 1, 0.0, 0.0, h), fontsize=9)  # the widest title, measured
        side, pitch = map_layout(rows, cols, probe.get_window_extent(fig.canvas.get_renderer()).width / fig.dpi)
        probe.remove()
        grid_width, grid_height = (cols - 1) * pitch + side, (rows - 1) * (side + ROW_GAP) + side
        left = MAPS_MARGINS[0] + (width - MAPS_MARGINS[0] - MAPS_MARGINS[1] - grid_width) / 2  # centred
        right = width - left - grid_width
        maps = fig.add_gridspec(
            rows, cols, wspace=(pitch - side) / side, hspace=ROW_GAP / side,
            **box(left, right, MAPS_MARGINS[2], height - MAPS_MARGINS[2] - grid_height),
        )  # fmt: skip
        images, titles = [], []
        n = TASKS[TASK]["n"]
        for i in range(h):
            ax = fig.add_subplot(maps[i // cols, i % cols])
            images.append(ax.imshow(np.zeros((n, n)), vmin=0, vmax=1, cmap="viridis", interpolation="nearest"))
            titles.append(ax.set_title(map_title(i, 0.0, 0.0, h), fontsize=9, pad=2 if rows > 2 else 4))
            labelled = i == (rows - 1) * cols  # the bottom-left map: nothing below it for its labels to hit
            ticks = ([0, n - 1] if rows <= 2 else [n - 1]) if labelled else []  # small maps: a 0 would hit the title
            ax.set_xticks(ticks)
            ax.set_yticks(ticks)
            ax.tick_params(labelsize=9, length=2)
            if labelled:
                ax.set_xlabel("key", fontsize=9, labelpad=1)
                ax.set_ylabel("query", fontsize=9, labelpad=1)
        # the colour bar beside the maps, from the top row's top to the bottom row's bottom
        top = 1 - MAPS_MARGINS[2] / height
        cax = fig.add_axes(
            ((left + grid_width + 0.2) / width, top - grid_height / height, 0.13 / width, grid_height / height)
        )
        fig.colorbar(images[0], cax=cax, label="attention weight")
        fig.text(
            0.5,
            1 - 2.85 / height,
            f"h = {h}: each head's attention on held-out sequence 0 (rows = queries, columns = keys);\n"
            "title: the head's mean weight on the key 1 back | 2 back, over all held-out sequences",
            ha="center",
            va="top",
            fontsize=9,
        )
        animated = [raw, mean, acc, *images, *titles]
        for im in images:
            animated.extend(im.axes.spines.values())  # the map covers its frame: draw the frame again
        return {"figure": fig, "canvas": fig.canvas, "raw": raw, "mean": mean, "accuracy": acc, "images": images,
                "titles": titles, "animated": animated}  # fmt: skip


def training_explorer(**values: Any) -> TrainingExplorer:
    """The live training explorer of lesson 13 (keyword arguments set the starting values)."""
    return TrainingExplorer(**values)
