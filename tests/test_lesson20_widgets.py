"""Lesson 20's live training explorer: its picture at the defaults (against an independent computation), cheap head
moves, Train / Stop / Resume against a Trainer run without the widget, and errors shown as one-line messages."""

import dataclasses
import threading
import time

import numpy as np
import pytest

from mha_lesson._blas import one_blas_thread
from mha_lesson.demos import lm as demo
from mha_lesson.lm import Trainer, attention_weights, logits
from mha_lesson.widgets import lm as wl


@pytest.fixture(scope="module")
def shipped():
    return wl.load_shipped()


def small(**values):
    """An explorer whose presses are 6 steps, redrawn every 3 (each step of the default model: about 0.1 s)."""
    return wl.LMTrainingExplorer(**{"steps": 6, "redraw": 3, **values})


def finish(explorer):
    assert explorer.wait(timeout=120), "the training thread did not end"
    assert explorer.error is None, explorer.error


def reference_losses(shipped, start, steps):
    """The losses of `steps` steps of a Trainer built by hand, as the explorer's docs say it builds one.

    On one BLAS thread, as the explorer trains: OpenBLAS may split a product differently over two threads, which
    changes float32 sums in their last bit (it does on this machine's Haswell kernel)."""
    tc = shipped.train_config
    if start == wl.SHIPPED:
        tc = dataclasses.replace(tc, lr=1e-4, min_lr=1e-4, warmup=0)
    trainer = Trainer(shipped.config, tc, shipped.train_ids, shipped.val_ids, shipped.vocab)
    if start == wl.SHIPPED:
        params, *_ = demo.load_model()
        for name in params:
            trainer.params[name][...] = params[name]
    with one_blas_thread():
        return [trainer.step() for _ in range(steps)]


def loss_by_hand(params, config, tokens, targets):
    """Mean cross-entropy from the logits, with a log-sum-exp written out in float64."""
    out = logits(params, config, tokens).astype(np.float64)  # (B, T, V)
    top = out.max(axis=-1, keepdims=True)
    log_total = np.log(np.exp(out - top).sum(axis=-1)) + top[..., 0]
    picked = np.take_along_axis(out, targets[..., None], axis=-1)[..., 0]
    return float(np.mean(log_total - picked))


# --- the picture before any click ---------------------------------------------------------------------------------


def test_the_line_comes_from_the_validation_text_and_fits_the_context(shipped):
    assert wl.LINE in shipped.vocab.decode(shipped.val_ids)
    assert wl.LINE not in shipped.vocab.decode(shipped.train_ids)
    assert 24 <= len(wl.LINE) <= 32  # every character labelled on both axes stays readable
    assert [wl.char_label(c) for c in "a \n'"] == ["a", "␣", "\\n", "'"]


def test_defaults_show_the_shipped_models_head_and_its_validation_loss(shipped):
    explorer = wl.LMTrainingExplorer()
    assert explorer.error is None and not explorer.runs and not explorer.running
    data = explorer.compute(start=wl.SHIPPED, layer=0, head=1)
    params, config, _, info = demo.load_model()
    tokens = np.array([shipped.vocab.chars.index(c) for c in wl.LINE])[None]
    weights = attention_weights(params, config, tokens)[0, 0, 1]  # layer 0, head 1
    np.testing.assert_allclose(data["map"], weights, atol=1e-12)
    T = len(wl.LINE)
    assert data["previous"] == pytest.approx(np.mean([weights[i, i - 1] for i in range(1, T)]))
    assert data["itself"] == pytest.approx(np.mean([weights[i, i] for i in range(1, T)]))
    assert data["previous"] > 3 * explorer.uniform_previous  # a learned pattern, not an even spread
    windows = demo.windows(shipped.val_ids, wl.EVAL_WINDOWS, config.n_ctx + 1)
    by_hand = loss_by_hand(params, config, windows[:, :-1], windows[:, 1:])
    assert data["val_loss"] == pytest.approx(by_hand, abs=1e-6) and shipped.reference == pytest.approx(
        by_hand, abs=1e-6
    )
    assert abs(by_hand - info["log"]["val_loss"][-1]) < 0.15  # 32 windows: near the run's 20-batch evaluation
    np.testing.assert_array_equal(data["val"], [[len(info["log"]["loss"]), data["val_loss"]]])
    assert data["state"] == "ready" and data["step"] == 3500 and len(data["losses"]) == 0
    np.testing.assert_array_equal(shipped.history, info["log"]["loss"])  # drawn in grey, the shipped run's history
    assert "layer 0, head 1" in explorer.map_title.get_text() and "Train</b> runs 300 steps" in explorer.text.value


