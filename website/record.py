"""Record an explorer's states ahead of time, in the kernel that runs the lesson, for the static site.

`install()` wraps `Explorer._repr_mimebundle_`: when a lesson displays an explorer, the explorer is moved through
its recorded states (see `plan`) by its own controls, exactly as a learner's moves would run it, and each state's
picture, readouts and message are added to the display under MIME. The explorer is put back to its starting
state afterwards, so the rest of the lesson sees it as it was.

Which states: the full cross product of the controls' values where it fits the frame budget; otherwise each
control along its whole range with the others at their starting values. A slider with more values than its
share of the budget is sampled evenly, its ends and starting value kept; the page's slider then steps through
the recorded values only. `_extra_states` adds, per explorer class, the combinations a lesson's text asks for. A
text field becomes a choice of the sentences the lesson itself uses (`text_presets`). An explorer that trains
(Train and Stop buttons) also has a training run recorded from its starting state: every redraw of the real run,
thinned evenly, which the page's Train button plays in order.
"""

from __future__ import annotations

import base64
import itertools
import json
import math
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure
from traitlets import TraitError

from mha_lesson.widgets import Explorer
from mha_lesson.widgets.connections import MAX_LEN

MIME = "application/vnd.mha-lesson.explorer+json"
MAX_FRAMES = 200  # per explorer: the page stays small and the build stays minutes, not hours
MAX_BYTES = 8 * 2**20  # per explorer, its PNG frames together


# Combinations a lesson's text tells the learner to try, by explorer class (values by control name); every other
# suggestion in the lessons moves one control, which the one-control-at-a-time plan records anyway.
def _extra_states() -> dict[str, list[dict[str, Any]]]:
    from mha_lesson.widgets import circuits, projections, scale

    return {
        # lesson 1: "slide alpha to 0.5" with two heads
        "OneHeadExplorer": [{"alpha": 0.5, "h": 2}],
        # lesson 3: "tick same W for every head; move h"
        "ProjectionExplorer": [{"shared": True, "h": h} for h in projections.HEADS],
        # lesson 4: "on random inputs, raise n ...; switch to the log colour scale"
        "AttentionMapExplorer": [{"source": "random", "n": n} for n in (4, 16, 64, 256)]
        + [{"source": "random", "scale": "panel"}],
        # lesson 7: "switch to self-attention, where section 1's causal mask applies", at every length
        "CrossAttentionExplorer": [{"mode": "self-attention", "causal": True, "n_q": n} for n in range(1, MAX_LEN + 1)],
        # lesson 14: "move the step slider ...; switch to the one-layer model to compare"
        "CheckpointExplorer": [{"model": "one layer", "step": s} for s in range(0, circuits.STEPS + 1, circuits.EVERY)],
        # lesson 17: "the largest n with the smallest block"
        "TiledMemoryExplorer": [{"n": max(scale.NS), "block": min(scale.BLOCKS)}],
    }


# Text fields become a choice of the texts the lesson itself uses, by explorer class and control name.
def text_presets(explorer: Explorer) -> dict[str, list[str]]:
    """The preset texts for each text field of this explorer (the lesson's own sentences), starting text first."""
    if type(explorer).__name__ != "HeadBrowser":
        return {}
    from mha_lesson.demos.real_heads import annotated_texts
    from mha_lesson.widgets.head_browser import DEFAULT_TEXT

    start = explorer.controls["text"].value
    texts = [start, DEFAULT_TEXT, *annotated_texts()[3:7]]  # the sentences lesson 15 prints to paste
    return {"text": list(dict.fromkeys(texts))}


MAX_RUN_FRAMES = 40  # redraws of a recorded training run kept (evenly), the last always

SLIDERS = (widgets.IntSlider, widgets.FloatSlider, widgets.SelectionSlider)
CHOICES = (widgets.Dropdown, widgets.ToggleButtons, widgets.RadioButtons)
SWITCHES = (widgets.Checkbox, widgets.ToggleButton)


