"""Lesson 13 (training heads from scratch): the backward-step checks, the shipped h sweep (recomputed bit for bit)
and the claims the lesson prints from it, the low-rank fits, and the live training explorer's state machine."""

import threading
import time
from pathlib import Path

import numpy as np
import pytest

import mha_lesson as mha
from mha_lesson import _blas, gradients, training
from mha_lesson.attention import causal_mask
from mha_lesson.demos import training as lesson
from mha_lesson.widgets import training as wt

# --- the backward pass --------------------------------------------------------------------------------------------


def test_numeric_gradient_matches_a_closed_form_and_leaves_its_input_alone():
    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    kept = x.copy()
    grad = lesson.numeric_gradient(lambda z: float(np.sum(z**3)), x)
    np.testing.assert_allclose(grad, 3 * kept**2, atol=1e-8)
    np.testing.assert_array_equal(x, kept)


def test_every_backward_step_matches_central_differences():
    errors = lesson.step_checks()
    assert len(errors) == 6
    assert max(errors.values()) < 1e-7, errors


def test_a_wrong_backward_step_would_be_caught():
    """The check has teeth: a softmax backward without its row-sum term is off by far more than the tolerance."""
    rng = np.random.default_rng(1)
    s, d_a = rng.normal(size=6), rng.normal(size=6)
    a = mha.softmax(s)
    numeric = lesson.numeric_gradient(lambda z: float(mha.softmax(z) @ d_a), s)
    assert np.abs(a * d_a - numeric).max() > 1e-2
    np.testing.assert_allclose(gradients.softmax_backward(d_a, a), numeric, atol=1e-9)


def test_softmax_jacobian_is_diag_minus_outer_and_symmetric():
    s = np.random.default_rng(2).normal(size=5)
    a = mha.softmax(s)
    J = lesson.softmax_jacobian(a)
    loop = np.array([[a[j] * ((j == k) - a[k]) for k in range(5)] for j in range(5)])
    np.testing.assert_allclose(J, loop, atol=1e-15)
    numeric = np.stack([lesson.numeric_gradient(lambda z, j=j: mha.softmax(z)[j], s) for j in range(5)])
    np.testing.assert_allclose(J, numeric, atol=1e-9)
    d_a = np.arange(5.0)
    np.testing.assert_allclose(J.T @ d_a, gradients.softmax_backward(d_a, a), atol=1e-15)
    np.testing.assert_allclose(gradients.softmax_backward(d_a + 3, a), gradients.softmax_backward(d_a, a), atol=1e-15)


def test_the_whole_layer_matches_central_differences_for_every_input_and_weight():
    example = lesson.backward_example()
    errors = lesson.layer_gradient_errors(example)
    assert set(errors) == {"x", "w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o"}
    assert max(errors.values()) < 1e-7, errors


# --- the shipped sweep --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sweep():
    return lesson.load_sweep()


