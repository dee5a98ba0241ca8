"""Lesson 20's live training explorer: train the Shakespeare GPT from scratch, or on from the shipped model, with
Train and Stop, and watch its loss and one head's attention on a line of verse change every few dozen steps.

The pattern is lesson 13's TrainingExplorer (widgets/training.py): one background thread, one RLock, a progress
bar, a redraw every `redraw` steps, and any exception in the thread shown as a one-line message. Here each step
takes the lock on its own (a step of the default model takes about a tenth of a second, a redraw's worth of steps
seconds), so a layer or head move waits for one step at most, and never runs a forward pass: every snapshot keeps
all the heads' maps from one attention_weights call on the current weights.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from .._blas import one_blas_thread
from .._checks import check_positive_int, is_int
from ..demos.lm import CHECKPOINT, load_model, windows
from ..lm import corpus
from ..lm.model import GPTConfig, attention_weights, cross_entropy, logits
from ..lm.train import TrainConfig, Trainer
from ._base import Explorer
from ._threaded import BackgroundTraining

STEPS = 300  # steps per press of Train (the default model: about 0.1 s a step on one core)
REDRAW = 25  # steps between redraws while training
SMOOTH = 25  # steps in the loss curve's running mean
EVAL_WINDOWS = 32  # validation windows of n_ctx characters: the validation points, cheap enough for every redraw
# "shipped model": the loss axis starts this many steps before the shipped run's end, so the new steps fill most
# of it (300 of 500 at the first press, not 300 of 3,800) and the shipped curve's end, in grey, stays as context.
CONTEXT = 200
CONTINUE_LR = 1e-4  # "shipped model": a constant learning rate, the shipped run's final one (a tenth of its peak)
SCRATCH, SHIPPED = "scratch", "shipped model"
STARTS = (SCRATCH, SHIPPED)
# Romeo and Juliet, Act 5, Scene 3 (Paris), from the validation text: no step ever trained on it.
LINE = "Sweet flower, with flowers thy"
YLIM = (1.2, 4.6)  # nats: from below the shipped model's loss to above the untrained one (ln 76 = 4.33)
STATES = ("ready", "training", "stopped", "done")


def char_label(c: str) -> str:
    """A tick label for a character: a space as "␣", a newline (or any control character) repr-escaped."""
    return "␣" if c == " " else c if c.isprintable() else repr(c)[1:-1]


@dataclasses.dataclass(frozen=True)
class Shipped:
    """The shipped checkpoint and everything the explorer computes from it once (read-only arrays)."""

    params: dict[str, np.ndarray]
    config: GPTConfig
    train_config: TrainConfig
    vocab: corpus.Vocab
    history: np.ndarray  # (steps,) the shipped run's loss per step
    train_ids: np.ndarray
    val_ids: np.ndarray
    line: np.ndarray  # (T,) ids of LINE
    eval_tokens: np.ndarray  # (EVAL_WINDOWS, n_ctx)
    eval_targets: np.ndarray  # (EVAL_WINDOWS, n_ctx)
    reference: float  # the shipped model's loss on the evaluation windows, nats

    @property
    def steps(self) -> int:
        """Steps of the shipped run."""
        return len(self.history)


@functools.lru_cache(maxsize=2)
def _corpus() -> tuple[corpus.Vocab, np.ndarray, np.ndarray]:
    return corpus.load()


def val_loss(params: dict[str, np.ndarray], shipped: Shipped) -> float:
    """Mean cross-entropy (nats) of params on the explorer's fixed validation windows."""
    return float(cross_entropy(logits(params, shipped.config, shipped.eval_tokens), shipped.eval_targets)[0])


def load_shipped(checkpoint: str | Path = CHECKPOINT) -> Shipped:
    """The checkpoint, the corpus, the line's ids and the validation windows (cached per path)."""
    if not isinstance(checkpoint, (str, Path)):
        raise ValueError(f"checkpoint: expected a path, got {type(checkpoint).__name__}")
    return _load_shipped(str(Path(checkpoint).resolve()))