def test_going_on_from_the_shipped_model_zooms_the_loss_axis_onto_the_new_steps(shipped):
    explorer = wl.LMTrainingExplorer()  # on from the shipped model, 300 steps a press
    low, high = explorer.ax_loss.get_xlim()
    end = len(demo.load_model()[3]["log"]["loss"])  # 3,500: the shipped run's last step
    assert low > 0 and high == end + 300  # not from step 0; every step of the press inside
    assert end - low == wl.CONTEXT and (high - end) / (high - low) >= 0.5  # the new steps fill most of the axis
    # the grey shipped curve is drawn over the context steps, so the axis shows where the new run starts from
    grey = explorer.ax_loss.lines[0].get_xdata()
    assert ((grey >= low) & (grey <= end)).sum() == wl.CONTEXT + 1
    # the validation dots, one a redraw (every REDRAW steps), stand apart on screen: more than two marker widths
    # from centre to centre (on the whole 0-3,800 axis they were half a width apart: a smear)
    ax, dot = explorer.ax_loss, explorer.val
    x0, x1 = ax.transData.transform([(end, 2.0), (end + wl.REDRAW, 2.0)])[:, 0]
    width = dot.get_markersize() * ax.figure.dpi / 72  # points to pixels
    assert x1 - x0 > 2 * width
    explorer.set(start=wl.SCRATCH)
    assert explorer.ax_loss.get_xlim() == (0, 300)  # from scratch: the whole run from step 0


def test_scratch_shows_the_untrained_model(shipped):
    explorer = wl.LMTrainingExplorer(start=wl.SCRATCH, layer=2, head=3)
    data = explorer.data
    untrained = Trainer(shipped.config, shipped.train_config, shipped.train_ids, shipped.val_ids, shipped.vocab)
    tokens = shipped.vocab.encode(wl.LINE)[None]
    with one_blas_thread():  # as the explorer computes its maps
        want = attention_weights(untrained.params, shipped.config, tokens)[2, 0, 3]
    np.testing.assert_allclose(data["map"], want)
    assert data["step"] == 0 and abs(data["val_loss"] - np.log(shipped.config.vocab_size)) < 0.1  # about ln 76


def test_layer_and_head_moves_run_no_forward_pass(monkeypatch):
    explorer = wl.LMTrainingExplorer()
    seen = {explorer.image.value}

    def no_forward(*args, **kwargs):
        raise AssertionError("a head move ran the model")

    monkeypatch.setattr(wl, "attention_weights", no_forward)
    monkeypatch.setattr(wl, "logits", no_forward)
    for layer, head in ((0, 2), (3, 2), (1, 0)):
        explorer.set(layer=layer, head=head)
        assert explorer.error is None and explorer.map_title.get_text() == f"layer {layer}, head {head}"
        np.testing.assert_array_equal(explorer.im.get_array(), explorer.data["attention"][layer, head])
        seen.add(explorer.image.value)
    assert len(seen) == 4


# --- training -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("start", wl.STARTS)
def test_train_adds_exactly_one_press_of_steps_as_a_trainer_would(shipped, start):
    explorer = small(start=start)
    first = explorer.image.value
    assert not explorer.train_button.disabled and explorer.stop_button.disabled
    explorer.on_train()
    assert explorer.train_button.disabled and not explorer.stop_button.disabled
    finish(explorer)
    run = explorer.runs[start]
    offset = shipped.steps if start == wl.SHIPPED else 0
    want = reference_losses(shipped, start, 12)
    np.testing.assert_array_equal(run.trainer.log["loss"], want[:6])
    assert explorer.data["state"] == "done" and explorer.data["step"] == offset + 6
    np.testing.assert_array_equal(explorer.data["val"][:, 0], offset + np.array([0, 3, 6]))  # one point per redraw
    assert explorer.data["val_loss"] == pytest.approx(wl.val_loss(run.trainer.params, shipped))
    assert explorer.progress.value == 6 and explorer.train_button.description == "Train 6 more"
    assert not explorer.train_button.disabled and explorer.stop_button.disabled and explorer.image.value != first
    np.testing.assert_array_equal(explorer.raw.get_xdata(), offset + np.arange(1, 7))
    explorer.on_train()  # a second press: 6 more, continuing the same trainer
    finish(explorer)
    np.testing.assert_array_equal(run.trainer.log["loss"], want)
    # scratch: from step 0; on from the shipped model: its last CONTEXT steps, then the 12 new ones
    assert explorer.ax_loss.get_xlim() == ((offset - wl.CONTEXT, offset + 12) if offset else (0, 12))
    for name, array in demo.load_model()[0].items():  # the shipped weights, shared by every explorer, untouched
        np.testing.assert_array_equal(shipped.params[name], array)


def test_from_scratch_retraces_the_shipped_runs_log(shipped):
    """The same recipe and seed: the shipped run's first steps again (bit for bit on the BLAS that made it)."""
    np.testing.assert_allclose(reference_losses(shipped, wl.SCRATCH, 4), shipped.history[:4], atol=1e-4)


