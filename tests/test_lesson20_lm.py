"""Lesson 20 (your own language model): the head-role patterns, distance profiles, ablations and the mixed data,
each against a hand computation or a loop; the shipped runs against their regenerating code and the lesson's claims."""

from pathlib import Path

import nbformat
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from mha_lesson import circuits, lm
from mha_lesson.demos import lm as lesson
from mha_lesson.lm import corpus
from mha_lesson.plots import lm as plots
from mha_lesson.plots import style

LESSON = Path(__file__).resolve().parents[1] / "notebooks" / "20_your_own_language_model.ipynb"
READABLE_PX = max(style.MIN_TEXT_PX, 10.0)  # the series' rule: no text under 10 CSS px where the figure is shown
SCREEN_PX = 800  # CSS pixels: a figure no taller fits a laptop screen (issue 30)
TIGHT_PAD_PX = 12  # CSS pixels that bbox_inches='tight' adds to a figure's width (as in test_figure_style)


@pytest.fixture(scope="module")
def shipped():
    return lesson.load_model()


@pytest.fixture(scope="module")
def data():
    return corpus.load()


def cells(pattern: np.ndarray, text: str) -> list[tuple[str, str]]:
    return [(text[i], text[j]) for i, j in zip(*np.nonzero(pattern), strict=True)]


# --- head roles -------------------------------------------------------------------------------------------------


def test_role_patterns_mark_the_keys_each_role_names():
    text = "x\n\nKing.\nSo be it\n\nQueen.\nAy"
    p = lesson.role_patterns(text)
    assert list(p) == list(lesson.ROLES) and all(m.shape == (len(text), len(text)) for m in p.values())
    assert np.array_equal(p["previous character"], np.eye(len(text), k=-1, dtype=bool))
    assert np.array_equal(p["itself"], np.eye(len(text), dtype=bool))
    # "be": too short for a word start two letters back; "King." from its third character on
    assert cells(p["start of the word"], text)[:3] == [("n", "K"), ("g", "K"), (".", "K")]
    assert ("e", "b") not in cells(p["start of the word"], text)
    i = text.index("it") + 1  # the "t" of "it": line "So be it" started 7 characters earlier
    assert [text[j] for j in np.nonzero(p["start of the line"][i])[0]] == ["S"]
    assert [text[j] for j in np.nonzero(p["speaker's name"][i])[0]] == list("King")
    j = text.index("Ay") + 1  # after the blank line a new speech: Queen's
    assert [text[k] for k in np.nonzero(p["speaker's name"][j])[0]] == list("Queen")
    # spaces and line breaks up to the query; an earlier copy of the character, not the previous one
    i = text.index("it")
    assert set(np.nonzero(p["a space or line break"][i])[0]) == {j for j in range(i - 1) if text[j].isspace()}
    assert not p["same character earlier"][text.index(" it")].any()  # a space's earlier spaces: the space role's
    verse = "\nAnd I am sick at heart.\nSo be it"  # a verse line ending in a full stop is not a speaker's name
    assert not lesson.role_patterns(verse)["speaker's name"].any()
    assert ("e", "e") in cells(p["same character earlier"], text)
    for i in range(1, len(text)):
        assert not p["same character earlier"][i, i - 1]
    with pytest.raises(ValueError, match="text: expected a non-empty string"):
        lesson.role_patterns("")


def test_pooled_role_scores_give_one_for_a_perfect_head_and_the_baseline_for_a_uniform_one():
    texts = ["To be, or not to be: that", "is the question: whether t"]
    T = len(texts[0])
    texts = [t[:T] for t in texts]
    previous = np.eye(T, k=-1)
    previous[0, 0] = 1.0  # row 0 has no previous character: any valid row
    uniform = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
    weights = np.stack([previous, uniform])[None, None].repeat(2, axis=1)  # (1 layer, 2 texts, 2 heads, T, T)
    scores = lesson.pooled_role_scores(weights, texts)
    assert scores["previous character"][0, 0] == pytest.approx(1.0)
    for role in lesson.ROLES:
        assert scores[role][0, 1] == pytest.approx(float(scores[f"uniform: {role}"]))
        # The same maps on both texts: each head's position habit is its map, so it explains every share exactly.
        np.testing.assert_allclose(scores[f"position: {role}"], scores[role])
    ratios = lesson.role_ratios(scores)
    assert ratios.shape == (2, len(lesson.ROLES)) and ratios[0, 0] == pytest.approx(
        1 / scores["uniform: previous character"]
    )
    # against circuits.detection_score, which averages per map: equal here, both texts score the same rows
    per_text = [circuits.detection_score(uniform, lesson.role_patterns(t)["start of the word"]) for t in texts]
    rows = [lesson.role_patterns(t)["start of the word"].any(axis=1).sum() for t in texts]
    assert scores["start of the word"][0, 1] == pytest.approx(np.average(per_text, weights=rows))


