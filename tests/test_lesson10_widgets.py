"""Lesson 10's explorer: its pure compute function and what each control changes in the picture."""

import io

import numpy as np
import pytest
from PIL import Image

from mha_lesson import cost
from mha_lesson.demos import complexity as cx
from mha_lesson.widgets._base import divisors
from mha_lesson.widgets.complexity import (
    D_MODEL_OPTIONS,
    FLOPS_RANGE,
    N_OPTIONS,
    complexity_data,
    complexity_explorer,
)


@pytest.fixture(scope="module")
def shared():
    """One explorer for the module (building one costs a full render); each test starts it at the defaults."""
    return complexity_explorer()


@pytest.fixture
def e(shared):
    shared.set(n=4096, d_model=512, h=8)
    return shared


def test_complexity_data_matches_cost_and_the_crossover():
    data = complexity_data(2048, 768, 12)
    assert data["parts"] == cost.flop_count(2048, 2048, 768, 12)
    assert data["n_star"] == cx.crossover_n(768, 12)
    quad = sum(data["parts"][p] for p in cx.QUADRATIC_PARTS)
    assert data["quadratic_share"] == quad / data["parts"]["total"]
    for j, n in enumerate(data["ns"][:3]):
        assert data["curves"]["total"][j] == cost.flop_count(int(n), int(n), 768, 12)["total"]


def test_quadratic_share_crosses_one_half_at_the_crossover():
    n_star = cx.crossover_n(512, 8)
    assert (
        complexity_data(int(n_star), 512, 8)["quadratic_share"]
        < 0.5
        < complexity_data(int(n_star) + 1, 512, 8)["quadratic_share"]
    )


def test_compute_rejects_heads_that_do_not_divide_d_model():
    with pytest.raises(ValueError, match="h: expected a divisor"):
        complexity_data(1024, 512, 7)


def test_defaults_and_controls():
    e = complexity_explorer()  # a fresh one: the defaults come from construction
    assert e.error is None and e.values() == {"n": 4096, "d_model": 512, "h": 8}
    assert list(e.controls["h"].options) == divisors(512)
    assert N_OPTIONS[0] == 16 and N_OPTIONS[-1] == 65536 and 4096 in N_OPTIONS
    assert "1,004.4 tokens" in e.readout.value and "past" in e.readout.value


def test_moving_n_moves_the_marker_and_changes_the_picture(e):
    before = e.image.value
    e.set(n=256)
    assert list(e.plot.n_lines[0].get_xdata()) == [256, 256]
    assert e.image.value != before
    assert "below" in e.readout.value
    share = complexity_data(256, 512, 8)["quadratic_share"]
    assert f"{100 * share:.1f}%" in e.readout.value


def test_changing_d_model_keeps_h_valid_and_moves_the_crossover(e):
    e.controls["d_model"].value = 384
    assert e.controls["h"].value in divisors(384) and list(e.controls["h"].options) == divisors(384)
    e.set(d_model=768, h=12)
    assert e.error is None
    assert list(e.plot.cross_lines[0].get_xdata()) == [cx.crossover_n(768, 12)] * 2
    # The top of the stacked bands is the total FLOPs curve (plus the log floor it is stacked on).
    top = e.plot.abs_bands[-1].get_paths()[0].vertices
    data = complexity_data(4096, 768, 12)
    upper = top[: len(data["ns"]), 1]
    assert np.allclose(upper, FLOPS_RANGE[0] + data["curves"]["total"])


def test_fixed_flop_axis_covers_every_setting():
    low = min(complexity_data(N_OPTIONS[0], d, 1)["parts"]["total"] for d in D_MODEL_OPTIONS)
    high = max(complexity_data(N_OPTIONS[-1], d, d)["parts"]["total"] for d in D_MODEL_OPTIONS)
    assert FLOPS_RANGE[0] < low and high < FLOPS_RANGE[1]


def test_blitted_picture_matches_a_full_redraw(e):
    e.set(n=96, d_model=256, h=4)
    blitted = np.asarray(Image.open(io.BytesIO(e.image.value)).convert("RGB"), dtype=int)
    for artist in e.plot.dynamic:
        artist.set_animated(False)
    try:
        e.canvas.draw()  # everything, in matplotlib's own z-order
        full = np.asarray(e.canvas.buffer_rgba(), dtype=int)[..., :3].copy()
    finally:
        for artist in e.plot.dynamic:
            artist.set_animated(True)
    assert blitted.shape == full.shape
    differs = np.abs(blitted - full).max(axis=-1) > 40
    assert differs.mean() < 1e-4  # a handful of anti-aliased pixels at most


def test_h_moves_only_the_softmax_share(e):
    e.set(h=1)
    one = dict(e.data["parts"])
    e.set(h=64)
    many = e.data["parts"]
    assert {p for p in cost.PARTS if one[p] != many[p]} == {"softmax"}