def plain(value: Any) -> Any:
    """A control value as JSON can hold it: numpy scalars to Python ones, floats rounded to 10 digits."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return round(value, 10)
    return value


def _options(control: widgets.ValueWidget) -> list[Any]:
    return [plain(o[1] if isinstance(o, tuple) else o) for o in control.options]


def _labels(control: widgets.ValueWidget) -> list[str]:
    return [str(o[0]) if isinstance(o, tuple) else str(o) for o in control.options]


def kind(control: widgets.Widget, presets: list[str] | None = None) -> str | None:
    """How the page draws a control: slider, choice, switch, or None for one it cannot replay (a text field
    without presets)."""
    if presets:
        return "choice"
    if isinstance(control, SLIDERS):
        return "slider"
    if isinstance(control, CHOICES):
        return "choice"
    if isinstance(control, SWITCHES):
        return "switch"
    return None


def values_along(control: widgets.ValueWidget, presets: list[str] | None = None) -> list[Any]:
    """Every value a learner can give the control, in order (a text field: its presets)."""
    if presets:
        return list(presets)
    if isinstance(control, widgets.IntSlider):
        return list(range(control.min, control.max + 1, control.step))
    if isinstance(control, widgets.FloatSlider):
        count = int(round((control.max - control.min) / control.step))
        return [plain(control.min + i * control.step) for i in range(count + 1)]
    if isinstance(control, (widgets.SelectionSlider, *CHOICES)):
        return _options(control)
    if isinstance(control, SWITCHES):
        return [False, True]
    return [plain(control.value)]


def sample(values: list[Any], keep: Any, most: int) -> list[Any]:
    """At most `most` of values, evenly spread, always with both ends and `keep` (the starting value)."""
    if len(values) <= most:
        return values
    picks = {round(i * (len(values) - 1) / (most - 2)) for i in range(most - 1)}
    chosen = [v for i, v in enumerate(values) if i in picks]
    return sorted({*chosen, keep}, key=values.index) if keep in values else chosen


def plan(explorer: Explorer, budget: int = MAX_FRAMES) -> list[dict[str, Any]]:
    """The states to record, the starting one first: a cross product if it fits, else one control at a time."""
    start = {name: plain(v) for name, v in explorer.values().items()}
    presets = text_presets(explorer)
    movable = {
        name: values_along(c, presets.get(name))
        for name, c in explorer.controls.items()
        if kind(c, presets.get(name)) and not c.disabled
    }
    movable = {name: vals for name, vals in movable.items() if len(vals) > 1}
    extras = [{**start, **s} for s in _extra_states().get(type(explorer).__name__, []) if set(s) <= set(start)]
    if math.prod(len(v) for v in movable.values()) <= budget - len(extras):
        names = list(movable)
        states = [{**start, **dict(zip(names, combo, strict=True))} for combo in itertools.product(*movable.values())]
    else:
        share = max(3, (budget - len(extras) - 1) // max(1, len(movable)))
        states = [{**start, name: v} for name, vals in movable.items() for v in sample(vals, start[name], share)]
    unique = {json.dumps(s, sort_keys=True): s for s in [start, *states, *extras]}
    return list(unique.values())[:budget]


def _frame(explorer: Explorer) -> dict[str, Any]:
    """What the page shows in the explorer's current state: the picture (or message), readouts and controls."""
    error = explorer.error
    frame = {
        "values": {name: plain(v) for name, v in explorer.values().items()},
        "disabled": [name for name, c in explorer.controls.items() if getattr(c, "disabled", False)],
        "options": {
            name: _options(c) for name, c in explorer.controls.items() if isinstance(c, widgets.SelectionSlider)
        },
        "readouts": [getattr(w, "value", "") for w in explorer.readouts],
        "message": error,
        "alt": describe(explorer),
    }
    if error is None:
        frame["png"] = base64.b64encode(explorer.image.value).decode("ascii")
        frame["width"] = explorer.css_size()[0]
    return frame


def figure_text(fig: Figure) -> str:
    """What a figure shows, in words: its suptitle, then each panel's title and axis labels."""
    parts = [fig._suptitle.get_text()] if getattr(fig, "_suptitle", None) is not None else []
    for ax in fig.axes:
        x, y = ax.get_xlabel(), ax.get_ylabel()
        bits = [ax.get_title(), x and f"x: {x}", y and f"y: {y}"]
        if any(bits):
            parts.append(", ".join(b for b in bits if b))
    return "; ".join(p for p in parts if p)


def describe(explorer: Explorer) -> str:
    """Alt text for an explorer's frame: what its figure shows, then the controls' values."""
    state = ", ".join(f"{explorer.controls[n].description or n} {v}" for n, v in explorer.values().items())
    return f"{figure_text(explorer.figure)}. Shown for {state}."


def control_spec(
    name: str, control: widgets.ValueWidget, recorded: list[Any], presets: list[str] | None = None
) -> dict[str, Any]:
    """What the page needs to draw a control: its kind, label, the recorded values in order, their labels."""
    spec = {
        "name": name,
        "kind": kind(control, presets),
        "label": control.description or name,
        "start": plain(control.value),
    }
    if presets:
        spec["labels"] = [str(v) for v in recorded]
        spec["select"] = True  # sentences: a drop-down list, not a row of buttons
    elif isinstance(control, (widgets.SelectionSlider, *CHOICES)):
        labels = dict(zip(_options(control), _labels(control), strict=True))
        spec["labels"] = [labels.get(v, str(v)) for v in recorded]
    spec["values"] = recorded
    return spec


