"""Lesson 15 (Real heads): what the lesson reads off MiniLM's syntax, co-reference, pruning and value-norm numbers.

The measurements are library code (mha_lesson.head_analysis). This module holds what only the lesson needs: Clark et
al.'s (2019) published numbers to set beside ours, the verdicts the lesson prints (each follows from the numbers
and a threshold stated in it), a split of one head's hits by whether the gold head is the next word, the gold arcs
of an annotated sentence as word-piece cells (for the head browser), the word-overlap yardstick for the paraphrase
task, and summaries of the shipped pruning results and of the sink scores computed both ways.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .. import head_analysis
from .._blas import one_blas_thread
from ..pretrained import MiniLM, l2_normalize, mean_pool

# A head "clearly" beats a baseline when it is at least this far above it (a fraction: 0.10 = 10 points). With
# 43-168 arcs per relation, a gap of a few points could come from which sentences happened to be written.
CLEAR = 0.10


@dataclasses.dataclass(frozen=True)
class ClarkRow:
    """One row of Clark et al. (2019), Table 1 (BERT-base, Penn Treebank dev set): best head against best offset.

    accuracy and baseline in percent; layer and head counted from 0 as in this course (the paper counts from 1:
    add 1 to each); direction is the one that gave the best head.
    """

    name: str
    accuracy: float
    baseline: float
    offset: int
    layer: int
    head: int
    direction: str


# Read from the output of Clark's released notebook (github.com/clarkkev/attention-analysis, Syntax_Analysis.ipynb,
# the cell that "produces the scores in Table 1"). Their relations come from Stanford Dependencies: dobj and poss
# are UD's obj and nmod:poss.
CLARK_BERT = {
    "det": ClarkRow("det", 94.3, 51.7, 1, 7, 10, "dependent->head"),
    "nsubj": ClarkRow("nsubj", 58.5, 45.5, 1, 7, 1, "dependent->head"),
    "obj": ClarkRow("dobj", 86.8, 40.0, -2, 7, 9, "dependent->head"),
    "amod": ClarkRow("amod", 75.6, 68.3, 1, 3, 9, "dependent->head"),
    "nmod:poss": ClarkRow("poss", 80.5, 47.7, 1, 6, 5, "dependent->head"),
}


# Clark et al. (2019), Table 2 (CoNLL-2012), the Pronoun column: head 5-4 (4-3 counted from 0) against the nearest
# other mention. Their head and baselines choose among whole documents' mentions; ours among one sentence's words.
CLARK_PRONOUNS = "64% vs 29% (Table 2, pronouns: nearest mention)"


def guideline(path: str | Path | None = None) -> str:
    """The annotation guideline: the comment lines at the top of a CoNLL-U file (default relations.conllu), as text."""
    path = head_analysis.DATA / "relations.conllu" if path is None else Path(path)
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("# ") or line.startswith(("# sent_id", "# text")):
            break
        lines.append(line[2:])
    if not lines:
        raise ValueError(f"{path.name}: expected a guideline in '# ' comment lines at the top, got none")
    return " ".join(lines)


def compare_relations(best: Sequence[Mapping], noun_baselines: Mapping[str, float], clear: float = CLEAR) -> list[dict]:
    """Each relation's best head (rows of head_analysis.best_heads) against its strongest baseline, with a verdict.

    The baseline is the best fixed offset; for co-reference also the noun baselines (antecedent_baselines), since
    an antecedent sits a clause away where no fixed offset reaches. Each dict: relation, label, layer, head,
    accuracy, count, baseline, baseline_name, margin (accuracy - baseline), clear (margin >= clear) and clark
    (a ClarkRow, or None where Table 1 has no such relation).
    """
    out = []
    for row in best:
        rel = row["relation"]
        candidates = {f"word at offset {row['offset']:+d}": row["baseline"]}
        if rel == "coref":
            candidates |= {f"{name} before it" if name == "nearest noun" else name: v for name, v in
                           noun_baselines.items()}  # fmt: skip
        name, baseline = max(candidates.items(), key=lambda kv: kv[1])
        margin = row["accuracy"] - baseline
        out.append({
            "relation": rel, "label": head_analysis.RELATION_LABELS[rel], "layer": row["layer"], "head": row["head"],
            "accuracy": row["accuracy"], "count": row["count"], "baseline": baseline, "baseline_name": name,
            "margin": margin, "clear": bool(margin >= clear), "clark": CLARK_BERT.get(rel),
        })  # fmt: skip
    return out


def relations_markdown(compared: Sequence[Mapping], clear: float = CLEAR) -> str:
    """A Markdown table of compare_relations' rows beside Clark's BERT numbers, then the plain verdicts."""
    header = ("relation (dependent → head)", "arcs", "best MiniLM head", "its accuracy", "best baseline",
              "BERT-base (Clark et al.)")  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for r in compared:
        c = r["clark"]
        bert = f"{c.accuracy:.1f}% vs {c.baseline:.1f}% ({c.name})" if c else CLARK_PRONOUNS
        lines.append(
            f"| {r['label']} | {r['count']} | ({r['layer']}, {r['head']}) | {r['accuracy']:.1%} | "
            f"{r['baseline']:.1%} ({r['baseline_name']}) | {bert} |"
        )
    yes = [r for r in compared if r["clear"]]
    no = [r for r in compared if not r["clear"]]

    def names(rows: Sequence[Mapping]) -> str:
        return ", ".join(f"{r['label']} (+{r['margin'] * 100:.0f} points)" for r in rows) or "none"

    verdict = (
        f"**Where MiniLM has a head that clearly beats the baseline** (by {clear * 100:.0f} points or more): "
        f"{names(yes)}.\n\n"
        f"**Where it has none:** {names(no)}. "
    )
    if no:
        verdict += (
            f"For these the best head is less than {clear * 100:.0f} points above always choosing the word at a "
            "fixed distance (here the next word), so a head that simply looked at its neighbour would do almost as "
            "well: no evidence of syntax."
        )
    return "\n".join(lines) + "\n\n" + verdict


def _candidates(sentence: head_analysis.Annotated) -> np.ndarray:
    """(n_words + 2,) bool over [CLS], the words, [SEP]: the words a head may choose (as relation_table)."""
    return np.array([False, *(u != "PUNCT" for u in sentence.upos), False])


def next_word_split(
    maps: Sequence[np.ndarray], sentences: Sequence[head_analysis.Annotated], relation: str, layer: int, head: int
) -> dict[str, tuple[int, int]]:
    """One head's hits on a relation, split by where the gold head is: {group: (hits, arcs)}.

    "next word": the gold head is the dependent's next word (punctuation skipped, as by the accuracy); "further
    away": anywhere else. A head that only looks at the next word scores 0 on the second group. maps are
    head_analysis.word_maps of the sentences.
    """
    if relation not in head_analysis.RELATIONS:
        raise ValueError(f"relation: expected one of {head_analysis.RELATIONS}, got {relation!r}")
    counts = {"next word": [0, 0], "further away": [0, 0]}
    for m, s in zip(maps, sentences, strict=True):
        candidates = _candidates(s)
        predicted = head_analysis.most_attended(m[layer, head], candidates)
        positions = list(np.flatnonzero(candidates))
        for d, h in s.arcs[relation]:
            d, h = d + 1, h + 1  # word k is row k + 1 of a word map
            after = positions.index(d) + 1
            group = "next word" if after < len(positions) and positions[after] == h else "further away"
            counts[group][0] += int(predicted[d] == h)
            counts[group][1] += 1
    return {group: (hits, n) for group, (hits, n) in counts.items()}


@functools.lru_cache(maxsize=1)
def _annotated() -> dict[str, head_analysis.Annotated]:
    """The shipped annotated sentences by their text (read once)."""
    return {s.text: s for s in head_analysis.load_relations()}


def annotated_texts() -> list[str]:
    """The texts of the shipped annotated sentences, in file order."""
    return list(_annotated())


def gold_piece_arcs(model: MiniLM, text: str, relation: str) -> list[tuple[list[int], list[int]]] | None:
    """Gold arcs of relation in an annotated text as word-piece positions: [(dependent's pieces, head's pieces)].

    Positions count [CLS] as 0, as in the model's attention maps, so row = dependent (query), column = head (key).
    None when text is not one of the annotated sentences (a typed sentence has no gold arcs).
    """
    if relation not in head_analysis.RELATIONS:
        raise ValueError(f"relation: expected one of {head_analysis.RELATIONS}, got {relation!r}")
    sentence = _annotated().get(text.strip())
    if sentence is None:
        return None
    groups = head_analysis.word_groups(model.word_ids([sentence.text])[0])  # [[0], word 0's pieces, ..., [SEP]]
    return [(groups[d + 1], groups[h + 1]) for d, h in sentence.arcs[relation]]


def arc_hits(model: MiniLM, text: str, relation: str, weights: np.ndarray) -> tuple[int, int] | None:
    """How many gold arcs of relation in an annotated text one head finds: (hits, arcs), None for a typed text.

    weights: that head's word-piece attention (n, n) on the text; a hit is an arc whose dependent's most-attended
    word (word_attention, then most_attended, as relation_table) is its gold head.
    """
    if relation not in head_analysis.RELATIONS:
        raise ValueError(f"relation: expected one of {head_analysis.RELATIONS}, got {relation!r}")
    sentence = _annotated().get(text.strip())
    if sentence is None:
        return None
    words = head_analysis.word_attention(weights, model.word_ids([sentence.text])[0])  # (n_words + 2, n_words + 2)
    predicted = head_analysis.most_attended(words, _candidates(sentence))
    arcs = sentence.arcs[relation]
    return sum(int(predicted[d + 1] == h + 1) for d, h in arcs), len(arcs)


def word_overlap_accuracy(pairs: Sequence[head_analysis.Paraphrase] | None = None) -> float:
    """Paraphrase retrieval with no model at all: similarity = shared words / all words of the two (Jaccard)."""
    pairs = head_analysis.load_paraphrases() if pairs is None else list(pairs)
    sentences = [p.sentence for p in pairs] + [p.paraphrase for p in pairs]
    words = [set(re.findall(r"[a-z]+", s.lower())) for s in sentences]
    similarity = np.array([[len(a & b) / len(a | b) for b in words] for a in words])  # (2p, 2p)
    partner = np.concatenate([np.arange(len(pairs), 2 * len(pairs)), np.arange(len(pairs))])
    return float(head_analysis.retrieval_accuracy(similarity, partner))


def heads_within(curve: np.ndarray, intact: float, tolerance: float) -> int:
    """The most heads that can go with every point of the curve so far within tolerance of intact accuracy."""
    curve = np.asarray(curve)
    below = np.flatnonzero(curve < intact - tolerance - 1e-12)  # the epsilon keeps exact ties within
    return int(below[0] - 1) if below.size else len(curve) - 1


def pruning_summary(ref: Mapping[str, np.ndarray], n_sentences: int, tolerance: float = 0.01) -> dict:
    """The numbers the lesson reads off pruning_reference(): per mode, and the controls that need no attention.

    Returns intact, embedding and sentences (n_sentences), and per mode in head_analysis.MODES: within (heads that
    can go within tolerance, see heads_within), worst (lowest accuracy on the curve), worst_lost (sentences lost
    there) and no_heads (every head off); plus spearman, the rank correlation of the two modes' margin drops.
    """
    intact = float(ref["intact_accuracy"])
    out: dict = {"intact": intact, "embedding": float(ref["embedding_accuracy"]), "sentences": n_sentences,
                 "tolerance": tolerance, "n_heads": int(np.asarray(ref["accuracy_drop_zero"]).size)}  # fmt: skip
    for mode in head_analysis.MODES:
        curve = np.asarray(ref[f"curve_{mode}"])
        out[mode] = {
            "within": heads_within(curve, intact, tolerance),
            "worst": float(curve.min()),
            "worst_lost": round((intact - float(curve.min())) * n_sentences),
            "no_heads": float(ref[f"no_heads_accuracy_{mode}"]),
        }
    # Spearman's rank correlation (no ties in practice): how far the two ablations agree on which heads matter.
    ranks = [np.argsort(np.argsort(np.ravel(ref[f"margin_drop_{m}"]))) for m in head_analysis.MODES]
    out["spearman"] = float(np.corrcoef(*ranks)[0, 1])
    return out


def pruning_markdown(summary: Mapping, word_overlap: float) -> str:
    """What the pruning curve shows, in plain words, from pruning_summary and the word-overlap yardstick."""
    s, n = summary, summary["sentences"]
    zero, mean = s["zero"], s["mean"]
    return (
        f"Intact, MiniLM retrieves the paraphrase for {s['intact']:.1%} of the {n} sentences. Switching heads off "
        f"least important first, accuracy stays within {s['tolerance'] * 100:.0f} point of that until "
        f"{zero['within']} of {s['n_heads']} heads are gone with zero-ablation and {mean['within']} with "
        f"mean-ablation; the worst point "
        f"of either curve loses {max(zero['worst_lost'], mean['worst_lost'])} sentences. With **every** head off "
        f"it still gets {zero['no_heads']:.1%} (zero) and {mean['no_heads']:.1%} (mean).\n\n"
        f"That is the finding, and it is mostly about the task, not about attention. The mean of the input "
        f"embeddings, before any layer, already retrieves {s['embedding']:.1%}, and counting shared words with no "
        f"model at all gets {word_overlap:.1%}: a paraphrase shares enough words, or word pieces with similar "
        f"embeddings, to be found almost without context. So a flat curve here says that this task hardly needs "
        f"the heads, not that the heads do nothing. A negative result, stated plainly: this metric cannot show "
        f"which heads matter. One sentence is {1 / n:.1%}, so the wiggles in the curves are single sentences."
    )


def sink_summary(sinks: Mapping[str, Mapping], threshold: float = 0.5) -> dict:
    """Per layer (means over its heads): [CLS] and [SEP] shares both ways and ||v W^O|| of [CLS], [SEP] and others.

    sinks is head_analysis.sink_scores' result. Also counts the heads above threshold on [CLS] either way.
    """
    out = {
        f"{token} {way}": np.asarray(sinks[way][token]).mean(axis=1)
        for way in ("attention", "value-norm")
        for token in ("[CLS]", "[SEP]")
    }
    out |= {f"norm {token}": np.asarray(v).mean(axis=1) for token, v in sinks["norms"].items()}
    out["threshold"] = threshold
    out["sinks attention"] = int((np.asarray(sinks["attention"]["[CLS]"]) > threshold).sum())
    out["sinks value-norm"] = int((np.asarray(sinks["value-norm"]["[CLS]"]) > threshold).sum())
    return out


def sinks_markdown(summary: Mapping) -> str:
    """The sink plot's reading in plain words, from sink_summary."""
    s = summary

    def layers(values: np.ndarray) -> str:
        return " ".join(f"{v:.2f}" for v in values)

    ratio = s["norm other"] / s["norm [CLS]"]
    return (
        f"By attention weight, [CLS] takes this share of each layer's attention (layers 0-{len(ratio) - 1}): "
        f"{layers(s['[CLS] attention'])}; {s['sinks attention']} heads put more than {s['threshold']:.0%} on it. "
        f"Weighted by what [CLS] actually adds, $\\|A_{{tj}} v_j W^O_i\\|$, its share falls to "
        f"{layers(s['[CLS] value-norm'])}, and {s['sinks value-norm']} heads are above {s['threshold']:.0%}. The "
        f"reason is the size of the vectors: [CLS]'s $\\|v_j W^O_i\\|$ averages {layers(s['norm [CLS]'])} by layer, "
        f"against {layers(s['norm other'])} for the words, {ratio.min():.0f} to {ratio.max():.0f} times smaller. A "
        f"head that parks its weight on [CLS] adds almost nothing from it, which is the no-op reading of Clark et "
        f"al. made measurable, and what Kobayashi et al. (2020) found in BERT."
    )