def test_the_shipped_sweep_has_every_run_and_checkpoint(sweep):
    assert set(sweep.entries) == {(h, s) for h in lesson.SWEEP_HS for s in lesson.SWEEP_SEEDS}
    assert set(sweep.deep) == set(lesson.SWEEP_SEEDS)
    np.testing.assert_array_equal(sweep.steps, np.arange(0, lesson.SWEEP_STEPS + 1, lesson.EVERY))
    for (h, _), e in sweep.entries.items():
        assert e.masses.shape == (len(sweep.steps), 1, h, 4) and e.readout.shape == (len(sweep.steps), 2)
        np.testing.assert_allclose(e.masses.sum(axis=-1), 1, atol=1e-5)  # causal: every row's weight is in 4 bins
        assert e.loss_windows.shape == (lesson.SWEEP_STEPS // lesson.WINDOW,) and len(e.digests) == len(sweep.steps)
    assert sweep.deep[0].masses.shape == (len(sweep.steps), 2, 1, 4)


@pytest.mark.parametrize(("h", "seed", "layers"), [(2, 0, 1), (16, 3, 1), (1, 1, 2)])  # (2, 0): lesson.LIVE's run
def test_shipped_entries_are_recomputed_bit_for_bit(sweep, h, seed, layers):
    if not sweep.is_reproducible_here():
        pytest.skip(f"made with numpy {sweep.numpy_version}, {sweep.blas}; here {np.__version__}, {lesson.blas_name()}")
    fresh = lesson.sweep_entry(h, seed, layers=layers, steps=2 * lesson.EVERY)
    shipped = sweep.deep[seed] if layers == 2 else sweep.entries[h, seed]
    assert lesson.same_entry(fresh, shipped, 2 * lesson.EVERY)


def test_same_entry_sees_a_one_bit_change(sweep):
    e = sweep.entries[2, 0]
    assert lesson.same_entry(e, e)
    changed = lesson.SweepEntry(**{**vars(e), "accuracy": np.nextafter(e.accuracy, 2)})
    assert not lesson.same_entry(e, changed)
    assert not lesson.same_entry(e, lesson.SweepEntry(**{**vars(e), "digests": e.digests[::-1]}))
    assert lesson.same_entry(e, e, lesson.EVERY)  # a prefix


def test_offset_masses_against_a_loop():
    trainer = training.Trainer("two_lookups", h=4, seed=5)
    trainer.run(30)
    masses = lesson.offset_masses(trainer)[0]  # (h, 4)
    _, _, caches = training.forward(trainer.model, trainer.held_out.tokens)
    w = caches[0].weights
    n = w.shape[-1]
    for head in range(4):
        bins = np.zeros(4)
        count = 0
        for b in range(len(w)):
            for t in range(2, n):
                for j in range(t + 1):
                    bins[min(t - j, 3)] += w[b, head, t, j]
                count += 1
        np.testing.assert_allclose(masses[head], bins / count, atol=1e-5)


def test_lookup_heads_and_division():
    masses = np.array([[0.1, 0.8, 0.1, 0.0], [0.0, 0.2, 0.7, 0.1], [0.25, 0.25, 0.25, 0.25]])
    assert lesson.lookup_heads(masses) == {1: [0], 2: [1]}
    assert lesson.divides_lookups(masses)
    assert not lesson.divides_lookups(masses[[0, 2]])  # nobody 2 back
    assert not lesson.divides_lookups(np.array([[0.0, 0.5, 0.5, 0.0]]))  # 0.5 is not more than half


# --- what the lesson says about the sweep ----------------------------------------------------------------------


def test_one_head_is_clearly_worse_and_narrow_heads_are_slow(sweep):
    at_1500, at_3000 = sweep.accuracy(1500), sweep.accuracy(3000)  # (h, seeds)
    median = dict(zip(lesson.SWEEP_HS, np.median(at_1500, axis=1), strict=True))
    later = dict(zip(lesson.SWEEP_HS, np.median(at_3000, axis=1), strict=True))
    assert at_1500[0].max() < 0.3  # h = 1: every seed
    assert at_1500[1].min() > 0.99 and at_1500[2].min() > 0.99  # h = 2 and 4: every seed
    assert median[8] < median[2] and median[16] < median[8]
    assert later[8] > median[8] + 0.02 and later[16] > median[16] + 0.02  # still climbing


def test_one_head_splits_its_weight_and_gets_one_lookup(sweep):
    i = sweep.at(lesson.HEADLINE)
    for s in lesson.SWEEP_SEEDS:
        e = sweep.entries[1, s]
        m = e.masses[i, 0, 0]
        assert m[1] > 0.3 and m[2] > 0.3
        assert e.readout[i].max() > 0.9 and e.readout[i].min() < 0.3


def test_two_heads_always_divide_the_lookups(sweep):
    rates = lesson.division_rates(sweep)
    assert rates[1] == 0 and rates[2] == 1


def test_no_width_one_head_gets_sharp(sweep):
    i = sweep.at(lesson.HEADLINE)
    assert max(sweep.entries[16, s].masses[i, 0, :, 1].max() for s in lesson.SWEEP_SEEDS) < lesson.SPECIALISED


def test_two_layers_of_one_head_make_both_lookups_by_looking_back_twice(sweep):
    i = sweep.at(lesson.HEADLINE)
    assert np.median([sweep.deep[s].accuracy[i] for s in lesson.SWEEP_SEEDS]) > 0.95
    layers = sweep.deep[0].masses[i, :, 0]  # (layers, 4)
    assert layers[0].argmax() == 1 and layers[1].argmax() == 1


# --- the low-rank bottleneck --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kl():
    n = lesson.LOW_RANK_N
    return {
        "content": lesson.kl_by_rank(lesson.lookup_target(n)),
        "previous": lesson.kl_by_rank(lesson.previous_target(n), mask=causal_mask(n)),
    }


def test_a_content_lookup_needs_width_n_minus_one(kl):
    d = {d_k: j for j, d_k in enumerate(lesson.LOW_RANK_DKS)}
    c = kl["content"]
    assert np.all(np.diff(c) <= 1e-4)  # never worse with more width
    assert c[d[1]] > 1 and c[d[8]] > 0.01
    assert c[d[12]] > 1e-4 and c[d[15]] < 1e-9  # exact (up to rounding) only at n - 1


def test_the_previous_token_pattern_needs_width_two_not_one(kl):
    d = {d_k: j for j, d_k in enumerate(lesson.LOW_RANK_DKS)}
    p = kl["previous"]
    assert p[d[1]] > 0.2 and p[d[2]] < 0.1 and p[d[15]] < 1e-9


def test_a_width_one_head_can_make_the_previous_token_pattern_by_construction():
    # Issue 23, item 1: v = (0, 1, -1, 2, -2, ..., 8), u_i = 4 sign(v_{i-1}), u_1 = -4, computed independently.
    n = lesson.LOW_RANK_N
    v = [0.0]
    for m in range(1, n):
        v.append(float((m + 1) // 2) if m % 2 else -float(m // 2))
    u = [-4.0, -4.0] + [4.0 * np.sign(v[i - 1]) for i in range(2, n)]
    want_u, want_v = lesson.alternating_previous_head(n)
    np.testing.assert_array_equal(want_v[:, 0], v)
    np.testing.assert_array_equal(want_u[1:, 0], u[1:])  # query 0 sees only itself: its weight is free
    assert v[-1] == 8 and want_u.shape == want_v.shape == (n, 1)
    scores = np.outer(u, v)
    assert np.abs(scores).max() == 32
    weights = []
    for i in range(1, n):  # a softmax over the keys 0..i the causal mask leaves, written out
        e = np.exp(scores[i, : i + 1] - scores[i, : i + 1].max())
        weights.append(e[i - 1] / e.sum())
    assert min(weights) >= 0.98
    # Training from the construction beats the SVD start at the same number of Adam steps, by far.
    target, mask = lesson.previous_target(n), causal_mask(n)
    for steps in (lesson.FIT_STEPS, lesson.LONG_FIT_STEPS):  # 400: 0.18 vs 0.37; 2,000: 0.14 vs 0.27
        svd = lesson.fit_low_rank(target, 1, mask, steps=steps).kl
        built = lesson.fit_low_rank(target, 1, mask, steps=steps, start=(want_u, want_v)).kl
        assert built < 0.7 * svd
    assert lesson.fit_low_rank(target, 1, mask, steps=lesson.LONG_FIT_STEPS, start=(want_u, want_v)).kl < 0.15


def test_the_lessons_exact_fit_is_the_figures_and_only_d_k_15_reaches_it():
    """The prose's "KL below 10^-k" is the threshold the KL figure marks with ▼, and the fits cross it at n - 1."""
    import json
    import re

    from mha_lesson.plots import training as pt

    cells = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "13_training_heads.ipynb").read_text())
    prose = "\n".join("".join(c["source"]) for c in cells["cells"] if c["cell_type"] == "markdown")
    stated = {float(f"1e-{k}") for k in re.findall(r"exact fit \(KL below \$10\^\{-(\d+)\}\$", prose)}
    assert stated == {pt.KL_FLOOR}
    target = lesson.lookup_target(lesson.LOW_RANK_N)
    assert lesson.fit_low_rank(target, lesson.LOW_RANK_N - 1).kl < pt.KL_FLOOR
    assert lesson.fit_low_rank(target, 12).kl > pt.KL_FLOOR


def test_fit_low_rank_rejects_a_start_of_the_wrong_shape():
    with pytest.raises(ValueError, match="start"):
        lesson.fit_low_rank(lesson.previous_target(16), 1, start=(np.zeros((16, 2)), np.zeros((16, 2))))


def test_row_kl_against_a_loop_and_the_fit_is_a_real_head():
    rng = np.random.default_rng(3)
    t, w = mha.softmax(rng.normal(size=(4, 4)), axis=-1), mha.softmax(rng.normal(size=(4, 4)), axis=-1)
    loop = [sum(t[i, j] * np.log(t[i, j] / w[i, j]) for j in range(4)) for i in range(4)]
    np.testing.assert_allclose(lesson.row_kl(t, w), loop, atol=1e-12)
    x = rng.normal(size=(16, 16))  # independent rows
    for d_k in (4, 15):  # a divisor of d_model, and not
        fit = lesson.fit_low_rank(lesson.lookup_target(16), d_k, steps=50)
        params = lesson.head_params_from_fit(fit, x)
        _, weights = mha.multi_head_attention(x, x, x, params)
        np.testing.assert_allclose(weights[0], fit.weights, atol=1e-8)
    with pytest.raises(ValueError, match="^x:"):
        lesson.head_params_from_fit(fit, x[:, :8])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"target": np.ones((3, 3)), "d_k": 1}, "^target:"),
        ({"target": lesson.lookup_target(4), "d_k": 5}, "^d_k:"),
        ({"target": lesson.lookup_target(4), "d_k": 0}, "^d_k:"),
    ],
)
def test_fit_low_rank_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        lesson.fit_low_rank(**kwargs)


