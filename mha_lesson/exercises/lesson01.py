"""Exercise checks for lesson 1 (one head is not enough)."""

from __future__ import annotations

import numpy as np

from ..demos.one_head import best_single_head, binding_task, fit_heads, r2_scan
from ._base import Feedback, as_label_set, as_number, as_whole_number, right, wrong


def check_same_map(answer: object) -> Feedback:
    """Optional exercise: (R^2, alpha) of the best single head when B = A."""
    if answer is None:
        return wrong("Replace None with a pair (R², α), e.g. (0.7, 0.25).")
    if isinstance(answer, str) or not hasattr(answer, "__len__") or len(answer) != 2:  # type: ignore[arg-type]
        return wrong(f"Expected a pair (R², α), got {answer!r}.")
    r2, alpha = as_number(answer[0], "R²"), as_number(answer[1], "α")  # type: ignore[index]
    if isinstance(r2, Feedback):
        return r2
    if isinstance(alpha, Feedback):
        return alpha
    a = binding_task().a
    best_alpha, best_r2 = best_single_head(a, a)
    if abs(r2 - best_r2) > 0.01:
        if abs(r2 - 0.5) < 0.06:
            return wrong(
                "About 0.5 is the answer for independent A and B. With B = A, write the target as one map applied "
                "to a mix of x_{t-1} and x_{t-2}: can one head read that mix?"
            )
        return wrong("Write y_t = x_{t-1} A + x_{t-2} A as (some mix of the two tokens) times one map.")
    if abs(alpha - best_alpha) > 0.01:
        return wrong("R² is right; now the weights: the target uses x_{t-1} and x_{t-2} in which proportion?")
    return right(
        f"y_t = (x_{{t-1}} + x_{{t-2}}) A = (0.5 x_{{t-1}} + 0.5 x_{{t-2}}) (2A): one average and one map, so "
        f"R² = {best_r2:.0f} at α = {best_alpha:.1f}. One head fails only when the two lookups need different maps."
    )


# Exercise 1: a new sentence, and the lookups one layer needs (query -> every key it needs at the same time).
SENTENCE = "Sara gave her brother the old book because he asked".split()
SENTENCE_NEEDS = {
    "gave": ("Sara", "book", "brother"),  # who gave, what, to whom
    "her": ("Sara",),
    "book": ("old",),
    "he": ("brother",),
    "asked": ("he",),
}


def fewest_heads(needs: dict[str, tuple[str, ...]] = SENTENCE_NEEDS) -> int:
    """The fewest heads that cover every lookup with one key per query per head: the busiest query's count."""
    return max(len(keys) for keys in needs.values())


def check_head_count(answer: object) -> Feedback:
    """Exercise 1 (core): the fewest heads one layer needs for SENTENCE_NEEDS, a whole number."""
    count = as_whole_number(answer, "a whole number of heads, e.g. 2")
    if isinstance(count, Feedback):
        return count
    best = fewest_heads()
    lookups, queries = sum(len(keys) for keys in SENTENCE_NEEDS.values()), len(SENTENCE_NEEDS)
    busiest = max(SENTENCE_NEEDS, key=lambda q: len(SENTENCE_NEEDS[q]))
    if count < 1:
        return wrong("A layer needs at least one head.")
    if count < best:
        return wrong(
            f"With {count} head{'s' * (count > 1)}, {busiest!r} gets {count} row{'s' * (count > 1)} of weights for "
            f"its {best} keys: at least one row hands over a blend. Each key a query needs at the same time needs a "
            "head of its own."
        )
    if count == lookups:
        return wrong(
            f"{lookups} is one head per lookup: enough, but lookups of different queries can share a head, since "
            "each query has its own row of weights. How few will do?"
        )
    if count == queries:
        return wrong(
            f"{queries} is one head per query: but one head already serves every query, each in its own row. What "
            "limits a head is one query needing several keys at once."
        )
    if count > best:
        return wrong(f"{count} heads are enough, but not the fewest: which query needs the most keys at once?")
    return right(
        f"{busiest!r} needs {best} values at once (who, what, to whom), so {best} heads; the other queries need one "
        "key each and share them. The busiest query sets the number of heads, not the number of lookups."
    )


