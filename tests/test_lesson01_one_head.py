"""Lesson 1's computed claims: one head's least-squares R^2 against independent computations, two heads exact,
the closed form and its shape, the trained preview, the paper's table, the flashcards' numbers and the explorer's
compute."""

import math
import re

import matplotlib
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

from mha_lesson.aids import flashcards as fc
from mha_lesson.demos import one_head as oh
from mha_lesson.plots import one_head as po
from mha_lesson.plots import style
from mha_lesson.training import forward, train
from mha_lesson.widgets import one_head as wo

TASK = oh.binding_task()


def normal_equations_r2(task: oh.BindingTask, alphas: tuple[float, ...]) -> float:
    """R^2 of the best maps from the normal equations (Z^T Z) W = Z^T Y, solved with np.linalg.solve."""
    z = np.concatenate([a * task.back1 + (1 - a) * task.back2 for a in alphas], axis=1)
    w = np.linalg.solve(z.T @ z, z.T @ task.target)
    y = task.target
    return 1 - np.sum((y - z @ w) ** 2) / np.sum(y**2)


def column_loop_r2(task: oh.BindingTask, alpha: float) -> float:
    """One head's R^2 with each output coordinate fitted on its own, by QR: residuals add up over coordinates."""
    z = alpha * task.back1 + (1 - alpha) * task.back2
    q, r = np.linalg.qr(z)
    residual = 0.0
    for j in range(task.target.shape[1]):
        y = task.target[:, j]
        w = np.linalg.solve(r, q.T @ y)  # the least-squares map of coordinate j, (d,)
        residual += float(np.sum((y - z @ w) ** 2))
    return 1 - residual / float(np.sum(task.target**2))


# --- one head: least squares against independent computations ---------------------------------------------------


@pytest.mark.parametrize("alpha", [0.0, 0.13, 0.5, 0.77, 1.0])
def test_one_head_r2_matches_normal_equations_and_a_column_loop(alpha):
    fit = oh.fit_heads(TASK, (alpha,))
    assert fit.r2 == pytest.approx(normal_equations_r2(TASK, (alpha,)), abs=1e-10)
    assert fit.r2 == pytest.approx(column_loop_r2(TASK, alpha), abs=1e-10)
    z = alpha * TASK.back1 + (1 - alpha) * TASK.back2
    np.testing.assert_allclose(fit.fitted, z @ fit.maps[0], atol=1e-12)


def test_r2_scan_is_fit_heads_at_every_alpha():
    alphas = np.linspace(0, 1, 7)
    expected = [normal_equations_r2(TASK, (a,)) for a in alphas]
    np.testing.assert_allclose(oh.r2_scan(TASK, alphas), expected, atol=1e-10)


def test_large_sample_r2_approaches_the_closed_form():
    big = oh.binding_task(samples=200_000, seed=0)  # the lesson's A and B (same seed), many more positions
    np.testing.assert_array_equal(big.a, TASK.a)
    alphas = np.linspace(0, 1, 11)
    # Sampling error of R^2 shrinks like sqrt(d / samples): about 0.006 here, so 0.02 fails a wrong formula.
    np.testing.assert_allclose(oh.r2_scan(big, alphas), oh.closed_form_r2(big.a, big.b, alphas), atol=0.02)
    # The closed-form best map, W* = (alpha A + (1 - alpha) B) / (alpha^2 + (1 - alpha)^2), at alpha = 0.3.
    w_star = (0.3 * big.a + 0.7 * big.b) / (0.3**2 + 0.7**2)
    np.testing.assert_allclose(oh.fit_heads(big, (0.3,)).maps[0], w_star, atol=0.03)


def test_closed_form_end_points_are_each_matrix_share_of_the_norm():
    aa, bb = np.sum(TASK.a**2), np.sum(TASK.b**2)
    np.testing.assert_allclose(oh.closed_form_r2(TASK.a, TASK.b, [1.0, 0.0]), [aa / (aa + bb), bb / (aa + bb)])