def test_sweep_entry_rejects_steps_between_checkpoints():
    with pytest.raises(ValueError, match="^steps:"):
        lesson.sweep_entry(2, 0, steps=100)


# --- the live training explorer -----------------------------------------------------------------------------------


@pytest.fixture
def small(monkeypatch):
    """Short runs (STEPS 200, a redraw every 20 steps), so the state machine is tested in seconds."""
    monkeypatch.setattr(wt, "STEPS", 200)
    monkeypatch.setattr(wt, "REDRAW", 20)
    return wt.TrainingExplorer()


def finish(explorer):
    assert explorer.wait(timeout=120), "the training thread did not end"
    assert explorer.error is None, explorer.error


def uninterrupted_losses(h=2, seed=0, steps=200):
    return training.train("two_lookups", h=h, seed=seed, steps=steps).losses


def test_train_runs_to_the_end_and_matches_train(small):
    first = small.image.value
    assert not small.train_button.disabled and small.stop_button.disabled
    small.on_train()
    assert small.running and small.train_button.disabled and not small.stop_button.disabled
    finish(small)
    run = small.runs[2, 0]
    assert run.step == 200 and run.view["state"] == "trained"
    np.testing.assert_array_equal(run.trainer.losses, uninterrupted_losses())
    assert small.data["state"] == "trained" and small.image.value != first
    assert small.progress.value == 200 and small.train_button.description == "Train again"
    assert not small.train_button.disabled and small.stop_button.disabled
    checks = run.view["checks"]
    np.testing.assert_array_equal(checks[:, 0], np.arange(0, 201, 20))  # one held-out point per redraw


