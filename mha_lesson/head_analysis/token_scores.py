"""Per-token head scores: where a head puts its attention, one number per query (pure numpy).

After Clark et al. (2019), "What Does BERT Look At? An Analysis of BERT's Attention" (BlackboxNLP): the
fraction of attention on the previous, next and same token, on [CLS] and [SEP], and the entropy of each row.
Lesson 15 (what real heads track) scores every head of all-MiniLM-L6-v2 with them and compares the result with
what Clark et al. report for BERT-base (compare_with_clark).

The scores take the weights of one sentence, shape (..., n, n) with queries on rows, keys on columns and each
row summing to 1 (no padding), and return one number per query. Averaging those over a corpus weighs every
token equally, as Clark et al. do. [CLS] is the first token and [SEP] the last.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .._checks import as_finite_array, as_int_array, check_number
from ._common import check_weights


def previous_token(w: np.ndarray) -> np.ndarray:
    """(..., n, n) -> (..., n-1): the weight query i puts on key i-1, for i = 1..n-1."""
    return np.diagonal(check_weights(w), offset=-1, axis1=-2, axis2=-1)


def next_token(w: np.ndarray) -> np.ndarray:
    """(..., n, n) -> (..., n-1): the weight query i puts on key i+1, for i = 0..n-2."""
    return np.diagonal(check_weights(w), offset=1, axis1=-2, axis2=-1)


def same_token(w: np.ndarray) -> np.ndarray:
    """(..., n, n) -> (..., n): the weight query i puts on itself (key i)."""
    return np.diagonal(check_weights(w), axis1=-2, axis2=-1)


def first_token(w: np.ndarray) -> np.ndarray:
    """(..., n, n) -> (..., n): the weight every query puts on key 0, [CLS] in BERT."""
    return check_weights(w)[..., 0]


def last_token(w: np.ndarray) -> np.ndarray:
    """(..., n, n) -> (..., n): the weight every query puts on key n-1, [SEP] for one BERT sentence."""
    return check_weights(w)[..., -1]


def entropy(w: np.ndarray) -> np.ndarray:
    """(..., n, n) -> (..., n): -sum_j w_ij ln w_ij in nats; 0 for a one-hot row, ln n for a uniform one."""
    w = check_weights(w)
    # 0 ln 0 = 0 (the limit): zeros contribute nothing, and log never sees them.
    return -np.sum(w * np.log(np.where(w > 0, w, 1.0)), axis=-1)


SCORES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "previous": previous_token,
    "next": next_token,
    "self": same_token,
    "[CLS]": first_token,
    "[SEP]": last_token,
    "entropy": entropy,
}
LABELS = {
    "previous": "attention on the previous token (fraction)",
    "next": "attention on the next token (fraction)",
    "self": "attention on the same token (fraction)",
    "[CLS]": "attention on [CLS] (fraction)",
    "[SEP]": "attention on [SEP] (fraction)",
    "entropy": "attention entropy (nats)",
}


def corpus_scores(weights: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Each score averaged over every query of every sentence: list of (..., n_s, n_s) -> {name: (...)}."""
    if isinstance(weights, (str, np.ndarray)) or not isinstance(weights, Sequence) or len(weights) == 0:
        raise ValueError(
            f"weights: expected at least one sentence's attention weights (a list of arrays), got {weights!r}"
        )
    weights = [check_weights(w, f"weights[{s}]") for s, w in enumerate(weights)]
    if all(np.shape(w)[-1] < 2 for w in weights):  # previous and next token need a pair of tokens
        raise ValueError("weights: expected at least one sentence of 2 or more tokens, got only 1 x 1 maps")
    lead = np.shape(weights[0])[:-2]
    for s, w in enumerate(weights):
        if np.shape(w)[:-2] != lead:
            raise ValueError(f"weights: expected every item to have leading shape {lead}, item {s} has {np.shape(w)}")
    # Concatenating along the query axis weighs each token once, whatever its sentence's length.
    return {name: np.concatenate([f(w) for w in weights], axis=-1).mean(axis=-1) for name, f in SCORES.items()}


def uniform_baseline(lengths: Sequence[int]) -> dict[str, float]:
    """The same averages for a head that spreads every row evenly over its n keys (each weight 1/n)."""
    n = as_int_array("lengths", lengths, 1)
    if n.size == 0 or (n < 2).any():
        raise ValueError(f"lengths: expected a non-empty list of sentence lengths >= 2, got {n.tolist()}")
    n = n.astype(float)
    per_key = float(np.sum(n * (1 / n)) / n.sum())  # n queries per sentence, each 1/n on any one key
    shifted = float(np.sum((n - 1) / n) / np.sum(n - 1))  # n-1 queries per sentence have a previous key
    ent = float(np.sum(n * np.log(n)) / n.sum())
    return {"previous": shifted, "next": shifted, "self": per_key, "[CLS]": per_key, "[SEP]": per_key, "entropy": ent}


def heads_above(score: np.ndarray, threshold: float) -> list[tuple[int, int]]:
    """(layers, heads) score -> every (layer, head) whose score exceeds threshold, in layer-then-head order."""
    score = as_finite_array("score", score, 2)
    if score.ndim != 2:
        raise ValueError(f"score: expected a 2-D (layers, heads) array, got shape {score.shape}")
    threshold = check_number("threshold", threshold)
    return [(int(li), int(hi)) for li, hi in zip(*np.nonzero(score > threshold), strict=True)]