@given(st.integers(0, 10_000), st.integers(2, 12))
def test_best_single_head_is_the_maximum_of_the_closed_form_and_at_least_one_half(seed, d):
    task = oh.binding_task(d=d, samples=1, seed=seed)
    alpha, r2 = oh.best_single_head(task.a, task.b)
    grid = np.linspace(0, 1, 2001)
    curve = oh.closed_form_r2(task.a, task.b, grid)
    assert 0 <= alpha <= 1
    assert r2 == pytest.approx(float(oh.closed_form_r2(task.a, task.b, [alpha])[0]), abs=1e-12)
    assert curve.max() - 1e-12 <= r2 <= curve.max() + 1e-6  # the grid can only miss the peak by a little
    assert 0.5 - 1e-12 <= r2 <= 1  # the larger eigenvalue of G is at least half its trace


def test_best_single_head_is_one_when_both_lookups_share_a_map():
    alpha, r2 = oh.best_single_head(TASK.a, TASK.a)
    assert (alpha, r2) == pytest.approx((0.5, 1.0), abs=1e-12)
    same = oh.BindingTask(TASK.x, TASK.a, TASK.a)
    assert oh.fit_heads(same, (0.5,)).r2 == pytest.approx(1.0, abs=1e-10)


def test_lesson_numbers_best_single_head_about_one_half():
    alpha, r2 = oh.best_single_head(TASK.a, TASK.b)
    scan = oh.r2_scan(TASK, np.linspace(0, 1, 101))
    assert 0.5 <= r2 < 0.6 and scan.max() == pytest.approx(r2, abs=0.01)
    # A negative overlap <A, B> makes mixing hurt: the best head then attends to one key only.
    assert np.sum(TASK.a * TASK.b) < 0 and alpha in (0.0, 1.0)
    wide = [oh.best_single_head(t.a, t.b)[1] for t in (oh.binding_task(d=64, samples=1, seed=s) for s in range(50))]
    assert 0.5 <= min(wide) and max(wide) < 0.55


@given(st.integers(0, 10_000), st.integers(2, 12), st.floats(0, 1))
def test_closed_form_splits_into_a_slide_between_the_ends_and_an_overlap_bend(seed, d, alpha):
    task = oh.binding_task(d=d, samples=1, seed=seed)
    aa, bb, ab = np.sum(task.a**2), np.sum(task.b**2), np.sum(task.a * task.b)
    s_a, rho, beta = aa / (aa + bb), ab / (aa + bb), 1 - alpha
    slide = (alpha**2 * s_a + beta**2 * (1 - s_a)) / (alpha**2 + beta**2)
    bend = 2 * alpha * beta / (alpha**2 + beta**2) * rho
    assert oh.closed_form_r2(task.a, task.b, [alpha])[0] == pytest.approx(slide + bend, abs=1e-12)
    assert oh.closed_form_r2(task.a, task.b, [0.5])[0] == pytest.approx(0.5 + rho, abs=1e-12)


@given(st.integers(0, 10_000), st.integers(2, 12))
def test_a_sagging_curve_is_lowest_on_the_side_of_the_smaller_end(seed, d):
    # The bend is symmetric about 1/2 and the slide tilts it: the notebook's "lowest off the middle" sentence.
    task = oh.binding_task(d=d, samples=1, seed=seed)
    aa, bb, ab = np.sum(task.a**2), np.sum(task.b**2), np.sum(task.a * task.b)
    assume(ab < 0 and abs(aa - bb) > 1e-3 * (aa + bb))  # nearer, the minimum is within a grid step of 1/2
    fine = np.linspace(0, 1, 10_001)
    low = fine[oh.closed_form_r2(task.a, task.b, fine).argmin()]
    assert (low > 0.5) == (aa < bb)  # alpha = 1 gives R^2 = s_A: the smaller end when |A| < |B|


def test_the_lessons_curve_is_lowest_right_of_one_half_and_best_at_alpha_0():
    alphas = np.linspace(0, 1, 101)
    scan, closed = oh.r2_scan(TASK, alphas), oh.closed_form_r2(TASK.a, TASK.b, alphas)
    assert np.sum(TASK.a**2) < np.sum(TASK.b**2) and np.sum(TASK.a * TASK.b) < 0  # what the notebook's prose says
    assert 0.55 < alphas[scan.argmin()] < 0.7 and 0.55 < alphas[closed.argmin()] < 0.7
    assert scan.argmax() == 0 and scan[0] > scan[-1]
    two = oh.r2_scan(TASK, alphas, h=2)
    assert np.flatnonzero(two < 1 - 1e-9).tolist() == [50]  # the two heads' dip: alpha = 0.5 exactly, nowhere else


