"""Head scores: where a head puts its attention, what it tracks, and whether a task needs it (pure numpy).

The per-token scores take the weights of one sentence, shape (..., n, n) with queries on rows, keys on columns
and each row summing to 1 (no padding), and return one number per query. Averaging those over a corpus weighs
every token equally, as Clark et al. (2019) do for BERT. [CLS] is the first token and [SEP] the last.

Three further measurements are pure functions on arrays, each with a thin all-MiniLM-L6-v2 wrapper:
- syntax and co-reference, as Clark et al. (2019): word_attention, most_attended, relation_accuracy and
  offset_baseline; relation_table scores every head on mha_lesson/data/relations.conllu;
- pruning on a task, as Michel et al. (2019): retrieval_accuracy, retrieval_margin and ablate_heads (by zero or
  by mean); head_importance and prune_curve on mha_lesson/data/paraphrases.tsv, whose results (minutes to
  compute) pruning_reference() ships;
- value-norm weighting, as Kobayashi et al. (2020): value_norms and norm_weighted; sink_scores.

Annotation guideline of relations.conllu (also in its header). Tokens are the words a BERT tokenizer sees:
split at spaces and before punctuation; the sentences avoid apostrophes, hyphens and digits, so every token is
one word of the uncased WordPiece tokenizer. Every sentence has a full Universal Dependencies (v2) tree in HEAD
and DEPREL, with UPOS; LEMMA, XPOS, FEATS and DEPS are left unspecified. The scored relations are det (an
article, demonstrative or quantifier such as every or some -> its noun), nsubj (the subject -> its verb; there
are no copular or passive clauses, so every nsubj head is a verb), obj (the direct object -> its verb; the
second object of give or show is iobj and not scored), amod (an adjective, including participles used as
adjectives such as broken -> its noun) and nmod:poss (a possessive pronoun such as my, its or their -> its
noun; there is no apostrophe s). Co-reference is in the MISC column: a personal pronoun whose antecedent is a
noun phrase in another clause of the same sentence carries Antecedent=ID, the ID of that phrase's head word.
Only pronouns whose antecedent is clear from gender, number or grammar are marked, and possessive pronouns
are not marked even when they co-refer. Punctuation attaches with punct: a full stop to the root, a comma to
the conjunct or clause it separates.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from . import pretrained
from ._blas import one_blas_thread
from ._checks import as_array, as_finite_array, as_float_array, as_int_array, check_number, check_size, is_int
from .attention import padding_mask
from .encoder import encoder_layer
from .heads import split_heads
from .multihead import multi_head_attention
from .projections import MHAParams

DATA = Path(__file__).parent / "data"


def _weights(w: np.ndarray, name: str = "w") -> np.ndarray:
    """Return w as a finite float array of square (..., n, n) matrices, or raise ValueError naming the argument."""
    # Scores a learner computes on their own attention: a NaN would silently become a NaN score.
    w = as_finite_array(name, w, 2)
    if w.shape[-1] != w.shape[-2]:
        raise ValueError(f"{name}: expected self-attention weights of shape (..., n, n), got {w.shape}")
    return w


def previous_token(w: np.ndarray) -> np.ndarray:
    """(..., n, n) -> (..., n-1): the weight query i puts on key i-1, for i = 1..n-1."""
    return np.diagonal(_weights(w), offset=-1, axis1=-2, axis2=-1)


def next_token(w: np.ndarray) -> np.ndarray:
    """(..., n, n) -> (..., n-1): the weight query i puts on key i+1, for i = 0..n-2."""
    return np.diagonal(_weights(w), offset=1, axis1=-2, axis2=-1)


def same_token(w: np.ndarray) -> np.ndarray:
    """(..., n, n) -> (..., n): the weight query i puts on itself (key i)."""
    return np.diagonal(_weights(w), axis1=-2, axis2=-1)


def first_token(w: np.ndarray) -> np.ndarray:
    """(..., n, n) -> (..., n): the weight every query puts on key 0, [CLS] in BERT."""
    return _weights(w)[..., 0]


def last_token(w: np.ndarray) -> np.ndarray:
    """(..., n, n) -> (..., n): the weight every query puts on key n-1, [SEP] for one BERT sentence."""
    return _weights(w)[..., -1]


def entropy(w: np.ndarray) -> np.ndarray:
    """(..., n, n) -> (..., n): -sum_j w_ij ln w_ij in nats; 0 for a one-hot row, ln n for a uniform one."""
    w = _weights(w)
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
    weights = [_weights(w, f"weights[{s}]") for s, w in enumerate(weights)]
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
    check_number("little", little)
    n_layers, h = scores["previous"].shape
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


# Syntax and co-reference heads (Clark et al. 2019) -----------------------------------------------------------

# Universal Dependencies relations scored dependent -> head, then "coref": pronoun -> antecedent (MISC Antecedent).
RELATIONS = ("det", "nsubj", "obj", "amod", "nmod:poss", "coref")
RELATION_LABELS = {
    "det": "determiner → noun",
    "nsubj": "subject → verb",
    "obj": "direct object → verb",
    "amod": "adjective → noun",
    "nmod:poss": "possessive → noun",
    "coref": "pronoun → antecedent",
}
# Clark et al.'s baseline always predicts the word k places from the dependent, for the best fixed k: their code
# tries `range(-3, 3)` (Syntax_Analysis.ipynb), so k runs from -3 to +2; k = 0 (the word itself) never hits.
OFFSETS = (-3, -2, -1, 1, 2)
# "dependent->head": the dependent's most-attended word; "head->dependent": the word that attends most to the
# dependent. Clark et al. score both and report the better; the lesson's question is the first.
DIRECTIONS = ("dependent->head", "head->dependent")


@dataclasses.dataclass(frozen=True, eq=False)
class Annotated:
    """One hand-annotated sentence: its text, words, UPOS tags and gold arcs by relation.

    Words count from 0; arcs[relation] holds (dependent, head) pairs of word indices, for "coref" (pronoun,
    antecedent).
    """

    text: str
    words: tuple[str, ...]
    upos: tuple[str, ...]
    arcs: dict[str, tuple[tuple[int, int], ...]]


def _read_data(path: object, default: str) -> tuple[Path, str]:
    """(path, its UTF-8 text); None means the shipped data file `default`. ValueError naming path if unreadable."""
    if path is None:
        path = DATA / default
    if not isinstance(path, (str, Path)):
        raise ValueError(f"path: expected a file path (str or Path) or None, got {type(path).__name__}")
    try:
        return Path(path), Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"path: expected a readable UTF-8 text file, got {str(path)!r}: {exc}") from None


def load_relations(path: str | Path | None = None) -> list[Annotated]:
    """The sentences of a CoNLL-U file (default: the shipped relations.conllu) with their arcs for RELATIONS."""
    import conllu  # only this reader needs it: the rest of the module works without it

    path, text = _read_data(path, "relations.conllu")
    sentences = []
    for s, tokens in enumerate(conllu.parse(text), start=1):
        if "text" not in tokens.metadata:
            raise ValueError(f"{path.name}: expected a '# text = ...' line for sentence {s}, got none")
        if any(not isinstance(t["id"], int) for t in tokens):
            raise ValueError(f"{path.name}: expected plain word tokens in sentence {s}, got a multiword or empty node")
        arcs = {
            rel: tuple((t["id"] - 1, t["head"] - 1) for t in tokens if t["deprel"] == rel) for rel in RELATIONS[:-1]
        }
        arcs["coref"] = tuple(
            (t["id"] - 1, int(t["misc"]["Antecedent"]) - 1) for t in tokens if t["misc"] and "Antecedent" in t["misc"]
        )
        words, upos = tuple(t["form"] for t in tokens), tuple(t["upos"] for t in tokens)
        sentences.append(Annotated(text=tokens.metadata["text"], words=words, upos=upos, arcs=arcs))
    return sentences


def word_groups(word_ids: Sequence[int | None]) -> list[list[int]]:
    """Positions of each word's pieces, in order; a piece with no word (None: [CLS], [SEP]) is a word of its own."""
    if isinstance(word_ids, (str, dict)) or not isinstance(word_ids, Sequence):
        raise ValueError(f"word_ids: expected a list with None or a word index per piece, got {word_ids!r}")
    groups: list[list[int]] = []
    seen: set[int] = set()
    previous = None
    for p, w in enumerate(word_ids):
        if w is not None and (isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 0):
            raise ValueError(f"word_ids: expected None or a non-negative integer for each piece, got {w!r} at {p}")
        if w is not None and w == previous:
            groups[-1].append(p)
            continue
        if w in seen:
            raise ValueError(f"word_ids: expected each word's pieces side by side, word {w} comes back at piece {p}")
        if w is not None:
            seen.add(int(w))
        groups.append([p])
        previous = w
    return groups


