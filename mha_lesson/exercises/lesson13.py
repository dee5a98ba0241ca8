"""Exercise checks for lesson 13 (a trained model's heads): read a real head's scores, an entropy, the ablation map."""

from __future__ import annotations

import math

import numpy as np

from ._base import Feedback, as_number, as_pair, as_whole_number, right, wrong

# Exercise 1: a head section 4 does not show, and the lesson's thresholds for naming a head (section 4).
MYSTERY_HEAD = (1, 9)  # (layer, head)
KINDS = ("previous token", "next token", "[CLS] sink", "[SEP] sink", "broad")
_SCORE_OF = {"previous token": "previous", "next token": "next", "[CLS] sink": "[CLS]", "[SEP] sink": "[SEP]"}
SHARE, BROAD = 0.5, 0.8  # more than half the attention; entropy above 80% of the uniform one
# Exercise 2: a head that spreads every row evenly over this many keys.
N_KEYS = 8


def kinds_of(scores: dict[str, np.ndarray], baseline: dict[str, float], layer: int, head: int) -> list[str]:
    """The names the lesson's thresholds give head (layer, head): scores as from headscores.corpus_scores."""
    named = [kind for kind, key in _SCORE_OF.items() if scores[key][layer, head] > SHARE]
    if scores["entropy"][layer, head] > BROAD * baseline["entropy"]:
        named.append("broad")
    return named


def check_head_kind(answer: object, scores: dict[str, np.ndarray], baseline: dict[str, float]) -> Feedback:
    """Exercise 1: name the kind of MYSTERY_HEAD from its corpus scores (the lesson's thresholds)."""
    if answer is None:
        return wrong(f"Replace None with one of {', '.join(map(repr, KINDS))}.")
    kind = " ".join(str(answer).split()).lower()
    if kind not in {k.lower() for k in KINDS}:
        return wrong(f"Use one of {', '.join(map(repr, KINDS))}; got {answer!r}.")
    layer, head = MYSTERY_HEAD
    named = [k.lower() for k in kinds_of(scores, baseline, layer, head)]
    if len(named) != 1:  # the model is fixed: the test suite checks this cannot happen
        return wrong(f"Head {MYSTERY_HEAD} has no single name by these thresholds ({named}); tell the course authors.")
    row = {key: float(scores[key][layer, head]) for key in ("previous", "[CLS]")}
    if kind == named[0]:
        return right(
            f"{row['[CLS]']:.2f} of its attention goes to [CLS], but {row['previous']:.2f} goes to the previous token, "
            f"{row['previous'] / baseline['previous']:.0f} times the uniform share: it follows the previous token "
            "for some tokens and parks the rest on [CLS], the no-op reading of Clark et al. A head can do more "
            "than one thing, and a threshold names only the largest."
        )
    score = scores[_SCORE_OF[kind]][layer, head] if kind in {k.lower() for k in _SCORE_OF} else None
    if score is not None and score > 2 * baseline[_SCORE_OF[kind]]:
        return wrong(
            "That pattern is there, well above the uniform baseline, but is it where most of the attention goes? "
            "Compare every score of the head."
        )
    return wrong("Print the head's score for each kind beside the uniform baseline: which one passes its threshold?")


def check_uniform_entropy(answer: object) -> Feedback:
    """Exercise 2: entropy in nats of an attention row spreading its weight evenly over 8 keys."""
    value = as_number(answer, "the entropy in nats: use the natural logarithm")
    if isinstance(value, Feedback):
        return value
    expected = math.log(N_KEYS)
    if abs(value - expected) < 1e-3:
        return right(f"-sum 1/8 ln(1/8) = ln 8 = {expected:.3f} nats: the largest entropy a row over 8 keys can have.")
    if abs(value - math.log2(N_KEYS)) < 1e-3:
        return wrong("That is in bits (log base 2). Head scores use nats: the natural logarithm.")
    if abs(value - 1 / N_KEYS) < 1e-3:
        return wrong("That is each weight. The entropy is -sum_j w_j ln w_j over the row.")
    return wrong("Every weight is 1/8. Put that into -sum_j w_j ln w_j.")