@given(st.integers(0, 10_000), st.integers(1, 12))
def test_the_curve_averages_exactly_one_half_over_swapped_and_sign_flipped_pairs(seed, d):
    # Random pairs come as likely as (B, A) and (A, -B): averaged over those four, R^2 is 1/2 at every alpha.
    task = oh.binding_task(d=d, samples=1, seed=seed)
    a, b = task.a, task.b
    alphas = np.linspace(0, 1, 11)
    four = [oh.closed_form_r2(p, q, alphas) for p, q in ((a, b), (b, a), (a, -b), (b, -a))]
    np.testing.assert_allclose(np.mean(four, axis=0), 0.5, atol=1e-12)


def test_pair_curves_of_random_pairs():
    alphas = np.linspace(0, 1, 101)
    curves, overlaps = oh.pair_curves(oh.D, 200, alphas)
    assert curves.shape == (200, 101) and overlaps.shape == (200,)
    np.testing.assert_allclose(curves[0], oh.closed_form_r2(TASK.a, TASK.b, alphas))  # pair 0 is the lesson's
    assert overlaps[0] == pytest.approx(np.sum(TASK.a * TASK.b) / np.sqrt(np.sum(TASK.a**2) * np.sum(TASK.b**2)))
    assert np.abs(curves.mean(axis=0) - 0.5).max() < 0.02  # the notebook prints this gap
    # The sign of the overlap decides where the best alpha lies: at an end when negative, inside when positive.
    tasks = [oh.binding_task(samples=1, seed=s) for s in range(200)]
    best = np.array([oh.best_single_head(t.a, t.b)[0] for t in tasks])  # (200,) alpha*
    assert np.all(np.isin(best[overlaps < 0], [0.0, 1.0]))
    assert np.all((best[overlaps > 0] > 0) & (best[overlaps > 0] < 1))
    assert np.all(np.isin(curves[overlaps < 0].argmax(axis=1), [0, 100]))  # the grid's best too, for the figure
    assert 0 < np.sum(overlaps < 0) < 200
    with pytest.raises(ValueError, match="^count: expected"):
        oh.pair_curves(oh.D, 0, alphas)


# --- two heads -------------------------------------------------------------------------------------------------


def test_two_heads_one_per_key_fit_exactly_with_maps_a_and_b():
    fit = oh.fit_heads(TASK, (1.0, 0.0))
    assert fit.r2 > 1 - 1e-10
    np.testing.assert_allclose(fit.maps[0], TASK.a, atol=1e-10)
    np.testing.assert_allclose(fit.maps[1], TASK.b, atol=1e-10)
    exact = oh.heads_output(TASK, (1.0, 0.0), (TASK.a, TASK.b))
    np.testing.assert_allclose(exact, TASK.target, atol=1e-12)


@given(st.floats(0, 1), st.floats(0, 1))
def test_two_heads_with_different_mixes_fit_exactly_and_equal_mixes_are_one_head(a0, a1):
    if abs(a0 - a1) >= 0.05:
        assert oh.fit_heads(TASK, (a0, a1)).r2 > 1 - 1e-10
    same = oh.fit_heads(TASK, (a0, a0)).r2
    assert same == pytest.approx(oh.fit_heads(TASK, (a0,)).r2, abs=1e-10)


def test_heads_mirror_weights_for_the_explorer():
    assert oh.heads_alphas(0.3, 1) == (0.3,) and oh.heads_alphas(0.3, 2) == (0.3, 0.7)
    curve = oh.r2_scan(TASK, [0.0, 0.25, 0.5, 0.75, 1.0], h=2)
    assert np.all(curve[[0, 1, 3, 4]] > 1 - 1e-10)
    assert curve[2] == pytest.approx(oh.fit_heads(TASK, (0.5,)).r2, abs=1e-10)


