"""Lesson 14's computed claims, through the same helper calls the notebook makes: the trained one- and two-layer
models, the phase change, MiniLM's circuit ranks and detector scores, and the hand-built model's composed circuit."""

import math

import numpy as np
import pytest
from matplotlib.figure import Figure

import mha_lesson as mha
from mha_lesson import circuits, training
from mha_lesson.demos import circuits as dc
from mha_lesson.plots import circuits as pc


@pytest.fixture(scope="module")
def runs():
    return dc.trained_runs()


# --- section 1 --------------------------------------------------------------------------------------------------


def test_the_lessons_small_layer_is_the_sum_of_its_head_paths():
    params = mha.init_params(8, 2, seed=0)
    x = np.random.default_rng(0).normal(size=(5, 8))
    out, _ = mha.multi_head_attention(x, x, x, params)
    assert np.abs(circuits.head_terms(x, params).sum(axis=0) - out).max() < 1e-12
    assert all(np.linalg.matrix_rank(circuits.qk_circuit(params, i)) == 4 for i in range(2))


def test_the_additive_paths_figure_reads_row_by_row_two_panels_a_row():
    params = mha.init_params(8, 2, seed=0)
    x = np.random.default_rng(0).normal(size=(5, 8))
    terms = circuits.head_terms(x, params)
    out, _ = mha.multi_head_attention(x, x, x, params)
    fig = Figure()
    pc.additive_paths(fig, terms, out, [f"x{j}" for j in range(5)])
    panels = [ax for ax in fig.axes if ax.images]
    # Two heads, then their sum and the layer's output: a 2 x 2 grid read row by row.
    assert [ax.get_subplotspec().get_geometry()[:2] for ax in panels] == [(2, 2)] * 4
    assert np.allclose(panels[1].images[0].get_array(), terms[1])
    assert np.allclose(panels[2].images[0].get_array(), terms[0] + terms[1])
    assert np.allclose(panels[3].images[0].get_array(), out)
    assert [ax.get_xlabel() for ax in panels] == ["", "", "output feature", "output feature"]
    with pytest.raises(ValueError, match="ncols"):
        pc.additive_paths(Figure(), terms, terms.sum(axis=0), list("abcde"), ncols=0)


def test_layer_maps_name_every_other_token_over_every_row_of_panels():
    """The review: 28 rotated labels at every key ran together, and the lower row had no key labels at all."""
    tokens = [str(10 + i) for i in range(6)]
    fig = Figure()
    attention = np.full((2, 2, 6, 6), 1 / 6)
    pc.layer_maps(fig, attention, tokens, [None] * 4, titles=list("abcd"), label_every=2)
    panels = fig.axes[:4]
    assert [[t.get_text() for t in ax.get_xticklabels()] for ax in panels] == [["10", "12", "14"]] * 4
    assert [t.get_text() for t in panels[0].get_yticklabels()] == ["10", "12", "14"]
    assert [ax.get_xlabel() for ax in panels] == ["key (attended to)"] * 4
    assert [ax.get_ylabel() for ax in panels] == ["query (attending)", "", "query (attending)", ""]
    with pytest.raises(ValueError, match="label_every"):
        pc.layer_maps(Figure(), attention, tokens, [None] * 4, titles=list("abcd"), label_every=0)


def test_minilm_circuits_have_rank_d_k_and_most_heads_use_most_of_it(minilm):
    heads = [layer.attn for layer in minilm.layers]
    full = circuits.qk_circuit(heads[0].astype(np.float64), 0)
    assert full.shape == (384, 384) and np.linalg.matrix_rank(full) == heads[0].d_k == 32
    ranks = dc.rank_table(dc.spectra(heads))
    random_ranks = dc.rank_table(dc.random_layer_spectra(minilm.d_model, minilm.h, count=6))
    for kind in ("qk", "ov"):
        er = ranks[kind]["effective_rank"]
        assert er.shape == (6, 12) and er.max() <= 32
        assert 20 <= np.median(er) <= 28  # the lesson: most of the 32 directions are used
        assert abs(np.median(er) - np.median(random_ranks[kind]["effective_rank"])) <= 2  # "almost as random"
    assert (ranks["qk"]["effective_rank"] >= 16).mean() > 0.95  # "at least half of them" for nearly every head