def test_the_explorer_can_open_on_a_finished_run_with_its_curves(monkeypatch):
    monkeypatch.setattr(wt, "STEPS", 200)
    monkeypatch.setattr(wt, "REDRAW", 20)
    explorer = wt.TrainingExplorer(start_trained=True)
    assert not explorer.running  # trained before the first picture, not on a thread
    run = explorer.runs[2, 0]
    assert explorer.data["state"] == "trained" and explorer.progress.value == 200
    np.testing.assert_array_equal(run.trainer.losses, uninterrupted_losses())  # the same run as train()
    np.testing.assert_array_equal(run.view["checks"][:, 0], np.arange(0, 201, 20))  # its accuracy curve
    assert explorer.train_button.description == "Train again"
    untrained = wt.TrainingExplorer()
    assert untrained.data["state"] == "untrained" and explorer.image.value != untrained.image.value


def test_plateau_frames_record_the_heads_of_one_uninterrupted_run():
    frames = lesson.plateau_frames(steps=(0, 40, 60))
    assert frames.attention.shape == (3, 2, 16, 16) and frames.masses.shape == (3, 2, 4)
    np.testing.assert_array_equal(frames.losses, uninterrupted_losses(steps=60))
    trainer = training.Trainer("two_lookups", h=2, seed=0)
    trainer.run(40)
    np.testing.assert_array_equal(frames.attention[1], trainer.attention()[0])
    # float32 means of a forward pass that BLAS may split differently between runs: equal to a few ulps, not bits
    np.testing.assert_allclose(frames.masses[1], lesson.offset_masses(trainer)[0], rtol=1e-6)
    with pytest.raises(ValueError, match="^steps:"):
        lesson.plateau_frames(steps=(0, 40, 40))