# --- the head is attention ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.01, 0.3, 0.5, 0.99])
def test_lookup_head_is_the_formula_run_by_scaled_dot_product_attention(alpha):
    x = TASK.x[:10]
    out = oh.lookup_head(x, alpha, TASK.b)
    expected = (alpha * x[1:-1] + (1 - alpha) * x[:-2]) @ TASK.b  # rows 2..9
    np.testing.assert_allclose(out[2:], expected, atol=1e-12)
    np.testing.assert_allclose(out[1], x[0] @ TASK.b, atol=1e-12)  # only key 0 is allowed
    assert np.all(out[0] == 0)  # no key at all: zero weights and zero output


def test_sentence_weights_are_convex_rows_with_the_lookups_sharp():
    w = oh.sentence_weights()
    n = len(oh.SENTENCE)
    np.testing.assert_allclose(w.sum(axis=-1), 1)
    assert np.all(w > 0)
    sharp = math.exp(oh.SHARP) / (math.exp(oh.SHARP) + n - 1)
    for query, key in oh.LOOKUPS.items():
        assert w[oh.SENTENCE.index(query), oh.SENTENCE.index(key)] == pytest.approx(sharp)
    rows = oh.two_needs_rows()
    it, too = (oh.SENTENCE.index(k) for k in oh.TWO_NEEDS[1])
    assert rows["one head"][it] == pytest.approx(rows["one head"][too]) and rows["one head"][it] < 0.5
    assert rows["head 0"].argmax() == it and rows["head 1"].argmax() == too
    values = oh.sentence_values()
    blend = rows["one head"] @ values
    assert max(oh.cosine(blend, values[it]), oh.cosine(blend, values[too])) < 0.8
    assert oh.cosine(rows["head 0"] @ values, values[it]) > 0.99
    # The notebook's aside: equal weights, yet the blend points closer to the longer value, v_too.
    assert np.linalg.norm(values[too]) > np.linalg.norm(values[it])
    assert oh.cosine(blend, values[too]) > oh.cosine(blend, values[it])


# --- bad input ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: oh.binding_task(d=0), "d"),
        (lambda: oh.binding_task(samples=-1), "samples"),
        (lambda: oh.fit_heads(TASK, ()), "alphas"),
        (lambda: oh.fit_heads(TASK, (1.5,)), "alpha"),
        (lambda: oh.head_mix(TASK, True), "alpha"),
        (lambda: oh.heads_output(TASK, (1.0, 0.0), (TASK.a,)), "maps"),
        (lambda: oh.heads_alphas(0.5, 3), "h"),
        (lambda: oh.closed_form_r2(TASK.a, TASK.b, [-0.1]), "alphas"),
        (lambda: oh.lookup_head(TASK.x[:5], 1.0, TASK.a), "alpha"),
    ],
)
def test_bad_arguments_raise_value_errors_naming_them(call, name):
    with pytest.raises(ValueError, match=rf"^{name}: expected"):
        call()


# --- the trained preview ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def preview():
    steps = range(0, oh.PREVIEW_STEPS + 1, oh.TRACE_EVERY)  # the notebook's checkpoints
    return {h: train("two_lookups", h=h, seed=0, steps=oh.PREVIEW_STEPS, checkpoints=steps) for h in (1, 2)}


def test_checkpoints_do_not_change_the_training(preview):
    plain = train("two_lookups", h=2, seed=0, steps=100)
    np.testing.assert_array_equal(plain.losses, preview[2].losses[:100])


def test_offset_weights_against_a_loop_over_queries():
    rng = np.random.default_rng(0)
    att = rng.random((3, 7, 7))
    got = oh.offset_weights(att)
    for head in range(3):
        for back in (1, 2):
            expected = sum(att[head, t, t - back] for t in range(2, 7)) / 5
            assert got[head, back - 1] == pytest.approx(expected)
    with pytest.raises(ValueError, match="^attention: expected"):
        oh.offset_weights(att[0])