def word_attention(weights: np.ndarray, word_ids: Sequence[int | None]) -> np.ndarray:
    """(..., n_pieces, n_pieces) -> (..., n_words, n_words): sum over a word's key pieces, mean over its query pieces.

    This is Clark et al.'s conversion: a word receives all the attention its pieces receive, and attends as its
    pieces do on average, so rows still sum to 1. word_ids gives each piece's word as tokenizers does
    (MiniLM.word_ids); a None piece ([CLS], [SEP]) stays a word of its own, so for one sentence row 0 is [CLS],
    row k + 1 is word k and the last row is [SEP], and they can be left out by position.
    """
    w = _weights(weights, "weights")
    if isinstance(word_ids, str) or not isinstance(word_ids, Sequence) or len(word_ids) != w.shape[-1]:
        raise ValueError(f"word_ids: expected one entry per word piece ({w.shape[-1]}), got {word_ids!r}")
    groups = word_groups(word_ids)
    member = np.zeros((len(groups), w.shape[-1]), dtype=w.dtype)  # (n_words, n_pieces): 1 where a piece is the word's
    for g, pieces in enumerate(groups):
        member[g, pieces] = 1.0
    return (member / member.sum(axis=1, keepdims=True)) @ w @ member.T


def most_attended(word_weights: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """(..., m, m) weights, (m,) bool -> (..., m) int: each query word's most-attended candidate other than itself.

    Clark et al. leave out the word itself, [CLS] and [SEP]; candidates also leaves out punctuation here. A row
    with no candidate left gets 0 ([CLS]), which is never a gold word.
    """
    w = _weights(word_weights, "word_weights")
    m = w.shape[-1]
    candidates = as_array("candidates", candidates)
    if candidates.dtype != np.bool_ or candidates.shape != (m,):
        raise ValueError(
            f"candidates: expected a boolean array of shape ({m},), got {candidates.dtype} {candidates.shape}"
        )
    allowed = candidates & ~np.eye(m, dtype=bool)  # (m, m): query row i may choose key j
    return np.where(allowed, w, -np.inf).argmax(axis=-1)


def _check_arcs(arcs: Sequence[Sequence[tuple[int, int]]], sizes: Sequence[int], per: str) -> int:
    """Total number of arcs, or ValueError unless arcs holds one list of (dependent, head) word pairs per sentence.

    sizes: each sentence's number of words; every index must lie in [0, size). per: the argument that gave sizes.
    """
    if isinstance(arcs, str) or not isinstance(arcs, Sequence) or len(arcs) != len(sizes):
        raise ValueError(
            f"arcs: expected one list of (dependent, head) per sentence of {per} ({len(sizes)}), got {arcs!r}"
        )
    for sentence, m in zip(arcs, sizes, strict=True):
        for arc in sentence if isinstance(sentence, Sequence) else [sentence]:
            if not (isinstance(arc, Sequence) and len(arc) == 2 and all(is_int(i) and 0 <= i < m for i in arc)):
                raise ValueError(f"arcs: expected (dependent, head) pairs of word indices in [0, {m}), got {arc!r}")
    total = sum(len(a) for a in arcs)
    if total == 0:
        raise ValueError("arcs: expected at least one (dependent, head) arc, got none")
    return total


def relation_accuracy(predicted: Sequence[np.ndarray], arcs: Sequence[Sequence[tuple[int, int]]]) -> np.ndarray:
    """Fraction of arcs (dependent, head) whose dependent's predicted word is the head: list of (..., m) -> (...)."""
    if isinstance(predicted, (str, np.ndarray)) or not isinstance(predicted, Sequence):
        raise ValueError(f"predicted: expected a list of each sentence's (..., m) predictions, got {predicted!r}")
    if not predicted:
        raise ValueError("predicted: expected at least one sentence's predictions, got an empty list")
    predicted = [as_finite_array(f"predicted[{s}]", p) for s, p in enumerate(predicted)]
    _check_arcs(arcs, [p.shape[-1] if p.ndim else 0 for p in predicted], "predicted")
    hits = [
        np.asarray(p)[..., [d for d, _ in a]] == np.array([h for _, h in a])  # (..., arcs of this sentence)
        for p, a in zip(predicted, arcs, strict=True)
        if len(a)
    ]
    return np.concatenate(hits, axis=-1).mean(axis=-1)


def offset_baseline(
    candidates: Sequence[np.ndarray], arcs: Sequence[Sequence[tuple[int, int]]], offsets: Sequence[int] = OFFSETS
) -> dict[int, float]:
    """{k: accuracy of always choosing the candidate word k places from the dependent}, for each k in offsets.

    Places count candidate words only, the words most_attended may choose: punctuation is skipped by both.
    """
    if isinstance(candidates, (str, np.ndarray)) or not isinstance(candidates, Sequence):
        raise ValueError(f"candidates: expected a list of each sentence's (m,) boolean candidates, got {candidates!r}")
    if not candidates:
        raise ValueError("candidates: expected at least one sentence's candidates, got an empty list")
    candidates = [as_array(f"candidates[{s}]", c) for s, c in enumerate(candidates)]
    if not all(c.dtype == np.bool_ and c.ndim == 1 for c in candidates):
        raise ValueError("candidates: expected a 1-D boolean array (True = a candidate word) for each sentence")
    if isinstance(offsets, str) or not isinstance(offsets, Sequence) or not all(is_int(k) for k in offsets):
        raise ValueError(f"offsets: expected a list of integer offsets such as (-1, 1), got {offsets!r}")
    total = _check_arcs(arcs, [len(c) for c in candidates], "candidates")
    hits = dict.fromkeys(offsets, 0)
    for cand, sentence_arcs in zip(candidates, arcs, strict=True):
        positions = np.flatnonzero(cand)  # word index of each candidate, in order
        rank = {int(p): r for r, p in enumerate(positions)}
        for d, h in sentence_arcs:
            for k in offsets:
                r = rank.get(d, -len(positions) - 4) + k  # a dependent that is no candidate hits nothing
                hits[k] += bool(0 <= r < len(positions) and positions[r] == h)
    return {k: hits[k] / total for k in offsets}


def word_maps(model: pretrained.MiniLM, sentences: Sequence[Annotated]) -> list[np.ndarray]:
    """Each sentence's word-level attention (n_layers, h, n_words + 2, n_words + 2), [CLS] first and [SEP] last.

    All sentences run through the model in one padded batch (MiniLM.attentions_many).
    """
    texts = [s.text for s in sentences]
    maps = []
    for s, (_, w), ids in zip(sentences, model.attentions_many(texts), model.word_ids(texts), strict=True):
        m = word_attention(w, ids)
        if m.shape[-1] != len(s.words) + 2:
            raise ValueError(
                f"sentences: expected the tokenizer to split {s.text!r} into its {len(s.words)} annotated words, "
                f"got {m.shape[-1] - 2}"
            )
        maps.append(m)
    return maps


def _candidates(sentence: Annotated) -> np.ndarray:
    """(n_words + 2,) bool in word_maps' order: True for every word but [CLS], [SEP] and punctuation."""
    return np.array([False, *(u != "PUNCT" for u in sentence.upos), False])


def relation_table(
    model: pretrained.MiniLM,
    sentences: Sequence[Annotated] | None = None,
    *,
    directions: Sequence[str] = ("dependent->head",),
    maps: Sequence[np.ndarray] | None = None,
) -> list[dict]:
    """One row per relation, direction, layer and head: its accuracy, the best fixed-offset baseline and the count.

    Each row is {relation, direction, layer, head, accuracy, baseline, offset, count}: offset is the baseline's
    k and count the number of gold arcs. sentences default to load_relations(); maps (word_maps of the same
    sentences) are computed once in one padded batch when not given.
    """
    sentences = load_relations() if sentences is None else list(sentences)
    bad = [d for d in directions if d not in DIRECTIONS]
    if bad or not directions:
        raise ValueError(f"directions: expected some of {DIRECTIONS}, got {list(directions)}")
    maps = word_maps(model, sentences) if maps is None else list(maps)
    candidates = [_candidates(s) for s in sentences]
    # word_maps put [CLS] first, so word k of a sentence is row k + 1.
    arcs = {rel: [[(d + 1, h + 1) for d, h in s.arcs[rel]] for s in sentences] for rel in RELATIONS}
    rows = []
    for direction in directions:
        # Row i of the transposed map holds what every query puts on word i: its argmax is who attends most to i.
        flip = direction == "head->dependent"
        predicted = [most_attended(m.swapaxes(-1, -2) if flip else m, c) for m, c in zip(maps, candidates, strict=True)]
        for rel in (r for r in RELATIONS if any(arcs[r])):  # a relation with no gold arc has no row
            accuracy = relation_accuracy(predicted, arcs[rel])  # (n_layers, h)
            offset, baseline = max(offset_baseline(candidates, arcs[rel]).items(), key=lambda kv: kv[1])
            count = sum(len(a) for a in arcs[rel])
            rows += [
                {"relation": rel, "direction": direction, "layer": li, "head": hi, "accuracy": float(accuracy[li, hi]),
                 "baseline": baseline, "offset": offset, "count": count}
                for li, hi in np.ndindex(accuracy.shape)
            ]  # fmt: skip
    return rows


def antecedent_baselines(sentences: Sequence[Annotated]) -> dict[str, float]:
    """Co-reference baselines that know nouns: always the sentence's first noun, or the nearest noun before the pronoun.

    The fixed-offset baseline is weak for pronouns, whose antecedents lie a clause away; these two are closer to
    Clark et al.'s "nearest mention" baseline. Nouns are NOUN and PROPN words.
    """
    hits, total = {"first noun": 0, "nearest noun": 0}, 0
    for s in sentences:
        nouns = [i for i, u in enumerate(s.upos) if u in ("NOUN", "PROPN")]
        for pronoun, antecedent in s.arcs["coref"]:
            before = [i for i in nouns if i < pronoun]
            hits["first noun"] += bool(nouns) and nouns[0] == antecedent
            hits["nearest noun"] += bool(before) and before[-1] == antecedent
            total += 1
    if total == 0:
        raise ValueError("sentences: expected at least one pronoun with an antecedent, got none")
    return {name: n / total for name, n in hits.items()}


def _check_rows(rows: object) -> list[dict]:
    """relation_table's rows, or ValueError naming rows."""
    if isinstance(rows, (str, dict)) or not isinstance(rows, Sequence):
        raise ValueError(f"rows: expected relation_table's list of rows, got {type(rows).__name__}")
    keys = ("relation", "direction", "layer", "head", "accuracy")
    for r in rows:
        if not isinstance(r, dict) or not all(k in r for k in keys):
            raise ValueError(f"rows: expected dicts with keys {keys} as relation_table gives, got {r!r}")
    return list(rows)


def best_heads(rows: Sequence[dict]) -> list[dict]:
    """The row with the highest accuracy for each relation in rows, in RELATIONS order (first one on a tie)."""
    best: dict[str, dict] = {}
    for row in _check_rows(rows):
        if row["relation"] not in best or row["accuracy"] > best[row["relation"]]["accuracy"]:
            best[row["relation"]] = row
    return [best[rel] for rel in RELATIONS if rel in best]


def relation_grid(rows: Sequence[dict], relation: str, direction: str = "dependent->head") -> np.ndarray:
    """(n_layers, h) accuracy of every head for one relation and direction, from relation_table's rows."""
    if not isinstance(direction, str) or direction not in DIRECTIONS:
        raise ValueError(f"direction: expected one of {DIRECTIONS}, got {direction!r}")
    chosen = [r for r in _check_rows(rows) if r["relation"] == relation and r["direction"] == direction]
    for r in chosen:
        if not (is_int(r["layer"]) and is_int(r["head"]) and r["layer"] >= 0 and r["head"] >= 0):
            raise ValueError(f"rows: expected non-negative integer layer and head, got {r['layer']!r}, {r['head']!r}")
    if not chosen:
        raise ValueError(
            f"relation: expected one of the rows' relations and directions, got {relation!r}, {direction!r}"
        )
    shape = (max(r["layer"] for r in chosen) + 1, max(r["head"] for r in chosen) + 1)
    check_size("rows", "the grid", shape, np.float64)
    grid = np.full(shape, np.nan)
    for r in chosen:
        grid[r["layer"], r["head"]] = r["accuracy"]
    return grid


# Value-norm weighting (Kobayashi et al. 2020) ----------------------------------------------------------------


def value_norms(x: np.ndarray, params: MHAParams) -> np.ndarray:
    """x (..., n, d_model) -> (..., h, n): ||(x_j W_i^V + b_i^V) W_i^O||, the size of what token j adds via head i."""
    x = as_finite_array("x", x, 2)
    if not isinstance(params, MHAParams):
        raise ValueError(f"params: expected an MHAParams, got {type(params).__name__}")
    if x.shape[-1] != params.d_model:
        raise ValueError(f"x: expected shape (..., n, d_model={params.d_model}) to match params, got {x.shape}")
    rows, d_k = x.reshape(-1, params.d_model) @ params.w_v, params.d_k  # (tokens, d_model): all tokens, one product
    if params.b_v is not None:
        rows += params.b_v
    # One (tokens, d_k) @ (d_k, d_model) product per head: far faster than numpy's batches of tiny products.
    norms = np.stack(
        [np.linalg.norm(rows[:, i * d_k : (i + 1) * d_k] @ params.w_o_head(i), axis=-1) for i in range(params.h)]
    )
    return np.moveaxis(norms.reshape(params.h, *x.shape[:-1]), 0, -2)  # (h, ..., n) -> (..., h, n)


def norm_weighted(weights: np.ndarray, norms: np.ndarray) -> np.ndarray:
    """||A_ij v_j W_i^O|| = A_ij ||v_j W_i^O||: weights (..., h, n, n) and value_norms (..., h, n) -> (..., h, n, n)."""
    w = _weights(weights, "weights")
    norms = as_finite_array("norms", norms)
    if norms.shape != w.shape[:-1]:
        raise ValueError(f"norms: expected shape {w.shape[:-1]} (..., h, n) to match weights, got {norms.shape}")
    return w * norms[..., None, :]  # weights are >= 0, so the norm of A_ij f(x_j) is A_ij ||f(x_j)||


def _trace(model: pretrained.MiniLM, ids: np.ndarray, lengths: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Every layer's input (N, n, d_model) plus the last output, and every layer's weights (N, h, n, n)."""
    mask = padding_mask(lengths, ids.shape[-1])  # (N, 1, 1, n)
    inputs, weights = [model.embed(ids)], []
    for layer in model.layers:
        x, w = encoder_layer(inputs[-1], layer, mask, need_weights=True)
        inputs.append(x)
        weights.append(w)
    return inputs, weights


def sink_scores(model: pretrained.MiniLM, sentences: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
    """The sink plot both ways: corpus_scores of the attention weights and of the value-norm-weighted maps.

    Returns {"attention": corpus_scores(A), "value-norm": corpus_scores(A_ij ||v_j W_i^O|| with every row rescaled
    to sum to 1), "norms": {"[CLS]", "[SEP]", "other"}: mean ||v_j W_i^O|| per (layer, head) of those tokens}.
    sentences default to pretrained.corpus(); all run in one padded batch.
    """
    sentences = pretrained.corpus() if sentences is None else sentences
    ids, lengths, _ = model.tokenize(sentences)
    # Small products, as in MiniLM.attentions_many: one BLAS thread (see mha_lesson._blas).
    with one_blas_thread():
        inputs, weights = _trace(model, ids, lengths)
        norms = np.stack(
            [value_norms(x, layer.attn) for x, layer in zip(inputs[:-1], model.layers, strict=True)], axis=1
        )  # (N, L, h, n)
    attention = np.stack(weights, axis=1)  # (N, L, h, n, n)
    weighted = norm_weighted(attention, norms)
    total = weighted.sum(axis=-1, keepdims=True)
    weighted = np.divide(weighted, total, out=np.zeros_like(weighted), where=total > 0)
    cut = [slice(None, int(n)) for n in lengths]  # each sentence's own tokens: padded queries and keys go
    other = np.concatenate([norms[b, ..., 1 : c.stop - 1] for b, c in enumerate(cut)], axis=-1)  # (L, h, tokens)
    return {
        "attention": corpus_scores([attention[b][..., c, c] for b, c in enumerate(cut)]),
        "value-norm": corpus_scores([weighted[b][..., c, c] for b, c in enumerate(cut)]),
        "norms": {
            "[CLS]": norms[..., 0].mean(axis=0),
            "[SEP]": np.mean([norms[b, ..., c.stop - 1] for b, c in enumerate(cut)], axis=0),
            "other": other.mean(axis=-1),
        },
    }


# Pruning on a task (Michel et al. 2019) ----------------------------------------------------------------------


class Paraphrase(NamedTuple):
    """One row of paraphrases.tsv."""

    topic: str
    sentence: str
    paraphrase: str


def load_paraphrases(path: str | Path | None = None) -> list[Paraphrase]:
    """Rows of a tab-separated file (default: the shipped paraphrases.tsv): topic, sentence, paraphrase; # = comment."""
    path, text = _read_data(path, "paraphrases.tsv")
    lines = [line for line in text.splitlines() if line.strip() and line[0] != "#"]
    if not lines or lines[0].split("\t") != list(Paraphrase._fields):
        raise ValueError(f"{path.name}: expected the header {'<tab>'.join(Paraphrase._fields)}, got {lines[:1]}")
    rows = [line.split("\t") for line in lines[1:]]
    bad = [i for i, r in enumerate(rows, start=2) if len(r) != 3 or not all(f.strip() for f in r)]
    if bad:
        raise ValueError(f"{path.name}: expected 3 non-empty tab-separated fields on every row, not on rows {bad}")
    return [Paraphrase(*r) for r in rows]


def _retrieval_inputs(similarity: np.ndarray, partner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate (..., m, m) similarities and (m,) partners; return the similarities with the diagonal at -inf."""
    s = as_finite_array("similarity", similarity, 2)
    m = s.shape[-1]
    if s.shape[-2] != m:
        raise ValueError(f"similarity: expected square (..., m, m) matrices between all sentences, got {s.shape}")
    partner = as_array("partner", partner)
    if (
        partner.shape != (m,)
        or not np.issubdtype(partner.dtype, np.integer)
        or ((partner < 0) | (partner >= m) | (partner == np.arange(m))).any()
    ):
        raise ValueError(f"partner: expected ({m},) indices of another sentence, got {partner!r}")
    # A sentence is never its own neighbour.
    return np.where(np.eye(m, dtype=bool), -np.inf, s), partner


def retrieval_accuracy(similarity: np.ndarray, partner: np.ndarray) -> np.ndarray:
    """Fraction of sentences whose most similar other sentence is their paraphrase: (..., m, m), (m,) -> (...)."""
    others, partner = _retrieval_inputs(similarity, partner)
    return (others.argmax(axis=-1) == partner).mean(axis=-1)


def retrieval_margin(similarity: np.ndarray, partner: np.ndarray) -> np.ndarray:
    """Mean of (similarity to the paraphrase - the highest to any other sentence): (..., m, m), (m,) -> (...).

    Positive for a sentence that retrieves its paraphrase, and graded where accuracy only counts.
    """
    others, partner = _retrieval_inputs(similarity, partner)
    rows = np.arange(len(partner))
    to_partner = others[..., rows, partner].copy()  # (..., m)
    others[..., rows, partner] = -np.inf
    return (to_partner - others.max(axis=-1)).mean(axis=-1)


def head_outputs(x: np.ndarray, params: MHAParams, mask: np.ndarray | None = None) -> np.ndarray:
    """x (..., n, d_model) -> (..., h, n, d_k): every head's output A_i V_i, before W^O mixes the heads."""
    if not isinstance(params, MHAParams):
        raise ValueError(f"params: expected an MHAParams, got {type(params).__name__}")
    # Checked here, so that a bad x is blamed on x and not on the attention's q.
    x = as_finite_array("x", x, 2)
    if x.shape[-1] != params.d_model:
        raise ValueError(f"x: expected shape (..., n, d_model={params.d_model}) to match params, got {x.shape}")
    _, weights = multi_head_attention(x, x, x, params, mask)  # (..., h, n, n)
    v = (x.reshape(-1, params.d_model) @ params.w_v).reshape(x.shape)  # (..., n, d_model): one product
    if params.b_v is not None:
        v += params.b_v
    return weights @ split_heads(v, params.h)


def ablate_heads(params: MHAParams, heads: Iterable[int], means: np.ndarray | None = None) -> MHAParams:
    """A copy with the listed heads switched off: by zero, or with means (h, d_k) by each head's mean output.

    Zero-ablation zeroes head i's rows of W^O, so it adds nothing. Mean-ablation replaces head i's output by
    means[i] for every token; a constant output adds the constant means[i] @ W_i^O to every token, which is a
    bias: it goes into b^O. So mean-ablation keeps what a head adds on average and removes only what it adds
    differently for different tokens.
    """
    if not isinstance(params, MHAParams):
        raise ValueError(f"params: expected an MHAParams, got {type(params).__name__}")
    heads = params.head_indices(heads)
    out = params.without_heads(heads)
    if means is None:
        return out
    means = as_finite_array("means", means, 2)
    if means.shape != (params.h, params.d_k):
        raise ValueError(f"means: expected shape ({params.h}, {params.d_k}) (h, d_k), got {means.shape}")
    shift = sum((means[i] @ params.w_o_head(i) for i in heads), start=np.zeros(params.d_model))  # (d_model,)
    b_o = shift if params.b_o is None else params.b_o + shift
    return dataclasses.replace(out, b_o=b_o.astype(params.dtype))


def ablated_model(
    model: pretrained.MiniLM, heads: Iterable[tuple[int, int]], means: np.ndarray | None = None
) -> pretrained.MiniLM:
    """A copy with the listed (layer, head) pairs switched off, by zero or, given means (n_layers, h, d_k), by mean."""
    by_layer: dict[int, list[int]] = {}
    for layer, head in pretrained._check_model(model).layer_heads(heads):
        by_layer.setdefault(layer, []).append(head)
    if means is not None:
        means = as_finite_array("means", means, 3)
        if means.shape != (model.n_layers, model.h, model.layers[0].attn.d_k):
            raise ValueError(f"means: expected shape (n_layers, h, d_k) of this model, got {means.shape}")
    layers = tuple(
        dataclasses.replace(p, attn=ablate_heads(p.attn, by_layer[i], None if means is None else means[i]))
        if i in by_layer
        else p
        for i, p in enumerate(model.layers)
    )
    return dataclasses.replace(model, layers=layers)


@dataclasses.dataclass(frozen=True, eq=False)
class _Retrieval:
    """The paraphrase task as one padded batch: sentences, then all paraphrases; intact layer inputs kept."""

    ids: np.ndarray  # (N, n)
    lengths: np.ndarray  # (N,)
    mask: np.ndarray  # (N, 1, 1, n)
    partner: np.ndarray  # (N,): index of each sentence's paraphrase
    inputs: tuple[np.ndarray, ...]  # n_layers + 1 arrays (N, n, d_model): each layer's input, then the output
    means: np.ndarray  # (n_layers, h, d_k): each head's mean output over all real tokens, intact model

    def score(self, hidden: np.ndarray) -> tuple[float, float]:
        """Retrieval accuracy and mean margin of the sentence embeddings of the last layer's output (N, n, d)."""
        emb = pretrained.l2_normalize(pretrained.mean_pool(hidden, self.lengths))  # (N, d_model)
        sims = emb @ emb.T  # unit vectors: cosine
        return float(retrieval_accuracy(sims, self.partner)), float(retrieval_margin(sims, self.partner))

    def run(self, layers: Sequence, x: np.ndarray) -> list[np.ndarray]:
        """The outputs of layers applied in turn to x (N, n, d_model)."""
        out = []
        for layer in layers:
            x = encoder_layer(x, layer, self.mask)[0]
            out.append(x)
        return out


def _pairs_key(pairs: Sequence | None) -> tuple[tuple[str, str], ...]:
    """(sentence, paraphrase) pairs as a hashable tuple; None means every shipped pair."""
    if pairs is None:
        return tuple((p.sentence, p.paraphrase) for p in load_paraphrases())
    if isinstance(pairs, str) or not isinstance(pairs, Sequence) or len(pairs) < 2:
        raise ValueError(f"pairs: expected at least 2 (sentence, paraphrase) pairs, got {pairs!r}")
    # A string is a sequence too: 'ab' would silently read as the pair ('a', 'b').
    if not all(isinstance(p, Sequence) and not isinstance(p, str) and len(p) >= 2 for p in pairs):
        raise ValueError("pairs: expected every pair to be a tuple (sentence, paraphrase), not a string")
    key = tuple((p[-2], p[-1]) for p in pairs)  # a Paraphrase row ends with its two sentences too
    if not all(isinstance(s, str) for pair in key for s in pair):
        raise ValueError("pairs: expected every pair to end with two strings (sentence, paraphrase)")
    return key


@functools.lru_cache(maxsize=2)
def _retrieval(model: pretrained.MiniLM, pairs: tuple[tuple[str, str], ...]) -> _Retrieval:
    """The task for model and pairs, run once intact and kept: importance and the curves start from it."""
    sentences = [a for a, _ in pairs] + [b for _, b in pairs]
    p = len(pairs)
    ids, lengths, _ = model.tokenize(sentences)
    mask = padding_mask(lengths, ids.shape[-1])
    keep = (np.arange(ids.shape[1]) < lengths[:, None])[:, None, :, None]  # (N, 1, n, 1): real tokens
    with one_blas_thread():
        inputs, _ = _trace(model, ids, lengths)
        means = np.stack(
            [
                (head_outputs(x, layer.attn, mask) * keep).sum(axis=(0, 2)) / keep.sum()
                for x, layer in zip(inputs[:-1], model.layers, strict=True)
            ]
        )  # (n_layers, h, d_k)
    partner = np.concatenate([np.arange(p, 2 * p), np.arange(p)])
    return _Retrieval(ids=ids, lengths=lengths, mask=mask, partner=partner, inputs=tuple(inputs), means=means)


MODES = ("zero", "mean")


def _means(task: _Retrieval, mode: str) -> np.ndarray | None:
    """The head means mean-ablation needs, or None for zero-ablation."""
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"mode: expected one of {MODES}, got {mode!r}")
    return task.means if mode == "mean" else None


def head_importance(
    model: pretrained.MiniLM,
    pairs: Sequence | None = None,
    *,
    mode: str = "zero",
    heads: Iterable[tuple[int, int]] | None = None,
) -> dict[str, np.ndarray | float]:
    """How much paraphrase retrieval drops when one head alone is switched off, by zero or by its mean.

    Returns accuracy_drop and margin_drop, (n_layers, h) arrays (intact minus ablated; NaN for heads not in
    `heads`, default all), and intact_accuracy and intact_margin. pairs default to every shipped pair; each
    ablation reruns only the layers from the head's own layer on, starting from the kept intact inputs. This is
    Michel et al.'s one-head-at-a-time ablation measured on a task; their pruning ranks heads by a gradient
    estimate of the same effect instead, which needs backpropagation that this numpy model does not have.
    """
    task = _retrieval(pretrained._check_model(model), _pairs_key(pairs))
    means = _means(task, mode)
    heads = None if heads is None else model.layer_heads(heads)
    intact_accuracy, intact_margin = task.score(task.inputs[-1])
    wanted = [(li, hi) for li in range(model.n_layers) for hi in range(model.h)] if heads is None else list(heads)
    accuracy, margin = np.full((model.n_layers, model.h), np.nan), np.full((model.n_layers, model.h), np.nan)
    for li, hi in wanted:
        layers = ablated_model(model, [(li, hi)], None if means is None else means).layers
        with one_blas_thread():  # as head_ablation: on two busy cores one BLAS thread is the faster
            hidden = task.run(layers[li:], task.inputs[li])[-1]
        accuracy[li, hi], margin[li, hi] = task.score(hidden)
    return {
        "accuracy_drop": intact_accuracy - accuracy,
        "margin_drop": intact_margin - margin,
        "intact_accuracy": intact_accuracy,
        "intact_margin": intact_margin,
    }


def prune_order(importance: dict[str, np.ndarray | float]) -> list[tuple[int, int]]:
    """Every (layer, head), least important first: by accuracy drop, ties broken by margin drop, then position."""
    if not isinstance(importance, dict) or not {"accuracy_drop", "margin_drop"} <= importance.keys():
        raise ValueError(
            f"importance: expected head_importance's dict with accuracy_drop and margin_drop, got {importance!r}"
        )
    accuracy = as_float_array("importance", importance["accuracy_drop"], 0)
    margin = as_float_array("importance", importance["margin_drop"], 0)
    if np.isnan(accuracy).any() or accuracy.shape != margin.shape or accuracy.ndim != 2:
        raise ValueError("importance: expected head_importance of every head (no NaN), as (n_layers, h) arrays")
    flat = np.lexsort((margin.ravel(), accuracy.ravel()))  # last key sorts first
    return [(int(i) // accuracy.shape[1], int(i) % accuracy.shape[1]) for i in flat]


def prune_curve(
    model: pretrained.MiniLM,
    pairs: Sequence | None = None,
    *,
    mode: str = "zero",
    order: Sequence[tuple[int, int]] | None = None,
    counts: Sequence[int] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Retrieval accuracy as heads are switched off together, least important first: (fractions, accuracies).

    Like Michel et al. (2019), heads go in order of increasing importance; here the order is ranked once, from
    each head's importance on its own (default: prune_order(head_importance(model, pairs, mode=mode))), since
    re-ranking after every removal would cost a full importance run per step. counts (increasing; default 0, 1,
    ..., n_heads - 1) are how many heads are off at each point, so fractions run from 0 (intact) to all heads
    but one removed. Each point reruns only the layers from the first one where it removes a head that the
    previous point kept.
    """
    task = _retrieval(pretrained._check_model(model), _pairs_key(pairs))
    means = _means(task, mode)
    n_heads = model.n_layers * model.h
    order = (
        prune_order(head_importance(model, pairs, mode=mode)) if order is None else model.layer_heads(order, "order")
    )
    if len(set(order)) != len(order):
        raise ValueError(f"order: expected distinct (layer, head) pairs of this model, got {order}")
    counts = np.arange(n_heads) if counts is None else as_array("counts", counts)
    if counts.ndim != 1 or not np.issubdtype(counts.dtype, np.integer) or (np.diff(counts) <= 0).any():
        raise ValueError(f"counts: expected increasing whole numbers, got {counts!r}")
    if counts.size and (counts[0] < 0 or counts[-1] > len(order)):
        raise ValueError(f"counts: expected values in [0, {len(order)}] (the length of order), got {counts.tolist()}")
    inputs, done, accuracies = list(task.inputs), 0, []
    for c in counts:
        if c > done:
            # Layers before the first newly removed head are the same as at the previous point: keep their inputs.
            start = min(li for li, _ in order[done:c])
            layers = ablated_model(model, order[:c], means).layers
            with one_blas_thread():
                inputs[start + 1 :] = task.run(layers[start:], inputs[start])
            done = int(c)
        accuracies.append(task.score(inputs[-1])[0])
    return counts / n_heads, np.array(accuracies)


def pruning_results(model: pretrained.MiniLM, pairs: Sequence | None = None) -> dict[str, np.ndarray]:
    """Importance, order and pruning curve for both ablations, as arrays: what pruning_reference() ships.

    Keys: intact_accuracy, intact_margin, fractions, and for mode in MODES accuracy_drop_<mode> and
    margin_drop_<mode> (n_layers, h), order_<mode> (n_heads, 2), curve_<mode> (n_heads,) and
    no_heads_accuracy_<mode> (every head off). Two controls say how much of the task needs attention at all:
    embedding_accuracy (the mean of the input embeddings, before any layer) and no_heads_accuracy_<mode>.
    """
    out: dict[str, np.ndarray] = {}
    for mode in MODES:
        importance = head_importance(model, pairs, mode=mode)
        order = prune_order(importance)
        fractions, curve = prune_curve(model, pairs, mode=mode, order=order)
        _, no_heads = prune_curve(model, pairs, mode=mode, order=order, counts=[len(order)])
        out |= {
            f"accuracy_drop_{mode}": importance["accuracy_drop"],
            f"margin_drop_{mode}": importance["margin_drop"],
            f"order_{mode}": np.array(order),
            f"curve_{mode}": curve,
            f"no_heads_accuracy_{mode}": no_heads[0],
        }
    task = _retrieval(model, _pairs_key(pairs))
    out |= {
        "intact_accuracy": np.array(importance["intact_accuracy"]),
        "intact_margin": np.array(importance["intact_margin"]),
        "embedding_accuracy": np.array(task.score(task.inputs[0])[0]),
        "fractions": fractions,
    }
    return out


def pruning_reference() -> dict[str, np.ndarray]:
    """pruning_results(load_minilm()) on every shipped pair, as tests/reference/make_minilm_pruning.py saved it.

    Computing it takes minutes (144 single-head ablations and 144 pruned models over 212 sentences), so the
    package ships it; paraphrases_sha256 and model_sha256 record which data and weights it came from.
    """
    with np.load(DATA / "minilm_pruning.npz") as data:
        return {key: data[key] for key in data.files}