def check_ablation_layer(answer: object, cosine: np.ndarray) -> Feedback:
    """Exercise 3: the layer whose heads, switched off one at a time, move the embedding most on average."""
    layer = as_whole_number(answer, f"a layer number from 0 to {len(cosine) - 1}")
    if isinstance(layer, Feedback):
        return layer
    if not 0 <= layer < len(cosine):
        return wrong(f"MiniLM's layers are numbered 0 to {len(cosine) - 1}; got {layer}.")
    move = 1.0 - np.asarray(cosine)  # (n_layers, h): how far each head's absence moves the embedding
    best = int(move.mean(axis=1).argmax())
    if layer == best:
        return right(
            f"layer {best}'s heads move the embedding by {move[best].mean():.4f} on average, against at most "
            f"{np.delete(move.mean(axis=1), best).max():.4f} for any other layer. A likely reason: the embedding is "
            "the mean of the last layer's outputs, so a head there writes straight into it, while the layers above "
            "an earlier head can partly make up for its absence."
        )
    top_layer = int(np.unravel_index(move.argmax(), move.shape)[0])
    if layer == top_layer:
        return wrong("That layer holds the single head that moves it most. Average over each layer's 12 heads.")
    return wrong("Average 1 - cosine over the heads of each layer (one row of `cosine`), then compare the layers.")


# Interpreting syntax heads, pruning and value norms (sections 7-9) -------------------------------------------

# Is head (2, 8), the best head for four relations in section 7, a syntax head or a next-word head? Judged on
# determiners, split by demos.real_heads.next_word_split into arcs whose noun is the next word and the rest.
SYNTAX_HEAD = (2, 8)  # (layer, head)
SYNTAX_RELATION = "det"
READINGS = ("syntax", "next word")


def _reading(answer: object) -> str:
    """An answer compared loosely: lower case, single spaces, no quotes or hyphens around or inside."""
    return " ".join(str(answer).strip().strip("'\"").lower().replace("-", " ").split())


def check_syntax_or_next_word(answer: object, split: dict[str, tuple[int, int]]) -> Feedback:
    """Is SYNTAX_HEAD a syntax head or a next-word head, judging by its determiner arcs split by where the noun is?"""
    if answer is None:
        return wrong(f"Replace None with one of {', '.join(map(repr, READINGS))}.")
    reading = _reading(answer)
    if reading not in READINGS:
        return wrong(f"Use one of {', '.join(map(repr, READINGS))}; got {answer!r}.")
    (near, n_near), (far, n_far) = split["next word"], split["further away"]
    expected = "syntax" if far >= n_far / 2 else "next word"  # a next-word head scores 0 on the far arcs
    if reading == expected == "syntax":
        return right(
            f"When the noun is not the next word (an adjective in between: 'the old man'), a head that only looks at "
            f"the next word would find none of them; head {SYNTAX_HEAD} finds {far} of {n_far}, besides {near} of "
            f"{n_near} next-word cases. It skips the adjectives to the noun: that is noun-phrase syntax, not position. "
            "Its subject arcs are weaker evidence: most of those hits are cases where the verb is the next word."
        )
    if reading == expected:
        return right(f"It finds only {far} of the {n_far} arcs whose noun is not the next word: position explains it.")
    if reading == "next word":
        return wrong(
            "A head that only looks at the next word would find none of the arcs in the 'further away' group. "
            "How many does this head find there?"
        )
    return wrong("Compare the two groups: how does the head do when the noun is not the next word?")


def harmless_heads(ref: dict[str, np.ndarray]) -> list[tuple[int, int]]:
    """Heads that, switched off alone, lose no sentence and do not shrink the margin under both ablations."""
    safe = np.ones_like(np.asarray(ref["accuracy_drop_zero"]), dtype=bool)
    for mode in ("zero", "mean"):
        safe &= (np.asarray(ref[f"accuracy_drop_{mode}"]) == 0) & (np.asarray(ref[f"margin_drop_{mode}"]) <= 0)
    return [(int(li), int(hi)) for li, hi in zip(*np.nonzero(safe), strict=True)]