def test_plateau_heads_are_near_copies_then_part(preview):
    """The notebook's plateau story: during the plateau the two heads split their weight like the one head and the
    two-head loss stays near the one-head loss; at the end each head looks mostly at a different key."""
    cps2, cps1 = preview[2].checkpoints, preview[1].checkpoints
    plateau, end = oh.PLATEAU_STEPS[0], oh.PLATEAU_STEPS[-1]
    w = oh.offset_weights(cps2[plateau].attention[0])  # (2 heads, 2 keys)
    one = oh.offset_weights(cps1[plateau].attention[0])[0]
    assert np.abs(w[0] - w[1]).max() < 0.1  # near copies
    assert np.all(w > 0.3) and np.all(one > 0.3)  # each splits between t-1 and t-2, like the one head
    assert cps2[plateau].loss > 0.8 * cps1[plateau].loss  # stuck near one head's loss
    assert cps2[oh.PLATEAU_STEPS[1]].loss > 0.8 * cps1[oh.PLATEAU_STEPS[1]].loss  # still there as the heads part
    assert cps2[oh.PLATEAU_STEPS[2]].loss < 0.5 * cps1[oh.PLATEAU_STEPS[2]].loss  # half-way down
    final = oh.offset_weights(cps2[end].attention[0])
    assert sorted(final.argmax(axis=1).tolist()) == [0, 1] and final.max(axis=1).min() > 0.6  # one key each
    assert cps2[end].loss < 0.01 and cps1[end].loss > 1
    # The difference between the heads grows slowly, then fast.
    gaps = [np.abs(np.diff(oh.offset_weights(cps2[s].attention[0]), axis=0)).max() for s in oh.PLATEAU_STEPS]
    assert gaps == sorted(gaps) and gaps[2] > 3 * gaps[0]


def test_trained_preview_one_head_learns_one_lookup_and_two_heads_both(preview):
    one, two = preview[1], preview[2]
    assert one.accuracy < 0.5 and two.accuracy > 0.95
    back1, back2 = one.trainer.readout_accuracy()
    assert back1 > 0.9 and back2 < 0.5
    q = np.arange(2, one.config["n"])
    offsets = [1 + int(head[q, q - 2].mean() > head[q, q - 1].mean()) for head in two.attention[0]]
    assert sorted(offsets) == [1, 2]  # the two heads look at different keys


def test_swapped_lookups_counts_the_two_back_read_out_outputting_the_token_one_back(preview):
    for h, expected_low in ((1, False), (2, True)):
        trainer = preview[h].trainer
        tokens = trainer.held_out.tokens
        predicted = forward(trainer.model, tokens)[0].argmax(axis=-1)  # (batch, n, 2)
        hits = total = 0
        for seq, pred in zip(tokens, predicted, strict=True):  # a loop over positions, from the tokens themselves
            for t in range(2, len(seq)):
                if seq[t - 1] != seq[t - 2]:
                    total += 1
                    hits += int(pred[t, 1] == seq[t - 1])
        swapped = oh.swapped_lookups(trainer)
        assert swapped == pytest.approx(hits / total)
        assert (swapped < 0.01) if expected_low else (swapped > 0.5)


# --- the paper's table and the flashcards ----------------------------------------------------------------------


def test_table3_rows_have_equal_computation_and_show_both_ends_worse():
    rows = {r.h: r for r in oh.TABLE3_A}
    assert list(rows) == [1, 4, 8, 16, 32]
    assert all(r.h * r.d_k == 512 for r in rows.values())
    best = max(r.bleu for r in rows.values())
    assert round(best - rows[1].bleu, 1) == 0.9  # "single-head attention is 0.9 BLEU worse than the best setting"
    assert rows[32].bleu < best and rows[32].ppl > min(r.ppl for r in rows.values())
    table = oh.table3_markdown()
    assert "| 1 | 512 | 512 | 5.29 | 24.9 | 0.9 |" in table and "8 (base)" in table