def test_spectra_match_a_full_svd_of_one_minilm_head(minilm):
    p = minilm.layers[3].attn.astype(np.float64)
    s = dc.spectra([p])["ov"][0, 5]  # (d_k,)
    np.testing.assert_allclose(s, np.linalg.svd(circuits.ov_circuit(p, 5), compute_uv=False)[:32], rtol=1e-9)


# --- section 2 --------------------------------------------------------------------------------------------------


def test_the_composed_circuit_of_the_hand_built_model_is_a_scaled_identity():
    model = circuits.hand_built_induction(10, 20)
    root = math.sqrt(model.layers[0].d_k)
    qk2 = circuits.qk_circuit(model.layers[1], 0) / root
    composed = model.embed @ qk2 @ (model.embed @ circuits.ov_circuit(model.layers[0], 0)).T
    np.testing.assert_allclose(composed, np.eye(10) * composed[0, 0], atol=1e-12)
    assert composed[0, 0] > circuits.sharp_gain(20)


def test_the_lessons_thousand_sequences_are_all_completed():
    model = circuits.hand_built_induction(10, 20)
    rng = np.random.default_rng(4)
    for k in rng.integers(1, 11, size=1000):
        s = circuits.repeated_sequence(rng, 10, int(k), 20)
        np.testing.assert_array_equal(model.predict(s)[k : 2 * k - 1], s[k + 1 : 2 * k])


# --- section 3 --------------------------------------------------------------------------------------------------


def test_two_layers_beat_one_layer_on_the_repeated_copy_by_a_wide_margin(runs):
    two, one = runs[2], runs[1]
    assert two.result.accuracy > 0.9 and one.result.accuracy < 0.6
    assert two.result.accuracy - one.result.accuracy > 0.35
    assert two.loss[-1] < 0.4 and one.loss[-1] > 1.2
    assert two.loss[-1] < math.log(two.result.config["vocab"]) / 5


def test_snapshots_agree_with_the_trainer(runs):
    two = runs[2]
    loss, accuracy = two.result.trainer.evaluate()
    assert math.isclose(two.loss[-1], loss, rel_tol=1e-6) and two.accuracy[-1] == accuracy == two.result.accuracy
    np.testing.assert_array_equal(two.attention[-1], two.result.trainer.attention(two.tokens))
    assert list(two.steps) == list(range(0, dc.STEPS + 1, dc.EVERY))


def test_phase_change_the_induction_heads_form_and_the_loss_drops(runs):
    two, one = runs[2], runs[1]
    change = dc.phase_change(two)
    assert 100 <= change["step"] <= 500
    assert change["induction_before"] < 0.4 and change["induction_after"] > 0.7
    assert change["loss_before"] - change["loss_after"] > 1.5
    assert two.induction[-1, 1].min() > 0.7  # both layer-2 heads are induction heads
    assert two.previous[-1, 0].max() > 0.35  # one layer-1 head looks at the previous token
    chance = dc.uniform_induction_score(dc.repeat_lengths(two.result.trainer.held_out), two.result.config["n"])
    assert chance < one.induction[-1, 0].max() < 0.45  # above chance, far below the two-layer model


def test_the_one_layer_heads_aim_at_the_targets_region_by_position(runs):
    one = runs[1]
    where = dc.relative_key_position(one)[0]
    assert np.all(np.abs(where - dc.relative_target_position(one)) < 0.1)


def test_layer_1_looks_one_back_where_layer_2_needs_it(runs):
    two = runs[2]
    b = two.result.trainer.held_out
    weights = training.forward(two.result.trainer.model, b.tokens)[2][0].weights  # (batch, h, n, n): layer 1
    # Independently: per sequence, the mean weight of queries 1..k-1 on the key one back; then the mean over sequences.
    loop = np.mean(
        [
            [np.mean([w[hi, t, t - 1] for t in range(1, k)]) for hi in range(dc.H)]
            for w, k in zip(weights, dc.repeat_lengths(b), strict=True)
        ],
        axis=0,
    )
    used = dc.previous_token_where_used(two)
    np.testing.assert_allclose(used[0], loop, rtol=1e-6)
    best = two.previous[-1, 0].argmax()
    assert used[0, best] > 0.9 > 0.6 > two.previous[-1, 0, best]  # the lesson: sharp where used, low on average