# Held-out head selection (lesson 15) --------------------------------------------------------------------------


def held_out_markdown(results: Sequence[Mapping]) -> str:
    """A Markdown table of held_out_selection results: in-sample best, held-out head and baseline, lead."""
    lines = [
        "| relation | arcs | best head, in sample | held-out head [95% CI] | held-out baseline | lead [95% CI] "
        "| survives |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        (a_lo, a_hi), (l_lo, l_hi) = r["accuracy_ci"], r["lead_ci"]
        lines.append(
            f"| {head_analysis.RELATION_LABELS[r['relation']]} | {r['count']} | {r['in_sample']:.1%} | "
            f"{r['accuracy']:.1%} [{a_lo:.0%}, {a_hi:.0%}] | {r['baseline']:.1%} | "
            f"{r['lead'] * 100:+.0f} [{l_lo * 100:+.0f}, {l_hi * 100:+.0f}] points | "
            f"{'yes' if r['survives'] else 'no'} |"
        )
    return "\n".join(lines)


def held_out_all(maps: Sequence[np.ndarray], sentences: Sequence[head_analysis.Annotated], seed: int = 0) -> list[dict]:
    """head_analysis.held_out_selection for every relation in head_analysis.RELATIONS, with one seed."""
    return [head_analysis.held_out_selection(maps, sentences, rel, seed=seed) for rel in head_analysis.RELATIONS]


# Word order: a measure that needs attention (lesson 16) ---------------------------------------------------------


class RoleSwap(NamedTuple):
    """One row of role_swaps.tsv: a sentence, a paraphrase in other words, and its words with the roles swapped."""

    sentence: str
    paraphrase: str
    swapped: str


def load_role_swaps(path: str | Path | None = None) -> list[RoleSwap]:
    """Rows of a tab-separated file (default: the shipped role_swaps.tsv) after its header; # starts a comment."""
    path = head_analysis.DATA / "role_swaps.tsv" if path is None else Path(path)
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip() and line[0] != "#"]
    if not lines or lines[0].split("\t") != list(RoleSwap._fields):
        raise ValueError(f"{path.name}: expected the header {'<tab>'.join(RoleSwap._fields)}, got {lines[:1]}")
    rows = [line.split("\t") for line in lines[1:]]
    bad = [i for i, r in enumerate(rows, start=2) if len(r) != 3 or not all(f.strip() for f in r)]
    if bad or not rows:
        raise ValueError(f"{path.name}: expected rows of 3 non-empty tab-separated fields, not on rows {bad}")
    return [RoleSwap(*r) for r in rows]