def test_distance_profile_matches_a_loop():
    rng = np.random.default_rng(0)
    raw = np.tril(rng.random((2, 3, 2, 12, 12)))
    w = raw / raw.sum(-1, keepdims=True)
    profile = lesson.distance_profile(w, far=4)
    assert profile.shape == (2, 2, 5)
    for layer in range(2):
        for head in range(2):
            for d in range(4):
                loop = np.mean([w[layer, b, head, t, t - d] for b in range(3) for t in range(d, 12)])
                assert profile[layer, head, d] == pytest.approx(loop)
            beyond = np.mean([w[layer, b, head, t, : t - 3].sum() for b in range(3) for t in range(4, 12)])
            assert profile[layer, head, 4] == pytest.approx(beyond)


# --- ablation and kinds -----------------------------------------------------------------------------------------


def test_kinds_split_targets_into_first_letters_other_letters_and_the_rest():
    vocab = corpus.Vocab(" ,abc")
    tokens, targets = vocab.encode(" ab,c"), vocab.encode("ab,c ")
    assert lesson.kinds(vocab, tokens, targets).tolist() == [0, 1, 2, 0, 2]


def test_ablation_table_agrees_with_the_models_own_loss(shipped, data):
    params, config, vocab, _ = shipped
    batch = lesson.windows(data[2], 6, config.n_ctx + 1)
    tokens, targets = batch[:, :-1], batch[:, 1:]
    table = lesson.ablation_table(params, config, vocab, tokens, targets)
    intact, _ = lm.loss_and_grads(params, config, tokens, targets)
    assert table["base"][0] == pytest.approx(intact, rel=1e-5)
    ablated, _ = lm.loss_and_grads(lm.ablate_heads(params, config, [(2, 1)]), config, tokens, targets)
    assert table["all"][2, 1] == pytest.approx(ablated, rel=1e-5)
    share = table["share"]
    assert share.sum() == pytest.approx(1.0)
    mean_of_kinds = (table["base"][1:] * share).sum()
    assert mean_of_kinds == pytest.approx(table["base"][0], rel=1e-6)


# --- the figures -------------------------------------------------------------------------------------------------


def shown_px(fig: Figure) -> float:
    """The smallest text of fig in CSS px as a laptop shows it: a figure wider than its output area (bbox_inches=
    'tight' padding included) is shrunk to the area's width."""
    width = style.css_width(fig) + TIGHT_PAD_PX
    return style.smallest_text_px(fig)[0] * min(1.0, style.LAPTOP_OUTPUT_PX / width)