def test_the_one_layer_shortcut_copies_avoids_its_own_token_and_picks_from_the_first_copy(runs):
    one = runs[1]
    shortcut = dc.one_layer_shortcut(one)
    model = one.result.trainer.model
    embed = model.arrays["embed"].astype(np.float64)
    p = model.layers[0].astype(np.float64)
    for i in range(p.h):
        # Independently: the scaled score of query token a on key token b, one pair at a time.
        queries, keys = embed @ p.w_q_head(i), embed @ p.w_k_head(i)
        scores = np.array([[queries[a] @ keys[b] for b in range(len(embed))] for a in range(len(embed))]) / math.sqrt(
            p.d_k
        )
        off = scores[~np.eye(len(embed), dtype=bool)].mean()
        assert math.isclose(shortcut["own_token"][i], np.diag(scores).mean() - off, rel_tol=1e-9)
    assert (shortcut["copies"] == 1.0).all() and (shortcut["own_token"] < -0.3).all()
    b = one.result.trainer.held_out
    hits = []
    for tokens, k in zip(b.tokens, dc.repeat_lengths(b), strict=True):  # one sequence at a time
        predicted = training.forward(model, tokens[None])[0][0, :, 0].argmax(axis=-1)  # (n,)
        hits += [predicted[t] in tokens[:k] for t in range(k, 2 * k - 1)]
    assert math.isclose(shortcut["in_first_copy"], float(np.mean(hits)))
    # The lesson: nearly always a first-copy token, right far more often than a blind guess, far less than 2 layers.
    assert shortcut["in_first_copy"] > 0.9
    assert 10 / one.result.config["vocab"] < one.result.accuracy < runs[2].result.accuracy - 0.35


def test_training_the_lessons_runs_is_deterministic_for_a_seed():
    a, b = (dc.train_run(2, steps=40) for _ in range(2))
    np.testing.assert_array_equal(a.result.losses, b.result.losses)
    np.testing.assert_array_equal(a.attention, b.attention)
    np.testing.assert_array_equal(a.induction, b.induction)
    assert not np.array_equal(a.result.losses, dc.train_run(2, seed=1, steps=40).result.losses)


def test_head_scores_average_each_sequence_equally():
    # Two sequences with different k: one perfect induction map, one perfect previous-token map.
    n = 8
    perfect = np.eye(n)
    perfect[4:] = np.eye(n)[[1, 2, 3, 4]]  # k = 4: rows 4..7 -> 1..4
    previous = np.eye(n, k=-1)
    previous[0, 0] = 1.0
    weights = np.stack([perfect, previous])[:, None, None]  # (batch 2, layers 1, h 1, n, n)
    prev, ind = dc.head_scores(weights, np.array([4, 3]))
    expected_ind = (1.0 + float(circuits.induction_score(previous, 3))) / 2
    assert math.isclose(float(ind[0, 0]), expected_ind)
    assert math.isclose(float(prev[0, 0]), (float(circuits.previous_token_score(perfect)) + 1.0) / 2)


def test_repeat_lengths_read_k_from_the_loss_weights():
    batch = training.make_batch("induction", np.random.default_rng(0), 16, 24, 32)
    ks = dc.repeat_lengths(batch)
    for row, k in zip(batch.tokens, ks, strict=True):
        np.testing.assert_array_equal(row[k : 2 * k], row[:k])


# --- section 4 --------------------------------------------------------------------------------------------------


def test_minilm_has_previous_and_duplicate_token_heads_but_no_induction_head(minilm):
    scores = dc.minilm_detectors(minilm)
    best = {name: (head, score) for name, head, score in dc.best_heads(scores)}
    uniform = float(scores["uniform"][0, 0])
    assert best["previous token"][1] > 0.95
    assert best["duplicate (either copy)"][1] > 0.4 and best["next token"][1] > 0.4
    assert max(best["induction (either copy)"][1], best["induction (earlier copy)"][1]) < 3 * uniform
    # The sharp previous-token head is the one whose W_QK needs the fewest directions (section 1's exception).
    er = dc.rank_table(dc.spectra([layer.attn for layer in minilm.layers]))["qk"]["effective_rank"]
    assert best["previous token"][0] == tuple(int(i) for i in np.unravel_index(er.argmin(), er.shape))