def test_lesson_01_flashcards_state_computed_facts():
    cards = {c.question: c.answer for c in fc.load_deck() if c.section.startswith("Lesson 01:")}
    assert len(cards) >= 2
    paper = next(a for q, a in cards.items() if "Table 3" in q)
    rows = {r.h: r for r in oh.TABLE3_A}
    for number in (f"{rows[1].bleu}", f"{rows[8].bleu}", f"{rows[32].bleu}", f"d_k = {rows[32].d_k}"):
        assert number in paper
    assert f"{max(r.bleu for r in rows.values()) - rows[1].bleu:.1f} BLEU worse" in paper
    half = next(a for q, a in cards.items() if "independent random A and B" in q)
    assert "about 0.5" in half and 0.5 <= oh.best_single_head(TASK.a, TASK.b)[1] < 0.6
    exact = next(a for q, a in cards.items() if "two heads fit" in q)
    assert "R² = 1" in exact and oh.fit_heads(TASK, (1.0, 0.0)).r2 > 1 - 1e-10
    assert re.search(r"W_0 \+ W_1", next(a for q, a in cards.items() if "no better than one" in q))
    end = next(a for q, a in cards.items() if "one key only" in q)
    assert "R²(1/2) = 1/2 + <A, B> / (|A|² + |B|²)" in end and "negative weight" in end
    aa, bb, ab = np.sum(TASK.a**2), np.sum(TASK.b**2), np.sum(TASK.a * TASK.b)
    assert oh.closed_form_r2(TASK.a, TASK.b, [0.5])[0] == pytest.approx(0.5 + ab / (aa + bb))
    trained = next(a for q, a in cards.items() if "trained one-head model" in q)
    assert "mostly outputs that same token" in trained  # test_swapped_lookups_... measures it
    plateau = next(a for q, a in cards.items() if "plateau" in q)
    assert "near copies" in plateau and "same mix" in plateau  # test_plateau_heads_... measures it


# --- the explorer's compute ------------------------------------------------------------------------------------


def test_explorer_compute_looks_up_the_fits_of_the_grid():
    for h in (1, 2):
        data = wo.one_head_fit(0.25, h)
        assert data["r2"] == pytest.approx(normal_equations_r2(TASK, oh.heads_alphas(0.25, h)), abs=1e-10)
        np.testing.assert_allclose(data["weights"].sum(axis=-1), 1)
        assert data["weights"].shape == (h, 2) and data["weights"][0].tolist() == [0.25, 0.75]  # on key t-1, key t-2
        fitted = oh.fit_heads(TASK, oh.heads_alphas(0.25, h)).fitted[: wo.POINTS, wo.OUTPUT]
        np.testing.assert_allclose(data["fitted"], fitted, atol=1e-12)
        np.testing.assert_allclose(data["target"], TASK.target[: wo.POINTS, wo.OUTPUT])
    assert wo.one_head_fit(0.15000000000000002)["alpha"] == 0.15  # a float slider's value lands on the grid
    assert wo.one_head_fit(0.5, 2)["r2"] == pytest.approx(wo.one_head_fit(0.5, 1)["r2"], abs=1e-10)
    curves = wo.one_head_fit()["curves"]
    np.testing.assert_allclose(curves[1], oh.r2_scan(TASK, wo.ALPHAS), atol=1e-10)


@pytest.mark.parametrize(
    ("alpha", "h", "name"), [(1.2, 1, "alpha"), (-0.1, 2, "alpha"), ("a", 1, "alpha"), (0.5, 3, "h")]
)
def test_explorer_compute_rejects_invalid_controls(alpha, h, name):
    with pytest.raises(ValueError, match=rf"^{name}: expected"):
        wo.one_head_fit(alpha, h)


def test_explorer_controls_move_the_marker_the_bars_and_the_points():
    ex = wo.one_head_explorer()
    assert ex.error is None and ex.data["alpha"] == 0.5 and "R² = " in ex.text.value
    png = ex.image.value
    ex.controls["alpha"].value = 0.8
    assert ex.marker.get_data()[0][0] == 0.8 and ex.marker.get_data()[1][0] == pytest.approx(ex.data["r2"])
    assert [b.get_height() for b in ex.bars[0]] == pytest.approx([0.8, 0.2])  # key t-1 (alpha), then key t-2
    assert [b.get_height() for b in ex.bars[1]] == [0.0, 0.0]  # one head: head 1's bars stay empty
    shown = [t.get_text() for t in ex.legend.get_texts() if t.get_visible()]
    assert shown == ["head 0"]  # and the legend does not list head 1
    assert ex.image.value != png
    ex.controls["h"].value = 2
    assert [b.get_height() for b in ex.bars[1]] == pytest.approx([0.2, 0.8])  # head 1: 1 - alpha on key t-1
    assert [t.get_text() for t in ex.legend.get_texts() if t.get_visible()] == ["head 0", "head 1"]
    assert ex.data["r2"] > 1 - 1e-10 and "R² = 1.000" in ex.points.axes.get_title()
    np.testing.assert_allclose(ex.points.get_data()[1], ex.data["fitted"])
    assert "head 1 reads 0.20·x" in ex.text.value