def test_every_heads_map_fits_a_laptop_screen_with_every_character_readable():
    rng = np.random.default_rng(0)
    line = "Give me thy torch"
    T = len(line)
    scores = rng.normal(size=(4, 4, T, T)) + np.triu(np.full((T, T), -np.inf), 1)  # causal, as the model's
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    fig = Figure(figsize=plots.HEAD_MAPS_FIGSIZE, dpi=style.DPI, layout="constrained")
    plots.head_maps(fig, weights, line)
    fig.suptitle("every head")
    assert fig.get_figheight() * fig.dpi <= SCREEN_PX
    assert style.css_width(fig) + TIGHT_PAD_PX <= style.LAPTOP_OUTPUT_PX  # shown at its size: never scaled down
    assert shown_px(fig) >= READABLE_PX
    maps = [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]
    assert len(maps) == 16
    for k, ax in enumerate(maps):  # row-major, layer by layer: each panel draws its own head's weights
        np.testing.assert_array_equal(ax.images[0].get_array(), weights[k // 4, k % 4])
    chars = [{" ": "␣"}.get(c, c) for c in line]
    assert [t.get_text() for t in maps[0].get_yticklabels()] == chars  # every query row named, layer 0
    assert [t.get_text() for t in maps[-1].get_xticklabels()] == chars  # every key column named, layer 3
    FigureCanvasAgg(fig).draw()  # lay out, so the labels have their places
    for labels in (maps[0].get_yticklabels(), maps[-1].get_xticklabels()):  # neighbours do not touch
        boxes = [t.get_window_extent() for t in labels]
        assert not any(a.overlaps(b) for a, b in zip(boxes[:-1], boxes[1:], strict=True))
    # the lesson draws it at that size
    (cell,) = [c.source for c in nbformat.read(LESSON, as_version=4).cells if "plots.head_maps(" in c.source]
    assert "figsize=plots.HEAD_MAPS_FIGSIZE" in cell


def test_the_role_table_prints_its_numbers_and_role_names_readably_and_apart():
    rng = np.random.default_rng(1)
    shares, ratios = rng.uniform(0, 0.5, (16, len(lesson.ROLES))), rng.uniform(0, 7, (16, len(lesson.ROLES)))
    labels = [r.replace(" ", "\n", 1) + "\n(vs habit)" for r in lesson.ROLES]  # as the lesson builds them
    fig = Figure(figsize=style.figsize(6.2), dpi=style.DPI, layout="constrained")  # the lesson's size
    ax = fig.subplots()
    plots.role_table(ax, shares, ratios, labels, title="roles")
    want = [f"{shares[i, j]:.2f}  {ratios[i, j]:.1f}x" for i in range(16) for j in range(len(lesson.ROLES))]
    assert [t.get_text() for t in ax.texts] == want
    assert min(t.get_fontsize() for t in ax.texts) / 72 * fig.dpi >= READABLE_PX
    assert shown_px(fig) >= READABLE_PX
    # the role names, wrapped: neighbouring names do not touch
    renderer = FigureCanvasAgg(fig).get_renderer()  # smallest_text_px drew it: the tick labels exist
    boxes = [t.get_window_extent(renderer) for t in ax.get_xticklabels()]
    assert all(left.x1 < right.x0 for left, right in zip(boxes, boxes[1:], strict=False))
    assert [t.get_text().replace("\n", " ") for t in ax.get_xticklabels()] == [s.replace("\n", " ") for s in labels]


# --- the mixed data for induction heads -------------------------------------------------------------------------


def test_mixed_batches_replace_a_quarter_of_the_rows_with_repeated_letters():
    trainer = lesson.induction_trainer(steps=10)
    tokens, targets = trainer.make_batch()
    assert tokens.shape == (16, 128) and np.array_equal(tokens[:, 1:], targets[:, :-1])
    letters = set(lesson.letter_ids(trainer.vocab).tolist())
    for row in range(4):  # round(0.25 * 16) rows
        seq = np.concatenate([tokens[row], targets[row, -1:]])
        assert set(seq.tolist()) <= letters
        k = next(k for k in range(8, 65) if np.array_equal(seq[k:], seq[:-k]))  # the block length
        assert 8 <= k <= 64
    text = trainer.vocab.decode(np.concatenate([tokens[4], targets[4, -1:]]))
    assert text in trainer.vocab.decode(trainer.train_ids)  # the other rows are Shakespeare windows
    again = lesson.induction_trainer(steps=10).make_batch()
    assert np.array_equal(again[0], tokens)


def test_evaluation_file_recomputes_and_splits_the_validation_text(shipped, data):
    params, config, vocab, _ = shipped
    saved = {k: float(v) for k, v in np.load(lesson.EVALUATION_PATH).items()}
    assert lesson.full_validation_loss(params, config, data[2]) == pytest.approx(saved["validation"], abs=1e-6)
    share = saved["tempest_share"]
    mixed = (1 - share) * saved["romeo_and_juliet_end"] + share * saved["tempest"]
    assert mixed == pytest.approx(saved["validation"], abs=0.01)  # the two parts average to the whole
    # by hand on a short stretch: consecutive windows of n_ctx + 1 characters, each position's loss
    ids = data[2][: 3 * config.n_ctx + 1]
    win = np.stack([ids[i * config.n_ctx : (i + 1) * config.n_ctx + 1] for i in range(3)])
    loss, _ = lm.loss_and_grads(params, config, win[:, :-1], win[:, 1:])
    assert lesson.full_validation_loss(params, config, ids) == pytest.approx(loss, rel=1e-5)


def test_copy_losses_and_word_share():
    vocab = corpus.Vocab("abc ")
    assert lesson.word_share(["ab abc zz"], lesson.corpus_words("AB c")) == pytest.approx(1 / 3)
    params = lm.init_params(lm.GPTConfig(len(vocab), 1, 2, 8, 16), seed=0)
    config = lm.GPTConfig(len(vocab), 1, 2, 8, 16)
    probes = np.array([[0, 1, 2, 3, 0, 1, 2, 3, 0, 0, 1, 1, 2, 2, 3, 3]])
    first, second = lesson.copy_losses(params, config, probes, k=4)
    losses = lesson.position_losses(params, config, probes[:, :-1], probes[:, 1:])[0]
    assert first == pytest.approx(losses[:3].mean()) and second == pytest.approx(losses[4:7].mean())


def test_probes_repeat_their_first_forty_characters(data):
    vocab, _, val_ids = data
    probes = lesson.probe_tokens(vocab, vocab.decode(val_ids), 128)
    for rows in probes.values():
        assert rows.shape == (8, 128)
        assert np.array_equal(rows[:, : lesson.PROBE_K], rows[:, lesson.PROBE_K : 2 * lesson.PROBE_K])
    for rows in lesson.probe_tokens(vocab, vocab.decode(val_ids), 64, k=30).values():
        assert rows.shape == (8, 64) and np.array_equal(rows[:, :30], rows[:, 30:60])


# --- the shipped runs -------------------------------------------------------------------------------------------


def test_shipped_model_meets_the_target_and_its_first_steps_regenerate(shipped, data):
    params, config, vocab, info = shipped
    assert (config.n_layer, config.n_head, config.d_model, config.n_ctx) == (4, 4, 128, 64)
    log = info["log"]
    assert len(log["loss"]) == 3500 and log["val_loss"][-1] <= 1.90
    assert "after" in lesson.TRAIN_LOG.read_text() and f"{log['val_loss'][-1]:.4f}" in lesson.TRAIN_LOG.read_text()
    trainer = lm.Trainer(config, info["train_config"], data[1], data[2], vocab)
    trainer.run(steps=20)
    np.testing.assert_allclose(trainer.log["loss"], log["loss"][:20], rtol=1e-5)


def test_sweep_file_has_every_run_and_its_first_steps_regenerate():
    sweep = lesson.load_sweep()
    final = lesson.final_val(sweep)
    assert final.shape == (len(lesson.SWEEP_HS), len(lesson.SWEEP_SEEDS)) and np.all(final < np.log(76))
    for h, seed in ((1, 0), (16, 1)):
        trainer = lesson.sweep_trainer(h, seed)
        trainer.run(steps=10)
        np.testing.assert_allclose(trainer.log["loss"], sweep[f"{h}/{seed}/loss"][:10], rtol=1e-5)


def test_induction_run_grows_an_induction_head_only_with_repeats_in_the_data():
    params, config, _, info = lm.load_checkpoint(lesson.INDUCTION_PATH)
    log = info["log"]
    assert log["letters"].shape == (len(log["probe_step"]), 2, 4)
    assert log["letters"][-1].max() > 0.5  # the mixed run: a clear induction head on repeated letters
    assert log["control_letters"].max() < 0.2  # plain text: none at any probe
    trainer = lesson.induction_trainer()
    trainer.run(steps=10)
    np.testing.assert_allclose(trainer.log["loss"], log["loss"][:10], rtol=1e-5)
    probes = lesson.probe_tokens(trainer.vocab, trainer.vocab.decode(trainer.val_ids), config.n_ctx)
    np.testing.assert_allclose(
        lesson.induction_scores(params, config, probes["letters"]), log["letters"][-1], atol=1e-5
    )


def test_full_budget_runs_have_one_and_sixteen_heads_and_regenerate():
    long = lesson.load_sweep(lesson.LONG_PATH)
    for h in lesson.LONG_HS:
        assert len(long[f"{h}/0/loss"]) == 3500 and long[f"{h}/0/val_loss"][-1] < 1.95
    trainer = lesson.sweep_trainer(1, 0, steps=3500)
    trainer.run(steps=10)
    np.testing.assert_allclose(trainer.log["loss"], long["1/0/loss"][:10], rtol=1e-5)
    # h = 4 with the same recipe is the shipped default run: the two code paths build the same trainer.
    shipped = lesson.sweep_trainer(4, 0, steps=3500)
    assert shipped.config == lesson.load_model()[1] and shipped.tc.steps == 3500 and shipped.tc.batch == 12


def test_the_english_text_takeaways_and_hinglish_recap_state_the_shipped_validation_loss():
    """Every "1.xx nats per character" in lesson 20 is the shipped run's last validation estimate, to 2 decimals."""
    import json
    import re

    path = Path(__file__).resolve().parents[1] / "notebooks" / "20_your_own_language_model.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    prose = " ".join(" ".join("".join(c["source"]).split()) for c in cells if c["cell_type"] == "markdown")
    stated = re.findall(r"(\d\.\d\d) nats per character", prose)
    assert len(stated) >= 3  # the text, the takeaway and the Hinglish recap
    shipped = lesson.load_model()[3]["log"]["val_loss"][-1]
    assert set(stated) == {f"{shipped:.2f}"}


def prose_of_lesson20() -> str:
    """Every Markdown cell of lesson 20, whitespace collapsed."""
    import json

    path = Path(__file__).resolve().parents[1] / "notebooks" / "20_your_own_language_model.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return " ".join(" ".join("".join(c["source"]).split()) for c in cells if c["cell_type"] == "markdown")


def test_the_takeaway_on_sixteen_heads_states_the_gap_and_the_seed_differences_it_is_below():
    """Sixteen heads end 0.008 behind at 3,500 steps, less than seeds differ at 1,000 (0.011 at h = 16, up to 0.03)."""
    import re

    long = lesson.load_sweep(lesson.LONG_PATH)
    gap = long["16/0/val_loss"][-1] - lesson.load_model()[3]["log"]["val_loss"][-1]
    final = lesson.final_val(lesson.load_sweep())  # (h values, 2 seeds)
    seed_gaps = {h: abs(a - b) for h, (a, b) in zip(lesson.SWEEP_HS, final, strict=True)}
    prose = prose_of_lesson20()
    pattern = (
        r"a gap of (0\.\d+) nats at 3,500 steps, smaller than the seed-to-seed differences at 1,000 steps: "
        r"(0\.\d+) for h = 16, up to (0\.\d+)\)"
    )
    stated_gap, stated_16, stated_max = re.search(pattern, prose).groups()
    assert f"{gap:.3f}" == stated_gap and f"{seed_gaps[16]:.3f}" == stated_16
    assert f"{max(seed_gaps.values()):.2f}" == stated_max and gap < seed_gaps[16]
    assert "did slightly worse" not in prose and "rarely rewards" not in prose
    assert "partly cover for it" not in prose and "single runs there too" not in prose
    cited_works = ("Michel et al. (2019", "Heimersheim and Nanda", "Wang et al. 2022", "Bhojanapalli", "Chan et al.")
    for cited in cited_works:
        assert cited in prose, cited


def test_role_leaders_are_the_heads_with_the_largest_ratios_by_a_loop():
    rng = np.random.default_rng(3)
    scores = {role: rng.uniform(0.01, 0.5, size=(2, 3)) for role in lesson.ROLES}
    scores |= {f"uniform: {role}": np.float64(0.1) for role in lesson.POSITIONAL}
    scores |= {f"position: {role}": rng.uniform(0.01, 0.2, size=(2, 3)) for role in lesson.ROLES}
    for role in ("itself", "start of the word"):
        by_loop = []
        for layer in range(2):
            for head in range(3):
                base = 0.1 if role in lesson.POSITIONAL else scores[f"position: {role}"][layer, head]
                by_loop.append((scores[role][layer, head] / base, layer, head))
        by_loop = sorted(by_loop, reverse=True)[:3]
        got = lesson.role_leaders(scores, role)
        assert [(layer, head) for _, layer, head in by_loop] == [(layer, head) for layer, head, _, _ in got]
        np.testing.assert_allclose([r for r, _, _ in by_loop], [r for _, _, _, r in got])


def test_the_role_bullets_name_the_heads_and_ratios_the_shipped_model_shows(shipped, data):
    """Start of the word: layer 2's heads 3 and 1 (3.3x, 2.6x); itself: layer 2's heads 3, 2, 0 (about a third)."""
    params, config, vocab, _ = shipped
    windows = lesson.windows(data[2], 48, config.n_ctx)
    scores = lesson.role_scores(params, config, vocab, windows)
    word = lesson.role_leaders(scores, "start of the word")
    prose = prose_of_lesson20()
    assert [(layer, head) for layer, head, _, _ in word[:2]] == [(2, 3), (2, 1)]
    assert f"heads 3 and 1 most ({word[0][3]:.1f} and {word[1][3]:.1f} times their habit" in prose
    itself = lesson.role_leaders(scores, "itself")
    assert [(layer, head) for layer, head, _, _ in itself] == [(2, 3), (2, 2), (2, 0)]
    assert all(0.27 <= s <= 0.37 and 3.5 <= r <= 5 for _, _, s, r in itself)  # "about a third", "around four times"
    assert "Head 2 attends to itself" not in prose


def test_the_head_width_bullet_lists_every_d_k_below_the_context():
    """For h >= 4, d_k = 128 / h is below n_ctx = 64; at h = 2 it equals it; the bullet lists them."""
    config = lesson.load_model()[1]
    below = [config.d_model // h for h in lesson.SWEEP_HS if config.d_model // h < config.n_ctx]
    assert below == [32, 16, 8] and config.d_model // 2 == config.n_ctx == 64
    prose = prose_of_lesson20()
    assert "For every $h \\ge 4$ here, $d_k = 128/h$ (32, 16, 8" in prose
    assert "64-character context" in prose and "at $h = 2$, $d_k = 64 = n$" in prose
