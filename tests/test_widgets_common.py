"""Every explorer, generically: it builds at its defaults, survives 200 moves without piling up figures,
output or memory, and never lets an exception escape from a control to the page."""

import gc

import matplotlib.pyplot as plt
import psutil
import pytest

from mha_lesson.bench.widgets import all_explorers, neighbour

EXPLORERS = all_explorers()


def test_there_are_explorers_to_test():
    assert EXPLORERS, "no Explorer subclasses found in mha_lesson.widgets"


def _moves(explorer, count):
    """Yield (name, value) moves cycling over every movable control."""
    names = [n for n, c in explorer.controls.items() if neighbour(c) is not None]
    for i in range(count):
        name = names[i % len(names)]
        yield name, neighbour(explorer.controls[name])


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda c: c.__name__)
def test_200_moves_leave_figures_output_and_memory_flat(cls):
    explorer = cls()
    assert explorer.error is None, f"defaults show a message: {explorer.error}"
    children = len(explorer.widget.children)
    figures = len(plt.get_fignums())
    process = psutil.Process()
    for name, value in _moves(explorer, 20):  # warm-up: caches, fonts, first allocations
        explorer.controls[name].value = value
    gc.collect()
    before = process.memory_info().rss
    images = set()
    for name, value in _moves(explorer, 200):
        explorer.controls[name].value = value
        assert explorer.error is None or not explorer.error.startswith("unexpected error"), explorer.error
        images.add(hash(explorer.image.value))
    gc.collect()
    grown = (process.memory_info().rss - before) / 2**20
    assert len(plt.get_fignums()) == figures, "an explorer left pyplot figures open"
    assert len(explorer.widget.children) == children, "the explorer's output grew"
    assert grown < 25, f"memory grew by {grown:.1f} MiB over 200 moves"
    assert len(images) > 1, "200 moves never changed the picture"


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda c: c.__name__)
def test_extreme_control_values_show_a_plot_or_a_one_line_message(cls):
    explorer = cls()
    for name, control in explorer.controls.items():
        options = getattr(control, "options", None)
        if options:
            values = [o[1] if isinstance(o, tuple) else o for o in options]
            extremes = [values[0], values[-1]]
        elif hasattr(control, "max") and hasattr(control, "min"):
            extremes = [control.min, control.max]
        else:
            continue
        for value in extremes:
            if value not in getattr(control, "options", [value]) and options:
                continue  # options may have changed (h follows d_model)
            control.value = value
            shown = [w.layout.display for w in (explorer.image, *explorer.readouts)]
            if explorer.error is None:
                assert explorer.image.value, f"{name}={value}: no picture and no message"
                assert shown == [None] * len(shown), f"{name}={value}: plot or readout hidden without a message"
            else:
                assert "\n" not in explorer.error and not explorer.error.startswith("unexpected error"), (
                    f"{name}={value}: {explorer.error}"
                )
                # The readouts describe the plot: a message replaces them too, or they would describe a stale one.
                assert shown == ["none"] * len(shown), f"{name}={value}: plot or readout still shown"


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda c: c.__name__)
def test_no_move_leaves_a_stale_background(cls):
    """After every move, the picture equals a render with every cached background drawn afresh, byte for byte."""
    explorer = cls()
    for name, value in _moves(explorer, 2 * len(explorer.controls)):
        explorer.controls[name].value = value
        if explorer.error is None:
            shown = explorer.image.value
            explorer.invalidate_background()
            assert explorer.render_png() == shown, f"{name}={value!r}"


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda c: c.__name__)
def test_moving_a_control_away_and_back_restores_the_first_picture(cls):
    """What is drawn depends on the controls only, not on what was drawn before (the first render included)."""
    explorer = cls()
    first = explorer.image.value
    for name, control in explorer.controls.items():
        start, value = control.value, neighbour(control)
        if value is None:
            continue
        control.value = value
        control.value = start
        assert explorer.image.value == first, f"{name}: {start!r} -> {value!r} -> back differs from the first picture"