@functools.lru_cache(maxsize=2)
def _load_shipped(path: str) -> Shipped:
    params, config, vocab, info = load_model(Path(path))
    corpus_vocab, train_ids, val_ids = _corpus()
    if vocab != corpus_vocab:
        raise ValueError(f"checkpoint: {path} has a vocabulary of {len(vocab)} characters, not the corpus's")
    for a in params.values():
        a.flags.writeable = False  # shared by every explorer: trainers copy it
    win = windows(val_ids, EVAL_WINDOWS, config.n_ctx + 1)  # (EVAL_WINDOWS, n_ctx + 1), evenly spaced
    shipped = Shipped(
        params=params,
        config=config,
        train_config=info["train_config"],
        vocab=vocab,
        history=np.asarray(info["log"]["loss"], dtype=float),
        train_ids=train_ids,
        val_ids=val_ids,
        line=vocab.encode(LINE),
        eval_tokens=win[:, :-1],
        eval_targets=win[:, 1:],
        reference=0.0,
    )
    with one_blas_thread():
        return dataclasses.replace(shipped, reference=val_loss(params, shipped))


def new_trainer(shipped: Shipped, start: str, steps: int = STEPS) -> Trainer:
    """The Trainer a press of Train runs for `start`.

    scratch: the shipped run's own recipe (its seed, so its batches and initial weights, and its schedule), so on
    the same BLAS it retraces the shipped run step for step. shipped model: the checkpoint's weights copied in, a
    fresh AdamW at the constant rate CONTINUE_LR.
    """
    if start == SCRATCH:
        return Trainer(shipped.config, shipped.train_config, shipped.train_ids, shipped.val_ids, shipped.vocab)
    if start != SHIPPED:
        raise ValueError(f"start: expected one of {STARTS}, got {start!r}")
    tc = dataclasses.replace(shipped.train_config, steps=steps, lr=CONTINUE_LR, min_lr=CONTINUE_LR, warmup=0)
    trainer = Trainer(shipped.config, tc, shipped.train_ids, shipped.val_ids, shipped.vocab)
    for name, array in shipped.params.items():
        trainer.params[name][...] = array  # into place: AdamW's flat vector holds views of these arrays
    return trainer


def snapshot(shipped: Shipped, params: dict[str, np.ndarray], offset: int, losses: np.ndarray, val: list) -> dict:
    """What the explorer shows of one set of weights: every head's map on LINE, the validation loss, the curves."""
    attention = attention_weights(params, shipped.config, shipped.line[None])[:, 0]  # (n_layer, n_head, T, T)
    step = offset + len(losses)
    loss = val_loss(params, shipped)
    if not val or val[-1][0] != step:
        val = [*val, (step, loss)]
    return {
        "attention": attention,
        "val_loss": loss,
        "val": np.array(val, dtype=float).reshape(-1, 2),  # (k, 2): step, validation loss
        "losses": np.array(losses, dtype=float),  # this explorer's run, one per step
        "offset": offset,  # the step the run starts at: 0, or the shipped run's length
        "step": step,
    }


@functools.lru_cache(maxsize=4)
def _fresh_view(path: str, start: str) -> dict[str, Any]:
    """The picture of `start` before any training: the untrained model, or the shipped one."""
    shipped = _load_shipped(path)
    with one_blas_thread():
        if start == SCRATCH:
            params = new_trainer(shipped, start).params
            return snapshot(shipped, params, 0, np.zeros(0), [])
        return snapshot(shipped, shipped.params, shipped.steps, np.zeros(0), [])


class Run:
    """One start's training: its trainer, the validation points of every redraw, and its last snapshot."""

    def __init__(self, shipped: Shipped, start: str, steps: int) -> None:
        self.shipped, self.start = shipped, start
        self.trainer = new_trainer(shipped, start, steps)
        self.offset = shipped.steps if start == SHIPPED else 0
        self.press_start = self.target = 0  # the steps this press began at and runs to
        self.state = "ready"
        self.val: list[tuple[float, float]] = []
        self.view = self.record("ready")

    @property
    def step(self) -> int:
        """Steps this run has taken (after the shipped run's, for "shipped model")."""
        return self.trainer.step_count

    def record(self, state: str) -> dict[str, Any]:
        """Take a snapshot of the current weights in the given state, keeping its validation point."""
        self.state = state
        view = snapshot(self.shipped, self.trainer.params, self.offset, self.trainer.log["loss"], self.val)
        self.val = [tuple(row) for row in view["val"]]
        self.view = view | {"state": state, "press": self.step - self.press_start, "target": self.target}
        return self.view


