"""Record an explorer's states ahead of time, in the kernel that runs the lesson, for the static site.

`install()` wraps `Explorer._repr_mimebundle_`: when a lesson displays an explorer, the explorer is moved through
its recorded states (see `plan`) by its own controls, exactly as a learner's moves would run it, and each state's
picture, readouts and message are added to the display under MIME. The explorer is put back to its starting
state afterwards, so the rest of the lesson sees it as it was.

Which states: the full cross product of the controls' values where it fits the frame budget; otherwise each
control along its whole range with the others at their starting values. A slider with more values than its
share of the budget is sampled evenly, its ends and starting value kept; the page's slider then steps through
the recorded values only. `EXTRA_STATES` adds, per explorer class, the combinations a lesson's text asks for.
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

from mha_lesson.widgets import Explorer

MIME = "application/vnd.mha-lesson.explorer+json"
MAX_FRAMES = 200  # per explorer: the page stays small and the build stays minutes, not hours
MAX_BYTES = 8 * 2**20  # per explorer, its PNG frames together

# Combinations a lesson's text tells the learner to try, by explorer class (values by control name).
EXTRA_STATES: dict[str, list[dict[str, Any]]] = {
    "OneHeadExplorer": [{"alpha": 0.5, "h": 2}],
    "CrossAttentionExplorer": [{"mode": "cross-attention", "causal": True}],
}

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


def kind(control: widgets.Widget) -> str | None:
    """How the page draws a control: slider, choice, switch, or None for one it cannot replay (a text field)."""
    if isinstance(control, SLIDERS):
        return "slider"
    if isinstance(control, CHOICES):
        return "choice"
    if isinstance(control, SWITCHES):
        return "switch"
    return None


def values_along(control: widgets.ValueWidget) -> list[Any]:
    """Every value a learner can give the control, in order."""
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
    movable = {name: values_along(c) for name, c in explorer.controls.items() if kind(c) and not c.disabled}
    movable = {name: vals for name, vals in movable.items() if len(vals) > 1}
    extras = [{**start, **s} for s in EXTRA_STATES.get(type(explorer).__name__, []) if set(s) <= set(start)]
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


def control_spec(name: str, control: widgets.ValueWidget, recorded: list[Any]) -> dict[str, Any]:
    """What the page needs to draw a control: its kind, label, the recorded values in order, their labels."""
    spec = {"name": name, "kind": kind(control), "label": control.description or name, "start": plain(control.value)}
    if isinstance(control, (widgets.SelectionSlider, *CHOICES)):
        labels = dict(zip(_options(control), _labels(control), strict=True))
        spec["labels"] = [labels.get(v, str(v)) for v in recorded]
    spec["values"] = recorded
    return spec


def record(explorer: Explorer) -> dict[str, Any]:
    """Every planned state's frame, within MAX_FRAMES and MAX_BYTES, and the controls that replay them."""
    start = explorer.values()
    frames, seen, total = [], set(), 0
    for state in plan(explorer):
        explorer.set(**state)
        frame = _frame(explorer)
        key = json.dumps(frame["values"], sort_keys=True)
        if key in seen:  # a control that corrects another (h kept a divisor of d_model) reached a known state
            continue
        total += len(frame.get("png", "")) * 3 // 4
        if frames and total > MAX_BYTES:
            break
        seen.add(key)
        frames.append(frame)
    explorer.set(**start)
    per_control = {}
    for name, control in explorer.controls.items():
        if kind(control):
            found = {json.dumps(f["values"][name]): f["values"][name] for f in frames}
            order = values_along(control) if not isinstance(control, widgets.SelectionSlider) else None
            vals = list(found.values())
            if order is not None:
                vals.sort(key=lambda v: order.index(v) if v in order else len(order))
            else:
                vals.sort(key=lambda v: (isinstance(v, str), v))
            per_control[name] = control_spec(name, control, vals)
    return {
        "explorer": type(explorer).__name__,
        "controls": list(per_control.values()),
        "fixed": [
            {"name": n, "label": c.description or n, "value": str(c.value)}
            for n, c in explorer.controls.items()
            if not kind(c) and hasattr(c, "value")
        ],
        "frames": frames,
    }


FIGURE_TEXT = "Figure: "  # how a static figure's text/plain output starts: the page's alt text follows


def install() -> None:
    """Make every explorer the lesson displays carry its recorded states, and every static figure's text say what it
    shows (idempotent)."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None:
        plain_text = shell.display_formatter.formatters["text/plain"]
        plain_text.for_type(Figure, lambda fig, p, cycle: p.text(FIGURE_TEXT + (figure_text(fig) or "untitled")))
    if getattr(Explorer._repr_mimebundle_, "records", False):
        return
    shown = Explorer._repr_mimebundle_

    def with_states(self: Explorer, **kwargs: Any) -> tuple[dict, dict]:
        bundle, metadata = shown(self, **kwargs)
        bundle[MIME] = record(self)
        return bundle, metadata

    with_states.records = True
    Explorer._repr_mimebundle_ = with_states
