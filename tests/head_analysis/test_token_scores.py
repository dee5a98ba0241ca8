"""Head scores on hand-made attention matrices whose answers are known by construction."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mha_lesson import head_analysis as hs

# Rows are queries, columns keys; every row sums to 1. Token 0 plays [CLS], token 3 [SEP].
HAND = np.array(
    [
        [0.5, 0.5, 0.0, 0.0],
        [0.25, 0.25, 0.25, 0.25],
        [0.0, 0.1, 0.2, 0.7],
        [0.0, 0.0, 0.0, 1.0],
    ]
)
HAND_ANSWERS = {
    "previous": [0.25, 0.1, 0.0],  # w[1,0], w[2,1], w[3,2]
    "next": [0.5, 0.25, 0.7],  # w[0,1], w[1,2], w[2,3]
    "self": [0.5, 0.25, 0.2, 1.0],
    "[CLS]": [0.5, 0.25, 0.0, 0.0],
    "[SEP]": [0.0, 0.25, 0.7, 1.0],
    "entropy": [math.log(2), math.log(4), -(0.1 * math.log(0.1) + 0.2 * math.log(0.2) + 0.7 * math.log(0.7)), 0.0],
}


@pytest.mark.parametrize("name", list(hs.SCORES))
def test_scores_of_a_hand_made_matrix(name):
    np.testing.assert_allclose(hs.SCORES[name](HAND), HAND_ANSWERS[name], atol=1e-15)


def test_a_previous_token_head_scores_one_and_has_zero_entropy():
    w = np.eye(5, k=-1)
    w[0, 0] = 1.0  # the first query has no previous token: it looks at itself
    assert hs.previous_token(w).tolist() == [1.0] * 4
    assert hs.next_token(w).tolist() == [0.0] * 4
    assert hs.entropy(w).tolist() == [0.0] * 5


def test_scores_keep_leading_axes():
    w = np.stack([HAND, np.full((4, 4), 0.25)])[None]  # (1 layer, 2 heads, 4, 4)
    assert hs.previous_token(w).shape == (1, 2, 3)
    np.testing.assert_allclose(hs.entropy(w)[0, 1], math.log(4))


def test_corpus_scores_weigh_every_token_once():
    short = np.array([[[1.0, 0.0], [0.0, 1.0]]])  # (1 head, 2, 2): all attention on itself
    scores = hs.corpus_scores([short, HAND[None]])
    # self: 2 queries scoring 1 and 4 queries from HAND, averaged over all 6 queries.
    np.testing.assert_allclose(scores["self"], [(2 * 1.0 + sum(HAND_ANSWERS["self"])) / 6])
    np.testing.assert_allclose(scores["previous"], [(0.0 + sum(HAND_ANSWERS["previous"])) / 4])
    assert scores["entropy"].shape == (1,)


def test_uniform_baseline_matches_scoring_uniform_matrices():
    lengths = [3, 5, 8]
    uniform = [np.full((n, n), 1.0 / n) for n in lengths]
    scores = hs.corpus_scores(uniform)
    base = hs.uniform_baseline(lengths)
    for name in hs.SCORES:
        assert base[name] == pytest.approx(float(scores[name]), abs=1e-14)


def test_heads_above_lists_layer_then_head():
    score = np.array([[0.1, 0.6, 0.9], [0.7, 0.5, 0.0]])
    assert hs.heads_above(score, 0.5) == [(0, 1), (0, 2), (1, 0)]


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"w: expected self-attention weights of shape \(\.\.\., n, n\)"):
        hs.entropy(np.ones((2, 3)) / 3)
    with pytest.raises(ValueError, match="weights: expected at least one"):
        hs.corpus_scores([])
    with pytest.raises(ValueError, match="item 1"):
        hs.corpus_scores([np.ones((2, 3, 3)) / 3, np.ones((3, 3)) / 3])
    with pytest.raises(ValueError, match="lengths: expected"):
        hs.uniform_baseline([4, 1])
    for score in (hs.first_token, hs.last_token):  # an empty map has no key 0 nor n-1
        with pytest.raises(ValueError, match=r"^w: expected at least one token"):
            score(np.zeros((2, 0, 0)))
    with pytest.raises(ValueError, match=r"^weights: expected at least one sentence of 2 or more"):
        hs.corpus_scores([np.ones((2, 1, 1))])  # previous and next would be means of nothing: NaN
    one_layer = {name: np.full((1, 12), 0.1) for name in hs.SCORES}
    with pytest.raises(ValueError, match=r"^scores: expected .* at least 2 layers"):
        hs.compare_with_clark(one_layer, hs.uniform_baseline([5, 6]))


@given(hnp.arrays(np.float64, (6, 6), elements=st.floats(0.01, 1.0)))
def test_fractions_are_bounded_and_entropy_lies_between_0_and_ln_n(raw):
    w = raw / raw.sum(axis=-1, keepdims=True)
    ent = hs.entropy(w)
    assert np.all(ent >= -1e-12) and np.all(ent <= math.log(6) + 1e-12)
    # previous, same and next token are different keys of one row: together at most all of it.
    inner = hs.previous_token(w)[:-1] + hs.same_token(w)[1:-1] + hs.next_token(w)[1:]
    assert np.all(inner <= 1 + 1e-12)


def _scores(previous=0.1, nxt=0.1, self_=0.1, cls=0.1, sep=0.1, entropy=1.0):
    """Scores for 6 layers x 12 heads, every head alike except where the test sets one."""
    values = {"previous": previous, "next": nxt, "self": self_, "[CLS]": cls, "[SEP]": sep, "entropy": entropy}
    return {name: np.full((6, 12), v) for name, v in values.items()}


def _paragraphs(text):
    """The comparison's paragraphs by their bold heading: {'The current token.': '...', ...}."""
    return {para.split("**")[1]: para for para in text.split("\n\n")}


