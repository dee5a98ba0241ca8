"""Lesson 14's snapshot explorer: its pure compute against the saved runs, and what each control changes."""

import numpy as np
import pytest

from mha_lesson.demos import circuits as dc
from mha_lesson.widgets import circuits as wc


@pytest.fixture(scope="module")
def runs():
    return dc.trained_runs()


def test_snapshot_serves_the_saved_maps_scores_and_both_losses(runs):
    step = 300
    data = wc.snapshot(runs, step, "two layers")
    i = runs[2].at(step)
    np.testing.assert_array_equal(data["maps"], runs[2].attention[i])
    np.testing.assert_array_equal(data["induction"], runs[2].induction[i, 1])
    np.testing.assert_array_equal(data["previous"], runs[2].previous[i, 0])
    assert data["loss"] == {2: runs[2].loss[i], 1: runs[1].loss[runs[1].at(step)]}
    one = wc.snapshot(runs, step, "one layer")
    assert one["maps"].mask[1].all() and not one["maps"].mask[0].any()  # no second layer to show
    np.testing.assert_array_equal(one["maps"][0], runs[1].attention[runs[1].at(step), 0])
    assert f"step {step}" in wc.describe(data) and "two layers" in wc.describe(data)


def test_snapshot_rejects_steps_and_models_it_does_not_have(runs):
    with pytest.raises(ValueError, match="step: expected a snapshot step"):
        wc.snapshot(runs, dc.EVERY + 1, "two layers")
    with pytest.raises(ValueError, match="model"):
        wc.snapshot(runs, 0, "three layers")


def test_explorer_opens_at_the_phase_change_and_each_control_changes_the_picture(runs):
    explorer = wc.CheckpointExplorer()
    assert explorer.controls["step"].value == dc.phase_change(runs[2])["step"]
    assert explorer.error is None
    first_image, first_text = explorer.image.value, explorer.text.value
    explorer.controls["step"].value = dc.STEPS
    assert explorer.image.value != first_image and f"step {dc.STEPS}" in explorer.text.value
    assert explorer.marker.get_xdata()[0] == dc.STEPS
    np.testing.assert_array_equal(explorer.images[2].get_array(), runs[2].attention[-1, 1, 0])
    two_layer_image = explorer.image.value
    explorer.controls["model"].value = "one layer"
    assert explorer.image.value != two_layer_image and "one layer" in explorer.text.value
    assert explorer.images[2].get_array().mask.all()  # layer 2 greyed out
    assert explorer.absent[2].get_text() and not explorer.absent[0].get_text()
    assert first_text != explorer.text.value


def test_the_slider_only_reaches_snapshot_steps(runs):
    slider = wc.CheckpointExplorer().controls["step"]
    reachable = range(slider.min, slider.max + 1, slider.step)
    assert list(reachable) == list(runs[2].steps) == list(runs[1].steps)