class LMTrainingExplorer(BackgroundTraining, Explorer):
    """Train / Stop, a progress bar, where to start, layer and head -> the loss curves and one head's map."""

    backgrounds_kept = 4  # one per (start, x range): the x range grows by a press's steps at each press
    warm_controls = ("start",)

    def __init__(
        self,
        start: str = SHIPPED,
        layer: int = 0,
        head: int = 1,
        *,
        steps: int = STEPS,
        redraw: int = REDRAW,
        checkpoint: str | Path = CHECKPOINT,
    ) -> None:
        self.shipped = load_shipped(checkpoint)
        self.path = str(Path(checkpoint).resolve())
        self.steps_per_press = check_positive_int("steps", steps)
        self.redraw_every = check_positive_int("redraw", redraw)
        config = self.shipped.config
        if start not in STARTS:
            raise ValueError(f"start: expected one of {STARTS}, got {start!r}")
        for name, value, count in (("layer", layer, config.n_layer), ("head", head, config.n_head)):
            if not is_int(value) or not 0 <= value < count:
                raise ValueError(f"{name}: expected an integer from 0 to {count - 1}, got {value!r}")
        controls = {
            "start": widgets.ToggleButtons(options=STARTS, value=start, description="start from"),
            "layer": widgets.ToggleButtons(options=list(range(config.n_layer)), value=layer, description="layer"),
            "head": widgets.ToggleButtons(options=list(range(config.n_head)), value=head, description="head"),
        }
        for name in ("layer", "head"):
            controls[name].style.button_width = "3em"
        self.init_background(f"Train {steps}")  # before super().__init__, whose first refresh takes the lock
        self.runs: dict[str, Run] = {}
        self.progress = widgets.IntProgress(value=0, min=0, max=steps, layout=widgets.Layout(width="14em"))
        self.text = widgets.HTML()
        super().__init__(controls, figsize=(10.4, 4.7), dpi=90)
        self.add_readout(widgets.HBox([self.train_button, self.stop_button, self.progress]))
        self.add_readout(self.text)
        self.train_button.on_click(self.on_train)
        self.stop_button.on_click(self.on_stop)
        self.before_redraw(self.on_setting, "start")

    # --- the state machine ------------------------------------------------------------------------------------
    def on_train(self, _: Any = None) -> None:
        """Train button: run `steps` more steps of the shown start (or finish a stopped press) on a thread."""
        with self.lock:
            if self.running:
                return  # a second click before the button greyed out
            start = self.controls["start"].value
            run = self.runs.get(start)
            if run is None:
                with one_blas_thread():
                    run = self.runs[start] = Run(self.shipped, start, self.steps_per_press)
            if run.step >= run.target:  # no press under way: a new one
                run.press_start, run.target = run.step, run.step + self.steps_per_press
            self.start_worker(self.train_loop, run, name="mha-lm-train")
            with one_blas_thread():
                run.record("training")
            self.redraw_if_shown(run)
            self.worker.start()

    def train_loop(self, run: Run, stop: threading.Event) -> None:
        """The thread's work: one step at a time under the lock, a snapshot and redraw every `redraw` steps."""
        try:
            while run.step < run.target and not stop.is_set():
                with self.lock, one_blas_thread():  # the lock per step: a move waits one step at most
                    if stop.is_set():  # set while this thread waited for the lock
                        break
                    loss = run.trainer.step()
                    if not math.isfinite(loss):
                        raise FloatingPointError(f"the loss is {loss} at step {run.offset + run.step}")
                    if (run.step - run.press_start) % self.redraw_every == 0 or run.step == run.target:
                        run.record("training" if run.step < run.target else "done")
                        self.redraw_if_shown(run)
            with self.lock:
                if run.state == "training":
                    with one_blas_thread():
                        run.record("stopped")
                self.set_running(False)
                self.redraw_if_shown(run)
        except Exception as exc:  # a thread's traceback would land in whichever cell ran last: say it here
            with self.lock:
                run.state = "stopped"
                run.view = run.view | {"state": "stopped"}
                self.set_running(False)
                self.show_message(f"training stopped: {type(exc).__name__}: {exc}")

    def redraw_if_shown(self, run: Run) -> None:
        """Redraw (under the lock) when the controls show run's start."""
        if self.controls["start"].value == run.start:
            Explorer.refresh(self)

    # --- Explorer -----------------------------------------------------------------------------------------------
    def view(self, start: str) -> dict[str, Any]:
        """start's last snapshot if it was ever trained here, else its starting model's."""
        if start not in STARTS:
            raise ValueError(f"start: expected one of {STARTS}, got {start!r}")
        run = self.runs.get(start)
        if run is not None:
            return run.view
        fresh = _fresh_view(self.path, start)
        return fresh | {"state": "ready", "press": 0, "target": 0}

    def compute(self, start: str, layer: int, head: int) -> dict[str, Any]:
        """The shown start's snapshot, with the chosen head's (T, T) map and its two simplest scores."""
        config = self.shipped.config
        for name, value, count in (("layer", layer, config.n_layer), ("head", head, config.n_head)):
            if not is_int(value) or not 0 <= value < count:
                raise ValueError(f"{name}: expected an integer from 0 to {count - 1}, got {value!r}")
        data = self.view(start)
        weights = data["attention"][layer, head]  # (T, T): a cached snapshot, no forward pass
        offset = data["offset"]
        xmax = offset + max(self.steps_per_press, data["target"], data["step"] - offset)
        return data | {
            "start": start,
            "layer": layer,
            "head": head,
            "map": weights,
            # mean over queries 1.. (query 0 can only see itself) of the weight on the previous character, on itself
            "previous": float(np.diagonal(weights, -1).mean()),
            "itself": float(np.diagonal(weights)[1:].mean()),
            "xmax": xmax,
            # the loss axis: from scratch the whole run from step 0; on from the shipped model the shipped run's
            # last CONTEXT steps, then the new ones
            "xlim": (max(0, offset - CONTEXT), xmax),
        }

    def background_key(self) -> tuple[str, int]:
        """The x range follows the start (its first step shown) and the steps pressed for."""
        return (self.data["start"], self.data["xmax"]) if self.data else ("", 0)

    def setup(self, fig: Figure) -> None:
        """The loss axes (left) and the attention map with the line's characters on both axes (right)."""
        shipped, T = self.shipped, len(LINE)
        w, h = fig.get_size_inches()
        fig.set_layout_engine("none")
        ax = self.ax_loss = fig.add_axes((0.7 / w, 0.6 / h, 4.45 / w, 3.55 / h))
        steps = np.arange(1, shipped.steps + 1)
        ax.plot(steps, shipped.history, color="0.6", alpha=0.35, lw=0.6)
        mean = np.convolve(shipped.history, np.ones(SMOOTH) / SMOOTH, mode="valid")
        ax.plot(steps[SMOOTH - 1 :], mean, color="0.45", lw=1.5, label=f"shipped run ({shipped.steps:,} steps)")
        label = f"shipped model on these windows: {shipped.reference:.2f}"
        ax.axhline(shipped.reference, color="0.3", ls=":", lw=1.2, label=label)
        (self.raw,) = ax.plot([], [], color="tab:blue", alpha=0.35, lw=0.8, label="this run: loss per step")
        (self.mean,) = ax.plot([], [], color="tab:blue", lw=2, label=f"this run: mean of {SMOOTH} steps")
        (self.val,) = ax.plot([], [], "o", ms=4.5, color="tab:orange", label=f"validation ({EVAL_WINDOWS} windows)")
        ax.set(ylim=YLIM, xlabel="training step", ylabel="loss (nats per character)")
        ax.set_title("training loss (cross-entropy of the next character)")
        ax.legend(loc="upper right", fontsize=8.5)
        mx = self.ax_map = fig.add_axes((6.05 / w, 0.75 / h, 3.2 / w, 3.25 / h))
        self.im = mx.imshow(np.zeros((T, T)), vmin=0, vmax=1, cmap="viridis", aspect="auto", interpolation="nearest")
        labels = [char_label(c) for c in LINE]
        mx.set_xticks(range(T), labels, fontsize=8)
        mx.set_yticks(range(T), labels, fontsize=8)
        mx.tick_params(length=2, pad=1)
        mx.set_xlabel("key (attended to)")
        mx.set_ylabel("query (attending)")
        self.map_title = mx.set_title("layer 0, head 0", pad=16)
        cax = fig.add_axes((9.65 / w, 0.75 / h, 0.14 / w, 3.25 / h))
        fig.colorbar(self.im, cax=cax, label="attention weight")
        self.animate(self.raw, self.mean, self.val, self.im, self.map_title)

    def draw(self, data: dict[str, Any]) -> None:
        """Update the curves, the map and its title, the x range, the buttons and the readout."""
        losses, offset = data["losses"], data["offset"]
        steps = offset + np.arange(1, len(losses) + 1)
        self.raw.set_data(steps, losses)
        if len(losses) >= SMOOTH:
            self.mean.set_data(steps[SMOOTH - 1 :], np.convolve(losses, np.ones(SMOOTH) / SMOOTH, mode="valid"))
        else:
            self.mean.set_data([], [])
        self.val.set_data(data["val"][:, 0], data["val"][:, 1])
        if self.ax_loss.get_xlim() != data["xlim"]:
            self.ax_loss.set_xlim(*data["xlim"])
        self.im.set_data(data["map"])
        self.map_title.set_text(f"layer {data['layer']}, head {data['head']}")
        self.progress.max = self.steps_per_press
        self.progress.value = data["press"]
        self.train_button.description = {"stopped": "Resume", "done": f"Train {self.steps_per_press} more"}.get(
            data["state"], f"Train {self.steps_per_press}"
        )
        self.text.value = self.describe(data)

    def describe(self, data: dict[str, Any]) -> str:
        """Two HTML lines: what this start trains and where it is; what the shown head does on the line."""
        n, shipped = self.steps_per_press, self.shipped
        if data["start"] == SCRATCH:
            what = (
                f"From scratch: random weights and the shipped run's own recipe (seed {shipped.train_config.seed}, "
                "batches, learning-rate schedule), so the blue curve retraces the grey one."
            )
        else:
            what = (
                f"On from the shipped model (after its {shipped.steps:,} steps): a fresh AdamW at a constant learning "
                f"rate of {CONTINUE_LR:g} (the shipped run's last); expect little change."
            )
        state = {
            "ready": f"<b>Train</b> runs {n} steps",
            "training": f"training: {data['press']} of {n} steps",
            "stopped": f"stopped after {data['press']} of {n} steps (<b>Resume</b> goes on)",
            "done": f"{n} steps done (<b>Train</b> runs {n} more)",
        }[data["state"]]
        return (
            f"{what} Step {data['step']:,}, {state}; validation loss <b>{data['val_loss']:.3f}</b> nats.<br>"
            f"Layer {data['layer']}, head {data['head']} on “{LINE}”: a query's mean weight on the previous "
            f"character <b>{data['previous']:.2f}</b>, on itself {data['itself']:.2f} (evenly spread: "
            f"{self.uniform_previous:.2f})."
        )

    @functools.cached_property
    def uniform_previous(self) -> float:
        """A head spreading its weight evenly over the allowed keys: mean of 1/(i+1) over queries i = 1..T-1."""
        return float(np.mean(1 / np.arange(2, len(LINE) + 1)))


def lm_training_explorer(**values: Any) -> LMTrainingExplorer:
    """Lesson 20's live training explorer (keyword arguments: start, layer, head, steps, redraw, checkpoint)."""
    return LMTrainingExplorer(**values)
