"""Choosing the best head without flattering it: select on one half of the sentences, score on the other.

Picking the best of 72 heads on the same 43-168 arcs that then report its accuracy inflates the winner: some head
is lucky on those arcs. held_out_selection splits the annotated sentences in two, picks the head (and the
baseline) on one half, scores that pick on the other half, then swaps the halves (two-fold cross-fitting), so
every arc is scored by a head chosen without it. It adds a Wilson interval for each accuracy and a bootstrap
interval, over sentences, for the head's lead over the baseline on the same arcs. Lesson 15 uses it on the
syntax heads of syntax.py (Clark et al. 2019 pick their best head on the very arcs they report).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .._checks import check_nonnegative_int, check_number, check_positive_int, check_size
from . import syntax
from .syntax import Annotated


def wilson_interval(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval (low, high) for a proportion hits / n; z = 1.96 gives 95%."""
    check_number("z", z, low=0.0)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0:
        raise ValueError(f"n: expected a positive whole number of trials, got {n!r}")
    if isinstance(hits, bool) or not isinstance(hits, (int, np.integer)) or not 0 <= hits <= n:
        raise ValueError(f"hits: expected a whole number from 0 to n = {n}, got {hits!r}")
    p, z2 = hits / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def arc_hits(
    maps: Sequence[np.ndarray], sentences: Sequence[Annotated], relation: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Per gold arc: every head's hit (arcs, n_layers, h), every baseline's hit (arcs, b), the arc's sentence (arcs,).

    Heads predict as relation_table does (dependent -> head, most-attended candidate word); the baselines are the
    fixed offsets syntax.OFFSETS and, for "coref", the first and the nearest noun before the pronoun. The
    fourth item names the baselines' columns.
    """
    if relation not in syntax.RELATIONS:
        raise ValueError(f"relation: expected one of {syntax.RELATIONS}, got {relation!r}")
    sentences = syntax.check_sentences(sentences)
    maps = syntax.check_maps(maps, sentences)
    names = [f"word at offset {k:+d}" for k in syntax.OFFSETS]
    if relation == "coref":
        names += ["first noun", "nearest noun"]
    heads, bases, owner = [], [], []
    for s, (m, sentence) in enumerate(zip(maps, sentences, strict=True)):
        arcs = sentence.arcs[relation]
        if not arcs:
            continue
        candidates = np.array([False, *(u != "PUNCT" for u in sentence.upos), False])  # word_maps' order
        predicted = syntax.most_attended(m, candidates)  # (n_layers, h, words + 2)
        positions = np.flatnonzero(candidates) - 1  # word index of each candidate, in order
        nouns = [i for i, u in enumerate(sentence.upos) if u in ("NOUN", "PROPN")]
        for d, g in arcs:
            heads.append(predicted[..., d + 1] == g + 1)
            rank = int(np.searchsorted(positions, d)) if d in positions else None  # the dependent's place
            row = [rank is not None and 0 <= rank + k < len(positions) and positions[rank + k] == g
                   for k in syntax.OFFSETS]  # fmt: skip
            if relation == "coref":
                before = [i for i in nouns if i < d]
                row += [bool(nouns) and nouns[0] == g, bool(before) and before[-1] == g]
            bases.append(row)
            owner.append(s)
    if not owner:
        raise ValueError(f"sentences: expected at least one gold arc of {relation!r}, got none")
    return np.array(heads), np.array(bases, dtype=bool), np.array(owner), names


def held_out_selection(
    maps: Sequence[np.ndarray],
    sentences: Sequence[Annotated],
    relation: str,
    *,
    seed: int = 0,
    n_boot: int = 2000,
) -> dict:
    """Select the best head and baseline on one half of the sentences, score them on the other half, and swap.

    Returns relation, count (arcs), in_sample (the best head's accuracy when chosen and scored on all arcs, as
    the lesson's table does), heads and baselines (the pick of each fold, as (layer, head) and a baseline name),
    accuracy and baseline (held-out: every arc scored by a pick made without its sentence) with Wilson 95%
    intervals accuracy_ci and baseline_ci, lead (accuracy - baseline) with lead_ci, a 95% bootstrap interval
    over sentences (seeded), and survives: True when lead_ci lies above 0.
    """
    seed = check_nonnegative_int("seed", seed)
    n_boot = check_positive_int("n_boot", n_boot)
    head_hits, base_hits, owner, names = arc_hits(maps, sentences, relation)
    n_sentences = len(sentences)
    check_size("n_boot", "the bootstrap's resampled sentences", (n_boot, n_sentences, 3), np.float64)
    order = np.random.default_rng(seed).permutation(n_sentences)
    half = np.zeros(n_sentences, dtype=int)
    half[order[n_sentences // 2 :]] = 1  # a random half of the sentences in each fold
    fold = half[owner]  # (arcs,)
    if not ((fold == 0).any() and (fold == 1).any()):
        raise ValueError(f"sentences: expected arcs of {relation!r} in both halves, got them in one only")
    head_scored, base_scored = np.zeros(len(owner), bool), np.zeros(len(owner), bool)
    picks, baselines = [], []
    for f in (0, 1):
        train, test = fold != f, fold == f  # choose on the other half, score on this one
        mean = head_hits[train].mean(axis=0)  # (n_layers, h)
        li, hi = np.unravel_index(int(mean.argmax()), mean.shape)
        b = int(base_hits[train].mean(axis=0).argmax())
        head_scored[test], base_scored[test] = head_hits[test, li, hi], base_hits[test, b]
        picks.append((int(li), int(hi)))
        baselines.append(names[b])
    n = len(owner)
    accuracy, baseline = float(head_scored.mean()), float(base_scored.mean())
    # Bootstrap over sentences: the arcs of one sentence are not independent of each other.
    rng = np.random.default_rng(seed + 1)
    per_sentence = np.zeros((n_sentences, 3))  # head hits, baseline hits, arcs
    np.add.at(per_sentence, owner, np.stack([head_scored, base_scored, np.ones(n)], axis=1))
    draws = per_sentence[rng.integers(0, n_sentences, size=(n_boot, n_sentences))].sum(axis=1)  # (n_boot, 3)
    leads = (draws[:, 0] - draws[:, 1]) / np.maximum(draws[:, 2], 1)
    low, high = (float(q) for q in np.quantile(leads, [0.025, 0.975]))
    return {
        "relation": relation,
        "count": n,
        "in_sample": float(head_hits.mean(axis=0).max()),
        "heads": picks,
        "baselines": baselines,
        "accuracy": accuracy,
        "accuracy_ci": wilson_interval(int(head_scored.sum()), n),
        "baseline": baseline,
        "baseline_ci": wilson_interval(int(base_scored.sum()), n),
        "lead": accuracy - baseline,
        "lead_ci": (low, high),
        "survives": low > 0,
    }