def record_run(explorer: Explorer, budget: int) -> list[dict[str, Any]]:
    """Press Train at the starting state and keep its redraws until the run ends (at most MAX_RUN_FRAMES of them,
    evenly, the last always, within `budget` bytes): what the page's Train button plays. Empty for other explorers."""
    if not hasattr(explorer, "train_button") or explorer.error is not None:
        return []
    frames: list[dict[str, Any]] = []

    def keep(_: dict) -> None:  # on the training thread, under its lock, right after the new picture is set
        frames.append(_frame(explorer))

    explorer.image.observe(keep, names="value")
    try:
        explorer.on_train()
        explorer.wait()
    finally:
        explorer.image.unobserve(keep, names="value")
    count = min(len(frames), MAX_RUN_FRAMES)
    while count > 1 and sum(len(f.get("png", "")) * 3 // 4 for f in evenly(frames, count)) > budget:
        count //= 2
    return evenly(frames, count)


def evenly(items: list[Any], count: int) -> list[Any]:
    """count of items, evenly spaced, the first and the last included (just the last for a count of 1)."""
    if count <= 1:
        return items[-1:]
    return [items[round(i * (len(items) - 1) / (count - 1))] for i in range(count)]


def record(explorer: Explorer) -> dict[str, Any]:
    """Every planned state's frame and a recorded training run, within MAX_FRAMES and MAX_BYTES, and the controls
    that replay them."""
    start = explorer.values()
    presets = text_presets(explorer)
    budget = MAX_BYTES * 3 // 4 if hasattr(explorer, "train_button") else MAX_BYTES  # a quarter for its run
    frames, seen, total = [], set(), 0
    for state in plan(explorer):
        now = explorer.values()
        try:  # only what differs: a control that another keeps valid (head within h) then follows it
            explorer.set(**{name: v for name, v in state.items() if plain(now[name]) != v})
        except (TraitError, ValueError):  # a combination the controls refuse (a head beyond this h): not a state
            continue
        frame = _frame(explorer)
        key = json.dumps(frame["values"], sort_keys=True)
        if key in seen:  # a control that corrects another (h kept a divisor of d_model) reached a known state
            continue
        total += len(frame.get("png", "")) * 3 // 4
        if frames and total > budget:
            break
        seen.add(key)
        frames.append(frame)
    explorer.set(**start)
    run = record_run(explorer, MAX_BYTES - total)[: MAX_FRAMES - len(frames)]
    per_control = {}
    for name, control in explorer.controls.items():
        if kind(control, presets.get(name)):
            found = {json.dumps(f["values"][name]): f["values"][name] for f in frames}
            order = values_along(control, presets.get(name))
            if isinstance(control, widgets.SelectionSlider):  # its options may change with another control
                vals = sorted(found.values(), key=lambda v: (isinstance(v, str), v))
            else:
                vals = sorted(found.values(), key=lambda v: order.index(v) if v in order else len(order))
            per_control[name] = control_spec(name, control, vals, presets.get(name))
    return {
        "explorer": type(explorer).__name__,
        "call": getattr(explorer, "_site_call", {"args": [], "kwargs": {}}),  # how the lesson built it
        "controls": list(per_control.values()),
        "fixed": [
            {"name": n, "label": c.description or n, "value": str(c.value)}
            for n, c in explorer.controls.items()
            if not kind(c, presets.get(n)) and hasattr(c, "value")
        ],
        "frames": frames,
        "run": run,
    }


FIGURE_TEXT = "Figure: "  # how a static figure's text/plain output starts: the page's alt text follows


def install() -> None:
    """Make every explorer the lesson displays carry its recorded states, and every static figure's text say what it
    shows (idempotent)."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None:
        plain_text = shell.display_formatter.formatters["text/plain"]

        def describe_figures(*_: Any) -> None:
            plain_text.for_type(Figure, lambda fig, p, cycle: p.text(FIGURE_TEXT + (figure_text(fig) or "untitled")))

        # Before every cell: choosing figure formats (the lessons ask for 'retina') drops every Figure formatter.
        shell.events.register("pre_run_cell", describe_figures)
    if getattr(Explorer._repr_mimebundle_, "records", False):
        return
    shown = Explorer._repr_mimebundle_

    def with_states(self: Explorer, **kwargs: Any) -> tuple[dict, dict]:
        bundle, metadata = shown(self, **kwargs)
        bundle[MIME] = record(self)
        return bundle, metadata

    with_states.records = True
    Explorer._repr_mimebundle_ = with_states

    def remember_call(cls: type, *args: Any, **kwargs: Any) -> Explorer:
        # __new__ sees the arguments the lesson passed, for every subclass, even one imported later.
        explorer = object.__new__(cls)
        explorer._site_call = {
            "args": [_portable(a) for a in args],
            "kwargs": {k: _portable(v) for k, v in kwargs.items()},
        }
        return explorer

    Explorer.__new__ = remember_call


def _portable(value: Any) -> Any:
    """A constructor argument as JSON, or {"object": its type's name} (a model, say) for one that is not."""
    try:
        json.dumps(value)
    except TypeError:
        return {"object": type(value).__name__}
    return value
