"""Exercise checks for lesson 15 (what heads track): name a real head, an entropy, syntax or next word."""

from __future__ import annotations

import math

import numpy as np

from ._base import Feedback, as_number, right, wrong

# Exercise 1: a head section 4 does not show, and the lesson's thresholds for naming a head (section 4).
MYSTERY_HEAD = (1, 9)  # (layer, head)
KINDS = ("previous token", "next token", "[CLS] sink", "[SEP] sink", "broad")
_SCORE_OF = {"previous token": "previous", "next token": "next", "[CLS] sink": "[CLS]", "[SEP] sink": "[SEP]"}
SHARE, BROAD = 0.5, 0.8  # more than half the attention; entropy above 80% of the uniform one
# Exercise 2: a head that spreads every row evenly over this many keys.
N_KEYS = 8


def kinds_of(scores: dict[str, np.ndarray], baseline: dict[str, float], layer: int, head: int) -> list[str]:
    """The names the lesson's thresholds give head (layer, head): scores as from head_analysis.corpus_scores."""
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


# Exercise 3: interpreting a syntax head (section 7) -------------------------------------------

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
