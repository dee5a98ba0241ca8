"""Held-out head selection (head_analysis.selection): Wilson intervals, per-arc hits and two-fold cross-fitting."""

import numpy as np
import pytest

from mha_lesson import head_analysis as hs
from mha_lesson.head_analysis import selection as sel


def test_wilson_interval_against_published_values():
    # 8 of 10: the textbook Wilson 95% interval is (0.490, 0.943); 0 of 10 starts at exactly 0.
    assert sel.wilson_interval(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    low, high = sel.wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    with pytest.raises(ValueError, match="hits"):
        sel.wilson_interval(11, 10)
    with pytest.raises(ValueError, match="n: expected"):
        sel.wilson_interval(0, 0)


def sentence(n_words: int) -> hs.Annotated:
    """A sentence of n_words nouns whose word 2k is a determiner of word 2k + 1."""
    arcs = {rel: () for rel in hs.RELATIONS}
    arcs["det"] = tuple((d, d + 1) for d in range(0, n_words - 1, 2))
    return hs.Annotated(text="x", words=("w",) * n_words, upos=("NOUN",) * n_words, arcs=arcs)


def maps_for(sentences, rng, lucky_in=()):
    """Random word maps (1 layer, 3 heads): head 0 always finds the gold head, head 2 only in sentences lucky_in."""
    out = []
    for s, sent in enumerate(sentences):
        m = len(sent.words) + 2
        w = rng.random((1, 3, m, m))
        for d, g in sent.arcs["det"]:
            w[0, 0, d + 1, g + 1] = 10.0
            if s in lucky_in:
                w[0, 2, d + 1, g + 1] = 20.0
        out.append(w / w.sum(axis=-1, keepdims=True))
    return out


def test_arc_hits_matches_relation_table_and_offset_baseline():
    rng = np.random.default_rng(0)
    sentences = [sentence(6), sentence(4), sentence(8)]
    maps = maps_for(sentences, rng)
    heads, bases, owner, names = sel.arc_hits(maps, sentences, "det")
    assert heads.shape == (3 + 2 + 4, 1, 3) and owner.tolist() == [0, 0, 0, 1, 1, 2, 2, 2, 2]
    rows = hs.relation_table(None, sentences, maps=maps)
    table = hs.relation_grid(rows, "det")
    np.testing.assert_allclose(heads.mean(axis=0), table)  # the same accuracy as the lesson's table
    candidates = [np.array([False, *([True] * len(s.words)), False]) for s in sentences]
    arcs = [[(d + 1, g + 1) for d, g in s.arcs["det"]] for s in sentences]
    offsets = hs.offset_baseline(candidates, arcs)
    assert dict(zip(names, bases.mean(axis=0), strict=True)) == pytest.approx(
        {f"word at offset {k:+d}": v for k, v in offsets.items()}
    )


def test_a_head_good_on_one_half_only_is_not_the_held_out_pick():
    rng = np.random.default_rng(1)
    sentences = [sentence(6) for _ in range(10)]
    order = np.random.default_rng(0).permutation(10)  # held_out_selection's split for seed 0
    first_half = set(order[:5].tolist())
    # Head 2 is perfect only on the first half's sentences; head 0 is perfect everywhere but outvoted there.
    maps = maps_for(sentences, rng, lucky_in=first_half)
    out = sel.held_out_selection(maps, sentences, "det", seed=0)
    assert out["count"] == 30 and out["in_sample"] == 1.0
    # Chosen on the second half, head 0 wins; chosen on the first half, heads 0 and 2 tie and argmax takes 0.
    assert out["heads"] == [(0, 0), (0, 0)] and out["accuracy"] == 1.0
    assert out["baselines"] == ["word at offset +1"] * 2 and out["baseline"] == 1.0
    assert out["lead"] == 0.0 and not out["survives"]


def test_held_out_scores_each_half_with_the_other_halfs_pick():
    rng = np.random.default_rng(2)
    sentences = [sentence(8) for _ in range(12)]
    maps = [rng.dirichlet(np.ones(10), size=(2, 4, 10)) for _ in sentences]  # no head knows anything
    out = sel.held_out_selection(maps, sentences, "det", seed=3, n_boot=500)
    # An independent loop: split as the function does, pick on one half, score on the other.
    half = np.zeros(12, int)
    half[np.random.default_rng(3).permutation(12)[6:]] = 1
    heads, _, owner, _ = sel.arc_hits(maps, sentences, "det")
    hits = 0
    for f in (0, 1):
        mean = heads[half[owner] != f].mean(axis=0)
        li, hi = np.unravel_index(mean.argmax(), mean.shape)
        hits += heads[half[owner] == f, li, hi].sum()
    assert out["accuracy"] == pytest.approx(hits / len(owner))
    assert out["in_sample"] > out["accuracy"]  # the best of 8 random heads is flattered by its own arcs
    low, high = out["accuracy_ci"]
    assert low < out["accuracy"] < high


def test_bad_relation_and_missing_arcs_are_named():
    sentences = [sentence(4)]
    maps = maps_for(sentences, np.random.default_rng(0))
    with pytest.raises(ValueError, match="relation: expected"):
        sel.arc_hits(maps, sentences, "verb")
    with pytest.raises(ValueError, match="expected at least one gold arc"):
        sel.arc_hits(maps, sentences, "obj")
    with pytest.raises(ValueError, match="both halves"):
        sel.held_out_selection(maps, sentences, "det")