def _cosines(emb: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit embeddings of sentences, paraphrases, swaps (3n, d) -> cosine of each sentence with its two partners."""
    s, p, w = emb[:n], emb[n : 2 * n], emb[2 * n :]
    return np.sum(s * p, axis=1), np.sum(s * w, axis=1)


def order_scores(model: MiniLM, swaps: Sequence[RoleSwap]) -> dict[str, float]:
    """What the sentence embedding knows of word order: gap = mean 1 - cos(sentence, swapped), and how often the
    swapped sentence is closer than the paraphrase. Also the gap of a bag of word-piece embeddings (no positions).
    """
    n = len(swaps)
    texts = [r.sentence for r in swaps] + [r.paraphrase for r in swaps] + [r.swapped for r in swaps]
    to_paraphrase, to_swap = _cosines(model.encode(texts), n)
    ids, lengths, _ = model.tokenize(texts)
    bag = l2_normalize(mean_pool(model.word_embeddings[ids], lengths))  # (3n, d): word pieces only, no position
    _, bag_swap = _cosines(bag, n)
    return {
        "gap": float(np.mean(1 - to_swap)),
        "swap_closer": float(np.mean(to_swap > to_paraphrase)),
        "paraphrase_gap": float(np.mean(1 - to_paraphrase)),
        "bag_gap": float(np.mean(1 - bag_swap)),
    }


def order_gap_curve(
    model: MiniLM, swaps: Sequence[RoleSwap], order: Sequence[tuple[int, int]], counts: Sequence[int]
) -> np.ndarray:
    """The order gap (order_scores' gap) with the first c heads of order switched off (zero-ablation), per c."""
    texts = [r.sentence for r in swaps] + [r.swapped for r in swaps]
    n, out = len(swaps), []
    with one_blas_thread():  # on two busy cores one BLAS thread is the faster (as head_analysis' ablations)
        for c in counts:
            emb = head_analysis.ablated_model(model, [tuple(h) for h in order[: int(c)]]).encode(texts)
            out.append(float(np.mean(1 - np.sum(emb[:n] * emb[n:], axis=1))))
    return np.array(out)
