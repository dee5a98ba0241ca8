"""Checks for lesson 2's exercises (why reduce the dimension per head): a prediction, a layer's cost to read, and
(Going deeper) a count."""

from __future__ import annotations

from ..cost import attention_memory_bytes, flop_count, param_count
from ._base import Feedback, as_choices, as_number, right, wrong

# Exercise 1: the layer before the change (d_model, h, n), and the new number of heads.
D_MODEL, H, N, NEW_H = 512, 8, 128, 16
QUANTITIES = ("d_k", "attention flops", "weight memory")
CHANGES = ("same", "double", "half")
# Exercise 2 (diagnose): a layer whose FLOP count the learner reads; h and the design are for them to find.
MYSTERY_D_MODEL, MYSTERY_N, MYSTERY_H, MYSTERY_SPLIT = 256, 64, 4, False


def check_naive_params(answer: object) -> Feedback:
    """Going deeper's optional exercise: parameters of 12 full-width heads at d_model = 768, no biases."""
    value = as_number(answer, "the number of learned weights (an integer)")
    if isinstance(value, Feedback):
        return value
    d, h = 768, 12
    if value == param_count(d, h, split=False):
        return right(f"each of the {h} heads owns three {d}x{d} matrices, and W^O reads {h}x{d} features.")
    if value == param_count(d, h):
        return wrong("That is the split design (d_k = d_model / h). Here every head is d_model wide.")
    if value == 3 * h * d * d:
        return wrong("W^Q, W^K, W^V are counted; the output projection W^O is missing. How many rows does it have?")
    if value == 3 * h * d * d + d * d:
        return wrong("Close: W^O multiplies the concatenation of all heads. How wide is that concatenation here?")
    return wrong("Count per head: three matrices of shape (d_model, d_k) with d_k = d_model. Then add W^O.")


def layer_costs(d_model: int, h: int, n: int) -> dict[str, float]:
    """The three quantities of exercise 1 for split heads: d_k, the scores' and weighted sum's FLOPs, weight bytes."""
    f = flop_count(n, n, d_model, h)
    return {
        "d_k": d_model // h,
        "attention flops": f["scores"] + f["weighted_sum"],
        "weight memory": attention_memory_bytes(n, n, h),
    }


def predicted_changes() -> dict[str, str]:
    """Exercise 1's answer, measured: how each quantity changes from h = 8 to h = 16 (same, double or half)."""
    before, after = layer_costs(D_MODEL, H, N), layer_costs(D_MODEL, NEW_H, N)
    words = {1.0: "same", 2.0: "double", 0.5: "half"}
    return {q: words[after[q] / before[q]] for q in QUANTITIES}


EXERCISE_2_HINTS = {
    "d_k": "d_k = d_model / h, and only h changes.",
    "attention flops": "Each head's two products cost 2·n²·d_k each. What happens to h·d_k?",
    "weight memory": "Each head stores one n × n map whatever its width. How many heads store one?",
}


def check_doubling_h(answer: object) -> Feedback:
    """Exercise 1: predict how three costs of split heads change when h goes from 8 to 16 (d_model, n fixed)."""
    what = f"a dict mapping each of {', '.join(map(repr, QUANTITIES))} to 'same', 'double' or 'half'"
    chosen = as_choices(answer, QUANTITIES, CHANGES, what)
    if isinstance(chosen, Feedback):
        return chosen
    truth = predicted_changes()
    wrong_keys = [q for q in QUANTITIES if chosen[q] != truth[q]]
    if not wrong_keys:
        return right(
            "narrower heads re-slice the same matrices, so the matrix-product FLOPs stay; every head keeps its own "
            "n × n map, so the weights' memory (and the softmax) grow with h. That is why split heads are cheap, "
            "but not free."
        )
    hints = " ".join(f"'{q}': {EXERCISE_2_HINTS[q]}" for q in wrong_keys)  # every wrong item, not only the first
    return wrong(f"{len(wrong_keys)} of {len(QUANTITIES)} not yet. {hints}")


def mystery_layer() -> dict[str, int]:
    """Exercise 2: {part: FLOPs} of a layer with d_model = MYSTERY_D_MODEL on n = MYSTERY_N tokens, h and d_k hidden."""
    return flop_count(MYSTERY_N, MYSTERY_N, MYSTERY_D_MODEL, MYSTERY_H, split=MYSTERY_SPLIT)


def check_mystery_layer(answer: object) -> Feedback:
    """Exercise 2: the number of heads h and the head width d_k behind mystery_layer()."""
    what = 'a dict {"h": number of heads, "d_k": width of each head}'
    if answer is None:
        return wrong(f"Replace None with {what}.")
    if not isinstance(answer, dict) or set(answer) != {"h", "d_k"}:
        return wrong(f"Expected {what}, got {answer!r}.")
    h, d_k = as_number(answer["h"], "h, a whole number"), as_number(answer["d_k"], "d_k, a whole number")
    if isinstance(h, Feedback):
        return h
    if isinstance(d_k, Feedback):
        return d_k
    d_k_true = MYSTERY_D_MODEL if not MYSTERY_SPLIT else MYSTERY_D_MODEL // MYSTERY_H
    if h != MYSTERY_H:
        return wrong(
            "Start from the softmax: it costs 5 FLOPs per attention weight, and every head has its own n × n weights. "
            "How many n × n maps does this softmax cover?"
        )
    if d_k == MYSTERY_D_MODEL // h and d_k != d_k_true:
        return wrong(
            "h is right. d_k = d_model / h assumes split heads: read d_k from the scores instead, which cost "
            "h · 2 · n² · d_k FLOPs."
        )
    if d_k != d_k_true:
        return wrong("h is right. The scores cost h · 2 · n² · d_k FLOPs: solve that for d_k.")
    return right(
        f"{MYSTERY_H} heads of width {d_k_true} = d_model: full-width (naive) heads, so every part is {MYSTERY_H} "
        "times one head's and the layer costs about h times a split layer. The softmax gives h away in either design."
    )
