"""Syntax and co-reference heads, as Clark et al. (2019) measure them, with the CoNLL-U reader they need.

Clark et al. (2019), "What Does BERT Look At?", section 4: a head "predicts" a word's syntactic head when that
word attends most to it, and is compared with the best fixed-offset baseline. Lesson 15 scores every head of
all-MiniLM-L6-v2 on the hand-annotated mha_lesson/data/relations.conllu: word_attention, most_attended,
relation_accuracy and offset_baseline are pure functions on arrays; word_maps and relation_table wrap the model.

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
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .. import pretrained
from .._checks import as_array, as_finite_array, check_size, is_int
from ._common import check_model, check_weights, read_data

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


def load_relations(path: str | Path | None = None) -> list[Annotated]:
    """The sentences of a CoNLL-U file (default: the shipped relations.conllu) with their arcs for RELATIONS."""
    import conllu  # only this reader needs it: the rest of the module works without it
    from conllu.exceptions import ParseException
    from conllu.parser import DEFAULT_FIELDS, parse_line

    path, text = read_data(path, "relations.conllu")
    # Each token line on its own first, so that a malformed one is reported by file and line number.
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        try:
            if len(fields) != len(DEFAULT_FIELDS):
                raise ParseException(f"expected {len(DEFAULT_FIELDS)} tab-separated fields, got {len(fields)}")
            parse_line(line, DEFAULT_FIELDS)
            misc = fields[-1]
            if "Antecedent=" in misc and not misc.split("Antecedent=")[1].split("|")[0].isdigit():
                raise ParseException(f"expected Antecedent=<token id> in MISC, got {misc!r}")
        except ParseException as exc:
            raise ValueError(f"{path.name}: line {number} is not a CoNLL-U token line: {exc}") from None
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


def check_sentences(sentences: object, name: str = "sentences") -> list[Annotated]:
    """sentences as a non-empty list of Annotated (load_relations()), or ValueError naming the argument."""
    if isinstance(sentences, (str, bytes, dict)) or not isinstance(sentences, Sequence) or not sentences:
        raise ValueError(
            f"{name}: expected a non-empty list of annotated sentences (load_relations()), got {sentences!r:.60}"
        )
    bad = [type(s).__name__ for s in sentences if not isinstance(s, Annotated)]
    if bad:
        raise ValueError(f"{name}: expected Annotated sentences (load_relations()), got items of type {bad[0]}")
    return list(sentences)


def check_maps(maps: object, sentences: list[Annotated]) -> list[np.ndarray]:
    """maps as word_maps of these sentences (one finite (..., words + 2, words + 2) map each), or ValueError."""
    if isinstance(maps, (str, bytes, dict, np.ndarray)) or not isinstance(maps, Sequence):
        raise ValueError(f"maps: expected a list of word maps (word_maps(model, sentences)), got {maps!r:.60}")
    if len(maps) != len(sentences):
        raise ValueError(f"maps: expected one word map per sentence ({len(sentences)}), got {len(maps)}")
    out = [check_weights(m, f"maps[{i}]") for i, m in enumerate(maps)]
    for i, (m, s) in enumerate(zip(out, sentences, strict=True)):
        if m.ndim != 4 or m.shape[-1] != len(s.words) + 2 or m.shape[:2] != out[0].shape[:2]:
            raise ValueError(
                f"maps: expected map {i} of shape (n_layers, h, {len(s.words) + 2}, {len(s.words) + 2}) "
                f"([CLS], its {len(s.words)} words, [SEP]), got {m.shape}"
            )
    return out


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
    w = check_weights(weights, "weights")
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
    w = check_weights(word_weights, "word_weights")
    m = w.shape[-1]
    candidates = as_array("candidates", candidates)
    if candidates.dtype != np.bool_ or candidates.shape != (m,):
        raise ValueError(
            f"candidates: expected a boolean array of shape ({m},), one per word of word_weights {w.shape}, "
            f"got {candidates.dtype} {candidates.shape}"
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
                raise ValueError(
                    f"arcs: expected (dependent, head) pairs of word indices in [0, {m}) (the words of {per}), "
                    f"got {arc!r}"
                )
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
    check_model(model, "attentions_many", "word_ids")
    texts = [s.text for s in check_sentences(sentences)]
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
    model: pretrained.MiniLM | None,
    sentences: Sequence[Annotated] | None = None,
    *,
    directions: Sequence[str] = ("dependent->head",),
    maps: Sequence[np.ndarray] | None = None,
) -> list[dict]:
    """One row per relation, direction, layer and head: its accuracy, the best fixed-offset baseline and the count.

    Each row is {relation, direction, layer, head, accuracy, baseline, offset, count}: offset is the baseline's
    k and count the number of gold arcs. sentences default to load_relations(); maps (word_maps of the same
    sentences) are computed once in one padded batch when not given; with maps, model may be None.
    """
    if model is not None or maps is None:  # the model only computes maps not given
        check_model(model, "attentions_many", "word_ids")
    sentences = load_relations() if sentences is None else check_sentences(sentences)
    if isinstance(directions, str) or not isinstance(directions, Sequence) or not directions:
        raise ValueError(f"directions: expected a list of some of {DIRECTIONS}, got {directions!r:.60}")
    bad = [d for d in directions if d not in DIRECTIONS]
    if bad:
        raise ValueError(f"directions: expected some of {DIRECTIONS}, got {list(directions)}")
    maps = word_maps(model, sentences) if maps is None else check_maps(maps, sentences)
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
    for s in check_sentences(sentences):
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