def check_prune_first(answer: object, ref: dict[str, np.ndarray], n_sentences: int) -> Feedback:
    """Which head would you prune first? Right: one that costs the task nothing, by zero- and by mean-ablation."""
    pair = as_pair(answer, "a head as (layer, head)")
    if isinstance(pair, Feedback):
        return pair
    shape = np.shape(ref["accuracy_drop_zero"])
    if not (0 <= pair[0] < shape[0] and 0 <= pair[1] < shape[1]):
        return wrong(f"Layers go from 0 to {shape[0] - 1} and heads from 0 to {shape[1] - 1}; got {pair}.")
    lost = {m: round(float(ref[f"accuracy_drop_{m}"][pair]) * n_sentences) for m in ("zero", "mean")}
    margin = {m: float(ref[f"margin_drop_{m}"][pair]) for m in ("zero", "mean")}
    if pair in harmless_heads(ref):
        remark = (
            f" It is also {SYNTAX_HEAD}, section 7's determiner head: a head can track grammar and still not be "
            "needed by a task."
            if pair == SYNTAX_HEAD
            else ""
        )
        return right(
            f"Switched off alone, head {pair} loses no sentence, and the margin moves by {-margin['zero']:+.4f} "
            f"(zero) and {-margin['mean']:+.4f} (mean): this task does not use it, whichever way it is "
            f"removed.{remark} Keep the limits in mind: the ranking takes one head at a time, so two heads that back "
            "each other up both look harmless; Michel et al. prune greedily and iteratively, by a gradient-based "
            "estimate of importance."
        )
    costly = [m for m in ("zero", "mean") if lost[m] > 0]
    if costly:
        return wrong(
            f"Switched off alone, that head already loses {lost[costly[0]]} sentence(s) by {costly[0]}-ablation. "
            "Look for one whose removal costs no sentence."
        )
    worse = [m for m in ("zero", "mean") if margin[m] > 0]
    if len(worse) == 1:
        other = "mean" if worse[0] == "zero" else "zero"
        return wrong(
            f"By {other}-ablation it looks free, but by {worse[0]}-ablation the margin shrinks by "
            f"{margin[worse[0]]:.4f}: the two ablations disagree on this head. Pick one both call harmless."
        )
    return wrong(
        f"It loses no sentence, but the margin between each paraphrase and the nearest other sentence shrinks by "
        f"{margin['zero']:.4f} (zero) and {margin['mean']:.4f} (mean). Pick a head whose removal leaves it as it is."
    )


# A head that parks most of its weight on [CLS]: what does it add to the tokens? Letters of SINK_OPTIONS.
SINK_OPTIONS = {
    "a": "It copies a summary of the whole sentence, stored at [CLS], into every token.",
    "b": "It adds little from [CLS] to any token: [CLS]'s value vector, after W^O, is many times shorter than a "
    "word's, so most of the head's weight moves almost nothing.",
    "c": "It is among the most important heads for the sentence embedding, which all-MiniLM-L6-v2 reads from [CLS].",
    "d": "The map must be wrong: after a softmax, no single key can take most of a row's weight.",
}


def sink_head(sinks: dict) -> tuple[int, int]:
    """The head that puts the largest share of its attention weight on [CLS] (sinks: headscores.sink_scores)."""
    share = np.asarray(sinks["attention"]["[CLS]"])
    return tuple(int(i) for i in np.unravel_index(share.argmax(), share.shape))


def check_sink_reading(answer: object, sinks: dict) -> Feedback:
    """What does the strongest [CLS] sink add to the tokens? One letter of SINK_OPTIONS."""
    if answer is None:
        return wrong('Replace None with one letter, e.g. "a".')
    letter = str(answer).strip().strip("'\"").lower()
    if letter not in SINK_OPTIONS:
        return wrong(f"Answer with one of the letters {', '.join(SINK_OPTIONS)}.")
    layer, head = sink_head(sinks)
    if letter == "b":
        raw, weighted = (float(sinks[way]["[CLS]"][layer, head]) for way in ("attention", "value-norm"))
        ratio = float(sinks["norms"]["other"][layer, head] / sinks["norms"]["[CLS]"][layer, head])
        return right(
            f"Head ({layer}, {head}) gives [CLS] {raw:.0%} of its weight, but [CLS]'s ||v W^O|| is {ratio:.0f} times "
            f"smaller than a word's, so [CLS] makes up only {weighted:.0%} of what the head adds. Parking weight "
            "there is close to doing nothing: Clark et al.'s no-op, measured as Kobayashi et al. suggest."
        )
    hints = {
        "a": "What reaches a token is the weight times [CLS]'s value vector. How long is that vector (section 9)?",
        "c": "MiniLM's embedding is the mean over all tokens (section 2), not [CLS]; and section 8 measured what "
        "switching heads off costs.",
        "d": "A softmax row can put almost all of its weight on one key whose score is far above the others.",
    }
    return wrong(hints[letter])