def test_on_the_plateau_both_heads_split_their_weight_then_divide_the_lookups():
    frames = lesson.plateau_frames()
    on_plateau = frames.masses[frames.steps.index(400)]  # (h, 4)
    assert np.all(np.abs(on_plateau[:, 1] - on_plateau[:, 2]) < 0.1)  # each head splits 1 back / 2 back evenly
    after = frames.masses[-1]
    assert sorted(after[:, 1:3].argmax(axis=1).tolist()) == [0, 1]  # one head 1 back, the other 2 back
    assert frames.loss[-1] < frames.loss[frames.steps.index(400)] / 10


def test_stop_then_train_again_resumes_exactly(small):
    small.on_train()
    deadline = time.monotonic() + 60
    while small.runs[2, 0].step < 40 and time.monotonic() < deadline:
        time.sleep(0.002)
    small.on_stop()
    finish(small)
    run = small.runs[2, 0]
    stopped_at = run.step
    assert 40 <= stopped_at < 200 and run.view["state"] == "stopped"
    assert small.data["state"] == "stopped" and small.train_button.description == "Resume"
    small.on_train()  # resumes
    finish(small)
    assert run.step == 200 and small.runs[2, 0] is run
    np.testing.assert_array_equal(run.trainer.losses, uninterrupted_losses())


def test_stop_before_the_first_step(small):
    with small.lock:  # the thread cannot take a step until the lock is free
        small.on_train()
        small.on_stop()
    finish(small)
    assert small.runs[2, 0].step == 0 and small.data["state"] == "stopped"


def test_a_double_click_starts_one_run(small):
    with small.lock:
        small.on_train()
        worker = small.worker
        small.on_train()  # the second click, before the button greys out in the page
        assert small.worker is worker
    finish(small)
    assert small.runs[2, 0].step == 200 and list(small.runs) == [(2, 0)]