@pytest.mark.parametrize(("alpha", "h"), [(0.0, 1), (1.0, 1), (0.3, 1), (0.3, 2)])
def test_the_scatter_title_gives_the_r2_of_the_points_it_draws(alpha, h):
    """The scatter's title states the R^2 of its own points (a loop over what is drawn), not another quantity."""
    ex = wo.one_head_explorer(alpha=alpha, h=h)
    target, fitted = (np.asarray(v, float) for v in ex.points.get_data())
    mean = sum(target) / len(target)
    residual = total = 0.0
    for t, f in zip(target, fitted, strict=True):
        residual += (t - f) ** 2
        total += (t - mean) ** 2
    title = ex.points.axes.get_title()
    match = re.search(r"R² = (-?\d\.\d{3})", title)
    assert match and f"coordinate {wo.OUTPUT}" in title, title
    assert float(match.group(1)) == pytest.approx(1 - residual / total, abs=5e-4), title


def test_the_scatter_at_the_two_ends_reads_as_its_title_says():
    """At alpha = 1 the drawn points sit much closer to the diagonal than at 0, and the titles say so (the issue:
    titles 0.460 and 0.540 over all coordinates, while the points drawn have about 0.73 and 0.27)."""
    ends = [wo.one_head_fit(a, 1)["r2_shown"] for a in (0.0, 1.0)]
    assert ends[1] > ends[0] + 0.3


@pytest.mark.parametrize(("alpha", "h"), [(0.0, 1), (1.0, 1), (0.0, 2), (0.5, 2)])
def test_no_bar_covers_the_legend(alpha, h):
    ex = wo.one_head_explorer(alpha=alpha, h=h)
    renderer = ex.figure.canvas.get_renderer()
    legend = ex.legend.get_window_extent(renderer)
    for bars in ex.bars:
        for bar in bars:
            if bar.get_height() > 0:
                assert not bar.get_window_extent(renderer).overlaps(legend), (alpha, h, bar.get_height())


# --- the figures read ----------------------------------------------------------------------------------------------