def _heads(pairs: Sequence[tuple[int, int]]) -> str:
    """'(0, 2), (1, 8)' or 'none'."""
    return ", ".join(f"({li}, {hi})" for li, hi in pairs) or "none"


def compare_with_clark(
    scores: dict[str, np.ndarray], baseline: dict[str, float], threshold: float = 0.5, little: float = 0.25
) -> str:
    """Markdown comparing the measured scores (layers, heads) with what Clark et al. (2019) report for BERT-base.

    Every verdict follows from the numbers: a head is positional or a sink above `threshold`, broad above 80% of
    the uniform entropy, and puts little attention on itself below `little`. The middle layers are those whose
    centre lies, by relative depth, within BERT-base's layers 6-10 of 12 (counted from 1), that is within 5/12 to
    10/12 of the depth: layers 2-4 of a 6-layer model counted from 0. The lower layers are the first half.
    """
    for name, d, keys in (("scores", scores, SCORES), ("baseline", baseline, ("entropy", "[SEP]"))):
        if not isinstance(d, dict) or not set(keys) <= d.keys():
            raise ValueError(f"{name}: expected a dict with keys {sorted(keys)}, got {type(d).__name__}")
    scores = {k: as_finite_array("scores", scores[k], 2) for k in SCORES}
    if len({s.shape for s in scores.values()}) != 1:
        raise ValueError(
            f"scores: expected (layers, heads) arrays of one shape, got {[s.shape for s in scores.values()]}"
        )
    shape = scores["previous"].shape
    if len(shape) != 2 or shape[0] < 2:
        # One layer has no lower half and no middle layers to set against Clark et al.'s.
        raise ValueError(f"scores: expected (layers, heads) arrays of at least 2 layers, got shape {shape}")
    check_number("little", little)
    n_layers, h = shape
    total = n_layers * h
    lower = n_layers // 2  # layers 0 .. lower-1
    # Layer j (from 0) spans depth j/n .. (j+1)/n; its centre (2j+1)/(2n) within [5/12, 10/12], in integers:
    middle = [j for j in range(n_layers) if 10 * n_layers <= 12 * (2 * j + 1) <= 20 * n_layers]
    parts = []

    on_self = int((scores["self"] < little).sum())
    parts.append(
        f"**The current token.** Clark et al. found that most heads put little attention on the current token. "
        f"MiniLM's heads that put less than {little:.0%} on it: {on_self} of {total} (the most any head puts: "
        f"{scores['self'].max():.0%}). **{'Agrees' if on_self > total / 2 else 'Differs'}**."
    )

    prev, nxt = heads_above(scores["previous"], threshold), heads_above(scores["next"], threshold)
    positional = (
        f"**Positional heads.** Clark et al. found heads that specialise in the previous or the next token, "
        f"especially in early layers. MiniLM's heads that put over {threshold:.0%} of their attention on the "
        f"previous token: {len(prev)} ({_heads(prev)}); on the next token: {len(nxt)} ({_heads(nxt)}), as "
        "(layer, head). "
    )
    if not prev + nxt:
        positional += "**Differs**: no MiniLM head is that positional."
    elif all(li < lower for li, _ in prev + nxt):
        positional += f"**Agrees**, and all of them sit in the lower half (layers 0-{lower - 1})."
    else:
        positional += f"**Agrees** that they exist, but not all sit in the lower half (layers 0-{lower - 1})."
    parts.append(positional)

    broad = heads_above(scores["entropy"], 0.8 * baseline["entropy"])
    n_low = sum(li < lower for li, _ in broad)
    verdict = "Agrees" if broad and n_low > len(broad) / 2 else "Differs"
    parts.append(
        f"**Broad heads.** Clark et al. found heads with very broad attention, especially in lower layers. "
        f"MiniLM's heads with an entropy above 80% of the uniform one: {len(broad)}, {n_low} of them in the "
        f"lower half (layers 0-{lower - 1}). **{verdict}**."
    )

    sep_mid, cls_mid = float(scores["[SEP]"][middle].mean()), float(scores["[CLS]"][middle].mean())
    sep_sinks, cls_sinks = heads_above(scores["[SEP]"], threshold), heads_above(scores["[CLS]"], threshold)
    parts.append(
        f"**[SEP] as a sink.** Clark et al. report that over half of BERT-base's attention in its middle layers "
        f"(6-10 of 12, counted from 1) goes to [SEP]. In MiniLM's middle layers ({middle[0]}-{middle[-1]}) [SEP] "
        f"gets {sep_mid:.0%} (attention spread evenly would give it {baseline['[SEP]']:.0%}), and the heads "
        f"that put over {threshold:.0%} on it number {len(sep_sinks)} of {total}. "
        f"**{'Agrees' if sep_mid > 0.5 else 'Differs'}**."
    )

    cls = (
        f"**And [CLS]?** The same middle layers give [CLS] {cls_mid:.0%} of their attention, and the heads that "
        f"put over {threshold:.0%} on it number {len(cls_sinks)} of {total}. "
    )
    if cls_mid > 0.5 >= sep_mid:
        cls += (
            "In MiniLM [CLS] plays the part that [SEP] plays in BERT-base: the habit of parking attention on a "
            "special token is shared, the token is not."
        )
    elif max(cls_mid, sep_mid) <= 0.5:
        cls += "Neither special token takes most of the attention in MiniLM's middle layers."
    else:
        cls += "[SEP] takes more than [CLS] here, as in BERT-base."
    parts.append(cls)
    return "\n\n".join(parts)