def test_stop_and_moves_when_idle_change_nothing_but_the_picture(small):
    first = small.image.value
    small.on_stop()  # nothing runs: nothing happens
    assert not small.running and small.image.value == first
    small.controls["seed"].value = 1
    assert small.image.value != first and small.data["state"] == "untrained" and not small.runs
    small.controls["seed"].value = 0
    assert small.image.value == first


def test_changing_h_mid_run_stops_it_and_shows_the_new_setting(small):
    small.on_train()
    deadline = time.monotonic() + 60
    while small.runs[2, 0].step < 20 and time.monotonic() < deadline:
        time.sleep(0.002)
    small.controls["h"].value = 4  # mid-run
    finish(small)
    assert small.data["h"] == 4 and small.data["state"] == "untrained"
    assert small.runs[2, 0].view["state"] in ("stopped", "trained")
    shown = small.image.value
    small.on_train()  # trains the setting shown now
    finish(small)
    assert small.runs[4, 0].step == 200 and small.image.value != shown
    small.controls["h"].value = 2  # back: the earlier run, as it was left
    assert small.data["h"] == 2 and small.data["step"] == small.runs[2, 0].step


def test_an_error_in_the_thread_becomes_a_message_not_a_traceback(small, monkeypatch):
    def broken(self):
        raise FloatingPointError("loss: became nan at step 1")

    monkeypatch.setattr(training.Trainer, "step", broken)
    small.on_train()
    assert small.wait(timeout=60)
    assert small.error.startswith("training stopped: FloatingPointError") and not small.running
    assert not small.train_button.disabled


def _area(a, b):
    """Overlap of two display boxes in square pixels (0 when they only touch)."""
    return max(0.0, min(a.x1, b.x1) - max(a.x0, b.x0)) * max(0.0, min(a.y1, b.y1) - max(a.y0, b.y0))


@pytest.mark.parametrize("h", wt.HS)
def test_every_hs_picture_fits_a_laptop_with_square_maps_and_nothing_touching(h):
    """For each h: 588 CSS px wide, the maps square and inside the figure, and no two of the curves (with their
    labels), the text above the maps, the maps, their widest titles and the colour bar (with its labels) overlap."""
    explorer = wt.TrainingExplorer(h=h)
    fig = explorer.figure
    assert fig.get_figwidth() * explorer.css_dpi <= 588
    grid = explorer.grids[h]
    for i, title in enumerate(grid["titles"]):
        title.set_text(wt.map_title(i, 1.0, 1.0, h))  # as wide as a title gets
    renderer = fig.canvas.get_renderer()
    maps = [im.axes for im in grid["images"]]
    curves = fig.axes[:2]
    cbar = fig.axes[-1]
    (header,) = fig.texts
    for ax in maps:
        box = ax.get_window_extent(renderer)
        assert box.width == pytest.approx(box.height, abs=1), "a map is not square"
    boxes = {
        **{f"map {i}": ax.get_window_extent(renderer) for i, ax in enumerate(maps)},
        **{f"title {i}": t.get_window_extent(renderer) for i, t in enumerate(grid["titles"])},
        **{f"curves {i}": ax.get_tightbbox(renderer) for i, ax in enumerate(curves)},
        "colour bar": cbar.get_tightbbox(renderer),
        "text above the maps": header.get_window_extent(renderer),
    }
    names = list(boxes)
    for k, a in enumerate(names):
        b = boxes[a]
        assert fig.bbox.x0 <= b.x0 and b.x1 <= fig.bbox.x1 and fig.bbox.y0 <= b.y0 and b.y1 <= fig.bbox.y1, a
        for other in names[k + 1 :]:
            assert _area(b, boxes[other]) == 0, f"{a} overlaps {other}"
    # the bottom-left map's labels stay in the figure and clear of the map to its right
    rows, cols = wt.GRID[h]
    labelled = (rows - 1) * cols
    tight = maps[labelled].get_tightbbox(renderer)
    assert tight.x0 >= 0 and tight.y0 >= 0
    if cols > 1:
        assert _area(tight, maps[labelled + 1].get_window_extent(renderer)) == 0