def wcag_luminance(rgb) -> float:
    """WCAG 2 relative luminance of an sRGB colour (three numbers in 0..1)."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def wcag_contrast(fg, bg) -> float:
    """WCAG 2 contrast ratio (L_light + 0.05) / (L_dark + 0.05), from 1 to 21."""
    high, low = sorted((wcag_luminance(fg), wcag_luminance(bg)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def colours_beneath(text, image, renderer) -> list[tuple[float, ...]]:
    """The colours of the image's cells that a text's box covers (cells are 1 data unit wide, centred on integers)."""
    box = text.get_window_extent(renderer).transformed(image.axes.transData.inverted())
    data = image.get_array()
    rows, cols = data.shape
    (x0, x1), (y0, y1) = sorted((box.x0, box.x1)), sorted((box.y0, box.y1))
    cells = [
        (i, j)
        for i in range(rows)
        for j in range(cols)
        if j - 0.5 < x1 and j + 0.5 > x0 and i - 0.5 < y1 and i + 0.5 > y0
    ]
    assert cells, f"{text.get_text()!r} covers no cell"
    return [image.cmap(image.norm(data[i, j])) for i, j in cells]


def lesson_figure(size) -> Figure:
    """A figure as a lesson draws it: the series' style (constrained layout, font sizes) at the CSS dpi."""
    with matplotlib.rc_context(style.RC):
        fig = Figure(figsize=size, dpi=style.DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def test_wcag_contrast_of_known_pairs():
    assert wcag_contrast((0, 0, 0), (1, 1, 1)) == pytest.approx(21)
    assert wcag_contrast((1, 0, 0), (1, 1, 1)) == pytest.approx(4.0, abs=0.01)  # red on white, a textbook value


def test_sentence_map_labels_read_against_the_cells_beneath():
    """The issue: red labels on viridis' dark purple had low contrast. Each label reaches 4.5 (WCAG 2, normal text)
    against every cell its text covers."""
    fig = lesson_figure(style.figsize(5.5))  # the notebook's size
    ax = fig.subplots()
    weights = oh.sentence_weights()
    image = po.sentence_map(ax, weights, oh.SENTENCE, oh.LOOKUPS, title="One head, two lookups in two different rows")
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    labels = [t for t in ax.texts if "→" in t.get_text()]
    assert len(labels) == len(oh.LOOKUPS)
    for label in labels:
        colour = to_rgb(label.get_color())
        worst = min(wcag_contrast(colour, bg) for bg in colours_beneath(label, image, renderer))
        assert worst >= 4.5, (label.get_text(), worst)
    assert wcag_contrast(to_rgb("red"), image.cmap(0.0)) < 4.5  # the colour the issue saw did not


def text_boxes(fig: Figure, renderer) -> list[tuple[str, object]]:
    """Every visible, non-empty title, axis label and free text of fig and its subfigures, with its window extent."""
    texts = []
    for sub in [fig, *fig.subfigs]:
        if getattr(sub, "_suptitle", None) is not None:
            texts.append(sub._suptitle)
    for ax in fig.get_axes():
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
    return [(t.get_text(), t.get_window_extent(renderer)) for t in texts if t.get_visible() and t.get_text().strip()]


def test_plateau_figure_titles_stand_apart_and_the_maps_show_each_position(preview):
    """The issue: the map titles ran together, the maps were too small to tell t-1 from t-2, the title was cramped.
    No two titles or labels overlap, all lie inside the figure, a map's cell is at least 9 CSS pixels, and the mean
    weights printed on each map read against the cells beneath them and equal offset_weights; all that in a figure
    no wider than style.WIDTH and at most 800 CSS pixels tall (issue 30: a laptop)."""
    width, height = po.PLATEAU_FIGSIZE
    assert width <= style.WIDTH and height * style.DPI <= 800
    steps = list(range(0, oh.PREVIEW_STEPS + 1, oh.TRACE_EVERY))
    trace = np.stack([oh.offset_weights(preview[2].checkpoints[s].attention[0]) for s in steps])
    losses = {
        name: np.array([preview[h].checkpoints[s].loss for s in steps])
        for h, name in ((1, "one head"), (2, "two heads"))
    }
    maps = {s: preview[2].checkpoints[s].attention[0] for s in oh.PLATEAU_STEPS}
    fig = lesson_figure(po.PLATEAU_FIGSIZE)
    with matplotlib.rc_context(style.RC):
        po.plateau(fig, steps, trace, losses, maps)
        renderer = fig.canvas.get_renderer()
        fig.draw(renderer)
    boxes = text_boxes(fig, renderer)
    whole = fig.bbox
    assert len(boxes) > 20
    for k, (name, box) in enumerate(boxes):
        assert whole.x0 <= box.x0 and box.x1 <= whole.x1 and whole.y0 <= box.y0 and box.y1 <= whole.y1, name
        for other, box2 in boxes[k + 1 :]:
            assert not box.overlaps(box2), (name, other)
    images = [ax.images[0] for ax in fig.get_axes() if ax.images]
    assert len(images) == 2 * len(oh.PLATEAU_STEPS)
    for image in images:
        n = image.get_array().shape[0]
        cell = image.axes.get_window_extent(renderer).width / n  # CSS pixels: the figure's dpi is the CSS dpi
        assert cell >= 9, cell
        (text,) = image.axes.texts
        assert min(wcag_contrast(to_rgb(text.get_color()), bg) for bg in colours_beneath(text, image, renderer)) >= 4.5
    printed = [image.axes.texts[0].get_text() for image in images]
    for step, att in maps.items():
        for head, (t1, t2) in enumerate(oh.offset_weights(att)):
            assert f"t−1: {t1:.2f}\nt−2: {t2:.2f}" in printed, (step, head)