def check_sentence_heads(heads: object) -> Feedback:
    """Optional exercise: a list of heads, each a dict {query: key}, covering SENTENCE_NEEDS with fewest heads."""
    what = 'a list of dicts, one per head, e.g. [{"her": "Sara", "gave": "book"}, {"gave": "Sara"}]'
    if heads is None:
        return wrong(f"Replace None with {what}.")
    if isinstance(heads, dict):  # one dict: the learner's single head
        heads = [heads]
    if not isinstance(heads, list | tuple) or not all(isinstance(h, dict) for h in heads):
        return wrong(f"Expected {what}, got {type(heads).__name__}.")
    covered: set[tuple[str, str]] = set()
    for i, head in enumerate(heads):
        for query, key in head.items():
            if not isinstance(key, str):
                return wrong(
                    f"Head {i} gives {query!r} several keys ({key!r}): one row of weights would hand over a blend of "
                    "them. Put each key of that query in a different head."
                )
            if key not in SENTENCE_NEEDS.get(query, ()):
                return wrong(f"Head {i} looks up {query!r} -> {key!r}, which is not one of the needs listed.")
            covered.add((query, key))
    missing = [f"{q} -> {k}" for q, keys in SENTENCE_NEEDS.items() for k in keys if (q, k) not in covered]
    if missing:
        return wrong(f"Not covered yet: {', '.join(missing)}. Every lookup needs a head that makes it.")
    best = fewest_heads()
    if len(heads) > best:
        return wrong(
            f"Every lookup is covered, with {len(heads)} heads. Lookups of different queries can share a head, since "
            "each query has its own row of weights. How few heads will do?"
        )
    return right(
        f"'gave' needs {best} values at once (who, what, to whom), so {best} heads; the other queries need one key "
        "each and share them. The busiest query sets the number of heads, not the number of lookups."
    )


DIP_OPTIONS = {
    "a": "the softmax saturates at α = 0.5, so the gradient vanishes",
    "b": "both heads read the same mix, so their two maps act as one map W_0 + W_1",
    "c": "least squares cannot be solved when two columns of the inputs are equal",
    "d": "the two heads' outputs cancel each other at α = 0.5",
}


def check_dip(answer: object) -> Feedback:
    """Optional exercise: why two heads fall back to one head's R^2 at alpha = 0.5 (one letter of DIP_OPTIONS)."""
    chosen = as_label_set(answer, tuple(DIP_OPTIONS), "one letter, e.g. 'a'")
    if isinstance(chosen, Feedback):
        return chosen
    if len(chosen) != 1:
        return wrong(f"Choose one letter, got {sorted(chosen)}.")
    (letter,) = chosen
    task = binding_task()
    one, two = fit_heads(task, (0.5,)).r2, fit_heads(task, (0.5, 0.5)).r2
    if letter == "b":
        alphas = np.linspace(0, 1, 101)  # the lesson's grid
        low = alphas[r2_scan(task, alphas).argmin()]  # one head's own lowest point: not where the two heads dip
        return right(
            f"at α = 0.5 both heads read (x_{{t-1}} + x_{{t-2}}) / 2, and z W_0 + z W_1 = z (W_0 + W_1): "
            f"R² = {two:.3f}, the same as one head's {one:.3f}. Only there are the two mixes equal, so the dip is "
            f"exactly at 0.5 (one head's own curve is lowest at α = {low:.2f}, another effect). Heads only help when "
            "they look at different places."
        )
    hints = {
        "a": "No softmax is trained here: the weights are set, and the maps come from least squares, not gradients.",
        "c": "Least squares still has a solution (many, in fact); what limits it is what the inputs contain.",
        "d": "Outputs cancel only if the maps make them; the least-squares maps would not choose that.",
    }
    return wrong(hints[letter])