def test_map_layout_fits_the_area_and_keeps_titles_apart():
    width = wt.FIGSIZE[0] - wt.MAPS_MARGINS[0] - wt.MAPS_MARGINS[1]
    height = wt.FIGSIZE[1] - wt.MAPS_MARGINS[2] - wt.MAPS_MARGINS[3]
    for rows, cols in wt.GRID.values():
        for title in (0.5, 1.0, 1.4):
            side, pitch = wt.map_layout(rows, cols, title)
            assert 0 < side <= wt.MAX_SIDE
            assert (cols - 1) * pitch + side <= width + 1e-9 and rows * side + (rows - 1) * wt.ROW_GAP <= height + 1e-9
            assert pitch >= side + wt.COLUMN_GAP and pitch >= title + wt.TITLE_GAP
    assert wt.map_layout(1, 1, 1.0)[0] == wt.MAX_SIDE  # one map alone: as large as allowed, not the whole area


def test_untrained_view_is_the_starting_model_and_checks_its_controls():
    view = wt.untrained_view(4, 3)
    trainer = training.Trainer("two_lookups", h=4, seed=3)
    np.testing.assert_allclose(view["attention"], trainer.attention()[0])
    assert view["step"] == 0 and view["state"] == "untrained" and view["masses"].shape == (4, 4)
    for bad in ({"h": 3}, {"seed": -1}, {"seed": wt.SEEDS}, {"seed": 1.5}):
        with pytest.raises(ValueError, match=f"^{next(iter(bad))}:"):
            wt.untrained_view(**{"h": 2, "seed": 0, **bad})


def test_the_thread_is_a_daemon_so_the_kernel_can_always_exit(small):
    with small.lock:
        small.on_train()
        assert isinstance(small.worker, threading.Thread) and small.worker.daemon
        small.on_stop()
    finish(small)


def test_blas_name_is_numpys_own_blas_when_another_is_loaded_first(monkeypatch):
    numpy_libs = Path(np.__file__).parent.with_name("numpy.libs")
    libs = [
        {"user_api": "blas", "internal_api": "openblas", "version": "0.3.30", "architecture": "Haswell",
         "filepath": str(numpy_libs.with_name("scipy.libs") / "libscipy_openblas.so")},
        {"user_api": "blas", "internal_api": "openblas", "version": "0.3.31", "architecture": "SkylakeX",
         "filepath": str(numpy_libs / "libscipy_openblas64_.so")},
    ]  # fmt: skip
    monkeypatch.setattr(_blas, "threadpool_info", lambda: libs)
    assert lesson.blas_name() == "openblas 0.3.31 SkylakeX"
    monkeypatch.setattr(_blas, "threadpool_info", lambda: libs[:1])  # a numpy linked to the system's BLAS
    assert lesson.blas_name() == "openblas 0.3.30 Haswell"


