"""Time every explorer's slider move (recompute + redraw + PNG), at default sizes and at the largest values.

`python -m benchmarks widgets [--moves N] [--pixel-ratio R]` prints one row per (explorer, control) with the
median and max milliseconds per move. Target: median under 100 ms at default sizes.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import statistics
import time
from collections.abc import Iterator

import ipywidgets as widgets

import mha_lesson.widgets as package
from mha_lesson.widgets import Explorer


def all_explorers() -> list[type[Explorer]]:
    """Every Explorer subclass defined in mha_lesson.widgets.*, imported on demand."""
    for mod in pkgutil.iter_modules(package.__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"mha_lesson.widgets.{mod.name}")

    def walk(cls: type[Explorer]) -> Iterator[type[Explorer]]:
        for sub in cls.__subclasses__():
            yield sub
            yield from walk(sub)

    found = {c for c in walk(Explorer) if c.__module__.startswith("mha_lesson.widgets.")}
    return sorted(found, key=lambda c: (c.__module__, c.__name__))


def neighbour(control: widgets.ValueWidget) -> object | None:
    """A valid value next to the control's current one (the next option or step), or None if not movable."""
    if isinstance(control, widgets.Checkbox | widgets.ToggleButton):
        return not control.value
    options = getattr(control, "options", None)
    if options:
        values = [o[1] if isinstance(o, tuple) else o for o in options]
        if len(values) < 2:
            return None
        i = values.index(control.value)
        return values[i + 1] if i + 1 < len(values) else values[i - 1]
    if isinstance(control, widgets.IntSlider | widgets.FloatSlider | widgets.BoundedIntText | widgets.BoundedFloatText):
        up = control.value + control.step
        return up if up <= control.max else control.value - control.step
    return None


def time_moves(explorer: Explorer, name: str, moves: int) -> list[float]:
    """Milliseconds for each of `moves` moves of control `name`, each a full refresh as in the browser."""
    control = explorer.controls[name]
    times = []
    for _ in range(moves):
        value = neighbour(control)
        if value is None:
            break
        start = time.perf_counter()
        control.value = value  # the observer recomputes and re-renders synchronously
        times.append((time.perf_counter() - start) * 1e3)
    return times


def largest(control: widgets.ValueWidget) -> object | None:
    """The control's largest value (last option or max) if it is a slider, else None."""
    if isinstance(control, widgets.SelectionSlider):
        last = control.options[-1]
        return last[1] if isinstance(last, tuple) else last
    if isinstance(control, widgets.IntSlider | widgets.FloatSlider):
        return control.max
    return None


def at_largest(cls: type[Explorer]) -> Explorer:
    """A new explorer with every slider moved to its largest value, one after the other as a learner would."""
    explorer = cls()
    for name, control in explorer.controls.items():
        value = largest(control)
        if value is not None and not control.disabled:
            explorer.set(**{name: value})
    return explorer


def main(argv: list[str]) -> None:
    """Print the per-move latency of every explorer's controls, from the defaults and from the largest values."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks widgets")
    parser.add_argument("--moves", type=int, default=10, help="moves per control (default 10)")
    parser.add_argument(
        "--pixel-ratio", type=int, default=None, help="render every explorer at this pixel ratio (default: its own)"
    )
    args = parser.parse_args(argv)
    if args.pixel_ratio is not None:
        os.environ["MHA_LESSON_PIXEL_RATIO"] = str(args.pixel_ratio)  # read by Explorer.__init__
    print("ms per move (recompute, redraw, PNG); each control starts from a new explorer, so earlier moves")
    print("do not change what later ones measure. Target: median under 100 ms at the defaults.")
    print(f"{'explorer':<28} {'control':<14} {'default median':>15} {'max':>7} {'largest median':>15} {'max':>7}")
    for cls in all_explorers():
        for name in cls().controls:
            cells = []
            for explorer in (cls(), at_largest(cls)):
                times = time_moves(explorer, name, args.moves)
                cells.append(f"{statistics.median(times):>15.1f} {max(times):>7.1f}" if times else f"{'':>23}")
            print(f"{cls.__name__:<28} {name:<14} {cells[0]} {cells[1]}")
