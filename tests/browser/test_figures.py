"""Every figure at its natural size in JupyterLab: never stretched or shrunk much, and sharp on a HiDPI screen.

The sizes come from the same visit as the other browser tests (conftest.Lab): every image in the outputs is
measured in windows 1400, 1200 and 1600 pixels wide, and in a 1024-pixel one with the file browser open, before any
control moves. The HiDPI test runs one lesson
in a window of device pixel ratio 2 and saves screenshots of an explorer and a static figure to
build/screenshots/ for a person to look at.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import _lab

pytestmark = pytest.mark.browser  # `notebook` is parametrized over notebooks/*.ipynb by conftest

SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"
HIDPI_NOTEBOOK = "01_one_head_is_not_enough.ipynb"  # an explorer and static figures
HIDPI_EXPLORER = "OneHeadExplorer"  # drawn at pixel ratio 2 (most explorers stay at 1: see Explorer.pixel_ratio)


def test_every_image_shows_at_its_natural_size(lab, notebook):
    visit = lab.visit(notebook)
    assert visit.images.get(1400) is not None, "the visit measured no images"
    assert not visit.image_size_problems, "\n".join(visit.image_size_problems)


def test_no_explorer_image_grows_with_the_window(lab, notebook):
    visit = lab.visit(notebook)
    assert not visit.growing_explorers, "\n".join(visit.growing_explorers)


def test_static_figures_carry_two_pixels_per_css_pixel(lab, notebook):
    """Retina PNGs: the page shows them at half their pixel width, so a DPR-2 screen gets every pixel."""
    visit = lab.visit(notebook)
    flat = [
        f"cell {img['cell']}: {img['pixels']} pixels shown at {img['shown']:.0f} CSS px"
        for img in visit.images.get(1400, [])
        if not img["explorer"] and img["pixels"] < 1.9 * img["shown"]
    ]
    assert not flat, "\n".join(flat)


def test_an_explorer_and_a_static_figure_are_sharp_at_device_pixel_ratio_2(lab):
    if not (lab.server.root / HIDPI_NOTEBOOK).exists():
        pytest.skip(f"{HIDPI_NOTEBOOK} is not among the notebooks under test")
    shots = _lab.hidpi_screenshots(lab.context.browser, lab.server, HIDPI_NOTEBOOK, SCREENSHOTS, HIDPI_EXPLORER)
    assert set(shots) == {"explorer", "figure"}
    for kind, shot in shots.items():
        assert shot.path.stat().st_size > 0, kind
        # Two image pixels for each CSS pixel: every screen pixel gets its own, so text is as sharp as the screen.
        assert shot.density >= 1.95, f"{kind}: {shot.pixels} pixels shown at {shot.shown:.0f} CSS px"


def test_explorers_fit_a_laptop_window_with_the_file_browser_open(lab, notebook):
    """At 1024 pixels with the file browser open: scaled down without stretching where an explorer does not fit,
    at its natural size where it does, and nothing cut off or scrolling sideways."""
    visit = lab.visit(notebook)
    assert not visit.laptop_problems, "\n".join(visit.laptop_problems)