def test_the_primer_loop_shows_the_plateau_its_sentence_reads_off_the_run():
    """Lesson 13's ten-line loop: a slow stretch, then a fall to under 0.3 nats; the sentence is computed from it.

    Where the fall comes differs by tens of steps between BLAS builds, so the steps are read off the run, and the
    test checks what the sentence claims against the losses themselves.
    """
    import json

    path = Path(__file__).resolve().parents[1] / "notebooks" / "13_training_heads.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]) for c in cells]
    at = next(i for i, s in enumerate(sources) if "model.flat -= 0.5 * grad" in s)
    assert "step == 1 or step % 25 == 0" in sources[at] and "range(1, 301)" in sources[at]
    assert "lesson.find_plateau(losses)" in sources[at + 1] and "Markdown(" in sources[at + 1]
    model = training.init_model("two_lookups", h=2, layers=1, d_model=16, n=16, vocab=16, rng=np.random.default_rng(0))
    data, losses = np.random.default_rng(1), {}
    for step in range(1, 301):
        loss, grad = training.loss_and_grads(model, training.make_batch("two_lookups", data, 64, 16, 16))
        model.flat -= 0.5 * grad
        losses[step] = loss
    crawl = lesson.find_plateau(losses)
    stretch = range(crawl.start, crawl.end + 1, 25)
    assert len(stretch) >= 3  # at least 50 steps of crawl, as the text says "a plateau"
    assert all(losses[a] - losses[a + 25] < lesson.CRAWL for a in stretch[:-1])
    assert losses[crawl.end] - losses[crawl.end + 25] >= lesson.CRAWL  # the fall starts where the crawl ends
    assert losses[crawl.learned] < lesson.LEARNED <= min(losses[s] for s in range(25, crawl.learned, 25))
    assert crawl.learned - crawl.end <= 75 and losses[crawl.end] - losses[crawl.learned] > 1.5


def test_find_plateau_reads_a_hand_made_curve_and_refuses_one_without_a_fall():
    curve = {25: 5.0, 50: 3.0, 75: 2.9, 100: 2.8, 125: 2.7, 150: 1.5, 175: 0.1, 200: 0.05}
    assert lesson.find_plateau(curve) == lesson.Plateau(start=50, end=125, learned=175)
    with pytest.raises(ValueError, match="^losses: expected a checkpoint under 0.3"):
        lesson.find_plateau({25: 3.0, 50: 2.9})
    with pytest.raises(ValueError, match="^losses: expected a crawl"):
        lesson.find_plateau({25: 3.0, 50: 2.0, 75: 1.0, 100: 0.1})


def test_offset_grid_lays_runs_out_in_rows_of_three_with_readable_numbers():
    from matplotlib.figure import Figure

    from mha_lesson.plots import training as pt

    masses = {f"h = {h}": np.full((h, len(lesson.OFFSETS)), 1 / len(lesson.OFFSETS)) for h in (1, 2, 4, 8, 16)}
    fig = Figure()
    axes = pt.offset_grid(fig, masses)
    assert [ax.get_title() for ax in axes] == list(masses)
    assert [ax.get_subplotspec().rowspan.start for ax in axes] == [0, 0, 0, 1, 1]
    hidden = [ax for ax in fig.axes if not ax.get_visible()]
    assert len(hidden) == 1  # the sixth cell of the 2 x 3 grid
    printed = [t for ax in axes for t in ax.texts]
    assert len(printed) == 4 * (1 + 2 + 4 + 8)  # every cell of the panels of at most 8 heads, none for 16
    assert {t.get_text() for t in printed} == {"0.25"} and {t.get_fontsize() for t in printed} == {9}


def test_plateau_figure_keeps_the_step_0_dot_inside_and_names_the_keys_under_the_maps():
    """The review: the step-0 dot sat on the left spine, and "key position" floated far below the maps."""
    from matplotlib.figure import Figure

    from mha_lesson.plots import training as pt

    steps, h, n = (0, 10, 20), 2, 4
    frames = lesson.Frames(
        steps=steps,
        attention=np.full((len(steps), h, n, n), 1 / n),
        masses=np.full((len(steps), h, 4), 0.25),
        loss=np.array([3.0, 2.0, 1.0]),
        losses=np.linspace(3.0, 1.0, 20),
    )
    fig = Figure()
    pt.plateau_figure(fig, frames, np.arange(n))
    curve = fig.subfigs[0].axes[0]
    left, right = curve.get_xlim()
    assert left < 0 < steps[-1] < right  # both end dots inside the frame
    maps = fig.subfigs[1].axes[: len(steps) * h]
    assert [ax.get_xlabel() for ax in maps[-len(steps) :]] == ["", "key position", ""]
    assert {ax.get_xlabel() for ax in maps[: -len(steps)]} == {""}