def test_clark_comparison_follows_the_numbers():
    base = hs.uniform_baseline([10, 12])  # uniform entropy about 2.4 nats
    bert_like = _scores(sep=0.6)
    bert_like["previous"][1, 3] = 0.9
    bert_like["entropy"][0, :4] = bert_like["entropy"][4, 0] = 2.3  # 5 broad heads, 4 of them in layers 0-2
    text = _paragraphs(hs.compare_with_clark(bert_like, base))
    assert list(text) == ["The current token.", "Positional heads.", "Broad heads.", "[SEP] as a sink.", "And [CLS]?"]
    assert "less than 25% on it: 72 of 72" in text["The current token."]
    assert text["The current token."].endswith("**Agrees**.")
    assert "previous token: 1 ((1, 3)); on the next token: 0 (none)" in text["Positional heads."]
    assert "**Agrees**, and all of them sit in the lower half (layers 0-2)" in text["Positional heads."]
    assert "uniform one: 5, 4 of them in the lower half" in text["Broad heads."]
    assert text["Broad heads."].endswith("**Agrees**.")
    assert "(2-4) [SEP] gets 60%" in text["[SEP] as a sink."] and "**Agrees**" in text["[SEP] as a sink."]
    assert "as in BERT-base" in text["And [CLS]?"]

    sink_on_cls = _scores(cls=0.7, self_=0.3)
    sink_on_cls["next"][4, 2] = 0.8  # positional, but in the upper half
    text = _paragraphs(hs.compare_with_clark(sink_on_cls, base))
    assert "less than 25% on it: 0 of 72" in text["The current token."] and "**Differs**" in text["The current token."]
    assert "**Agrees** that they exist, but not all sit in the lower half" in text["Positional heads."]
    assert "uniform one: 0, 0 of them" in text["Broad heads."] and "**Differs**" in text["Broad heads."]
    assert "**Differs**" in text["[SEP] as a sink."] and "number 0 of 72" in text["[SEP] as a sink."]
    assert "[CLS] plays the part that [SEP] plays" in text["And [CLS]?"] and "number 72 of 72" in text["And [CLS]?"]

    plain = _paragraphs(hs.compare_with_clark(_scores(), base))
    assert "**Differs**: no MiniLM head is that positional" in plain["Positional heads."]
    assert "Neither special token" in plain["And [CLS]?"]


def test_clark_middle_layers_are_at_bert_bases_relative_depth():
    # BERT-base's layers 6-10 of 12 (from 1) are 5-9 from 0; a 6-layer model's layers 2, 3, 4 have their centres
    # at depths 5/12, 7/12, 9/12 of the model, inside 5/12 .. 10/12; a 24-layer model's layers 10-19.
    for n_layers, middle in ((6, "(2-4)"), (12, "(5-9)"), (24, "(10-19)")):
        scores = {name: np.full((n_layers, 4), 0.1) for name in hs.SCORES}
        assert f"middle layers {middle}" in hs.compare_with_clark(scores, hs.uniform_baseline([10]))


def test_score_grids_frame_exactly_the_heads_above_the_threshold():
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    from mha_lesson.plots import real_heads

    scores = _scores()
    scores["next"][2, 5] = scores["next"][0, 0] = 0.7
    fig = Figure(figsize=(12, 6))
    real_heads.score_grids(fig, scores, hs.uniform_baseline([10]))
    panels = [ax for ax in fig.axes if ax.get_title()]  # colour bars have no title
    framed = {ax.get_title().split("\n")[0]: [p for p in ax.patches if isinstance(p, Rectangle)] for ax in panels}
    assert len(framed[hs.LABELS["next"]]) == 2
    assert sum(len(v) for v in framed.values()) == 2
    np.testing.assert_array_equal(panels[1].images[0].get_array(), scores["next"])