def test_repeated_word_pieces_are_cls_two_copies_sep(minilm):
    ids = dc.repeated_word_pieces(minilm, k=5, count=3)
    assert ids.shape == (3, 12)
    for row in ids:
        assert minilm.tokenizer.id_to_token(int(row[0])) == "[CLS]"
        assert minilm.tokenizer.id_to_token(int(row[-1])) == "[SEP]"
        np.testing.assert_array_equal(row[1:6], row[6:11])
        assert len(set(row[1:6].tolist())) == 5


def test_copy_ambiguity_against_a_hand_made_batch_and_the_birthday_formula():
    # Two sequences, k = 4: "a b a c | a b a c ..." (a repeats) and "a b c d | a b c d ..." (distinct).
    n = 10
    tokens = np.array([[0, 1, 0, 2, 0, 1, 0, 2, 5, 6], [0, 1, 2, 3, 0, 1, 2, 3, 5, 6]])
    pos = np.arange(n)
    scored = ((pos >= 4) & (pos <= 6))[None, :, None].repeat(2, axis=0)
    batch = training.Batch(tokens, np.roll(tokens, -1, axis=1)[..., None], scored / scored.sum(axis=(0, 1)))
    predicted = np.roll(tokens, -1, axis=1)  # a perfect model
    predicted[0, 4] = 9  # wrong on one ambiguous query
    got = dc.copy_ambiguity(batch, predicted)
    assert got["sequences_with_repeat"] == 0.5
    # Sequence 0: query 4 (a): earlier a's at 0 and 2, followed by b and c (ambiguous); the last one's follower c is
    # wrong (b follows). Query 5 (b): a, right. Query 6 (a): followers b, c, b (ambiguous); the last, b, is wrong.
    # Sequence 1: every query unambiguous and right.
    assert got["ambiguous_queries"] == pytest.approx(2 / 6)
    assert got["last_occurrence_rule"] == pytest.approx(4 / 6)
    assert got["model_unambiguous"] == 1 and got["model_ambiguous"] == 0.5
    # The make_batch rate against 1 - prod(1 - i/vocab), averaged over the repeat lengths.
    c = training.TASKS["induction"]
    big = training.make_batch("induction", np.random.default_rng(1), 20000, c["n"], c["vocab"])
    ks = range(training.REPEAT[0], training.REPEAT[1] + 1)
    formula = np.mean([1 - math.prod(1 - i / c["vocab"] for i in range(k)) for k in ks])
    assert dc.copy_ambiguity(big)["sequences_with_repeat"] == pytest.approx(formula, abs=0.01)


def test_copying_scores_against_a_loop_and_layer_2_copies(runs):
    two = runs[2]
    model = two.result.trainer.model
    for layer in (0, 1):
        params = model.layers[layer]
        loop = []
        for i in range(params.h):
            rows = slice(i * params.d_k, (i + 1) * params.d_k)
            hits = 0
            for a in range(len(model.arrays["embed"])):
                e = model.arrays["embed"][a].astype(np.float64)
                logits = e @ params.w_v[:, rows] @ params.w_o[rows] @ model.arrays["readout.w"]
                hits += int(np.argmax(logits) == a)
            loop.append(hits / len(model.arrays["embed"]))
        np.testing.assert_allclose(dc.copying_scores(two, layer), loop)
    assert dc.copying_scores(two, 1).min() > 0.9  # both induction-layer heads copy
    with pytest.raises(ValueError, match="layer"):
        dc.copying_scores(two, 2)


def test_lesson_14_names_the_ov_path_as_elhage_et_al_do_and_defines_the_frobenius_norm_first():
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "notebooks" / "14_circuits_and_induction_heads.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    prose = " ".join(" ".join("".join(c["source"]).split()) for c in cells)
    # Elhage et al.'s "direct path" is the token straight to the read-out; through a head it is the direct OV path.
    assert "**direct path**" not in prose and "through the direct path" not in prose
    assert "head's **direct OV path**" in prose and 'Elhage et al. reserve "direct path" for $E W_U$' in prose
    assert prose.index("**Frobenius norm**") < prose.index("mha.show_source(circuits.effective_rank)")