def test_continuing_rewires_adamw_onto_the_shipped_weights(shipped):
    trainer = wl.new_trainer(shipped, wl.SHIPPED)
    for name, array in shipped.params.items():
        np.testing.assert_array_equal(trainer.params[name], array)
        assert np.shares_memory(trainer.params[name], trainer.adam.flat)  # the optimiser updates these very arrays
    assert {trainer.tc.lr, trainer.tc.min_lr, trainer.tc.warmup} == {wl.CONTINUE_LR, 0}
    before = trainer.params["h0.attn.w_q"].copy()
    trainer.step()
    assert not np.array_equal(trainer.params["h0.attn.w_q"], before)
    with pytest.raises(ValueError, match="^start:"):
        wl.new_trainer(shipped, "halfway")


def wait_for_steps(explorer, start, steps):
    deadline = time.monotonic() + 60
    while explorer.runs[start].step < steps and time.monotonic() < deadline:
        time.sleep(0.002)


def test_stop_mid_run_then_resume_matches_an_uninterrupted_run(shipped):
    explorer = small(start=wl.SCRATCH, steps=12, redraw=2)
    explorer.on_train()
    wait_for_steps(explorer, wl.SCRATCH, 3)
    explorer.on_stop()
    finish(explorer)
    run = explorer.runs[wl.SCRATCH]
    stopped_at = run.step
    assert 3 <= stopped_at < 12 and explorer.data["state"] == "stopped"
    assert explorer.train_button.description == "Resume" and explorer.progress.value == stopped_at
    assert "stopped after" in explorer.text.value
    explorer.on_train()  # resumes the same press, to step 12
    finish(explorer)
    assert run.step == 12 and explorer.data["state"] == "done"
    np.testing.assert_array_equal(run.trainer.log["loss"], reference_losses(shipped, wl.SCRATCH, 12))


def test_stop_before_the_first_step_and_a_double_click():
    explorer = small(start=wl.SCRATCH)
    with explorer.lock:  # the thread cannot take a step until the lock is free
        explorer.on_train()
        worker = explorer.worker
        explorer.on_train()  # the second click, before the button greys out in the page
        assert explorer.worker is worker and isinstance(worker, threading.Thread) and worker.daemon
        explorer.on_stop()
    finish(explorer)
    assert explorer.runs[wl.SCRATCH].step == 0 and explorer.data["state"] == "stopped"


def test_changing_start_mid_run_stops_it_and_keeps_each_run():
    explorer = small(start=wl.SCRATCH, steps=30, redraw=3)
    explorer.on_train()
    wait_for_steps(explorer, wl.SCRATCH, 2)
    explorer.controls["start"].value = wl.SHIPPED
    finish(explorer)
    assert explorer.data["start"] == wl.SHIPPED and explorer.data["state"] == "ready"
    scratch = explorer.runs[wl.SCRATCH]
    assert scratch.step < 30 and scratch.view["state"] == "stopped"
    explorer.controls["start"].value = wl.SCRATCH  # back: the run as it was left
    assert explorer.data["step"] == scratch.step and explorer.train_button.description == "Resume"


# --- errors become messages ---------------------------------------------------------------------------------------


def test_an_exception_in_the_thread_becomes_a_message(monkeypatch):
    def broken(self):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(Trainer, "step", broken)
    explorer = small()
    explorer.on_train()
    assert explorer.wait(timeout=60)
    assert explorer.error == "training stopped: RuntimeError: out of memory" and not explorer.running
    assert not explorer.train_button.disabled and explorer.stop_button.disabled


def test_a_nan_loss_stops_training_with_a_message(monkeypatch):
    monkeypatch.setattr(Trainer, "step", lambda self: float("nan"))
    explorer = small(start=wl.SCRATCH)
    explorer.on_train()
    assert explorer.wait(timeout=60)
    assert explorer.error.startswith("training stopped: FloatingPointError: the loss is nan")
    explorer.controls["head"].value = 0  # a move shows the plot again
    assert explorer.error is None and explorer.data["state"] == "stopped"


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"start": "halfway"}, "^start:"),
        ({"layer": 4}, "^layer:"),
        ({"head": -1}, "^head:"),
        ({"head": 1.0}, "^head:"),
        ({"steps": 0}, "^steps:"),
        ({"redraw": "25"}, "^redraw:"),
        ({"checkpoint": 3}, "^checkpoint:"),
        ({"checkpoint": "/nonexistent/model.npz"}, "^checkpoint:"),
    ],
)
def test_bad_arguments_raise_a_value_error_naming_them(values, match):
    with pytest.raises(ValueError, match=match):
        wl.lm_training_explorer(**values)


def test_a_bad_control_value_shows_a_one_line_message(monkeypatch):
    explorer = wl.lm_training_explorer()
    with pytest.raises(ValueError, match="^layer:"):
        explorer.compute(start=wl.SHIPPED, layer=9, head=0)
    monkeypatch.setattr(explorer, "values", lambda: {"start": wl.SHIPPED, "layer": 9, "head": 0})
    explorer.refresh()
    assert explorer.error == "layer: expected an integer from 0 to 3, got 9"
    assert explorer.image.layout.display == "none" and explorer.message.layout.display is None
