"""Checks for lesson 2's exercises (why reduce the dimension per head): a count, a prediction, a table to read."""

from __future__ import annotations

from ..cost import attention_memory_bytes, flop_count, param_count
from ._base import Feedback, as_choices, as_number, right, wrong

# Exercise 2: the layer before the change (d_model, h, n), and the new number of heads.
D_MODEL, H, N, NEW_H = 512, 8, 128, 16
QUANTITIES = ("parameters", "attention flops", "softmax flops", "weight memory", "d_k")
CHANGES = ("same", "double", "half")
# Exercise 3: the designs behind the mystery table's columns (a fixed shuffle; the learner names them).
DESIGNS = ("one head", "split", "naive")
MYSTERY_COLUMNS = {"A": "split", "B": "naive", "C": "one head"}


def check_naive_params(answer: object) -> Feedback:
    """Exercise 1: parameters of 12 full-width heads at d_model = 768, no biases."""
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
    """The five quantities of exercise 2 for split heads: parameters, FLOPs, weight bytes, d_k."""
    f = flop_count(n, n, d_model, h)
    return {
        "parameters": param_count(d_model, h),
        "attention flops": f["scores"] + f["weighted_sum"],
        "softmax flops": f["softmax"],
        "weight memory": attention_memory_bytes(n, n, h),
        "d_k": d_model // h,
    }


def predicted_changes() -> dict[str, str]:
    """Exercise 2's answer, measured: how each quantity changes from h = 8 to h = 16 (same, double or half)."""
    before, after = layer_costs(D_MODEL, H, N), layer_costs(D_MODEL, NEW_H, N)
    words = {1.0: "same", 2.0: "double", 0.5: "half"}
    return {q: words[after[q] / before[q]] for q in QUANTITIES}


EXERCISE_2_HINTS = {
    "parameters": "Do W^Q, W^K, W^V and W^O change shape when they are cut into more, narrower blocks?",
    "attention flops": "Each head's two products cost 2·n²·d_k each. What happens to h·d_k?",
    "softmax flops": "The softmax runs once per attention weight. How many n × n weight maps are there?",
    "weight memory": "Each head stores one n × n map whatever its width. How many heads store one?",
    "d_k": "d_k = d_model / h, and only h changes.",
}


def check_doubling_h(answer: object) -> Feedback:
    """Exercise 2: predict how five costs of split heads change when h goes from 8 to 16 (d_model, n fixed)."""
    what = f"a dict mapping each of {', '.join(map(repr, QUANTITIES))} to 'same', 'double' or 'half'"
    chosen = as_choices(answer, QUANTITIES, CHANGES, what)
    if isinstance(chosen, Feedback):
        return chosen
    truth = predicted_changes()
    wrong_keys = [q for q in QUANTITIES if chosen[q] != truth[q]]
    if not wrong_keys:
        return right(
            "more heads re-slice the same matrices, so parameters and matrix-product FLOPs stay; every head keeps its "
            "own n × n map, so the softmax and the weights' memory grow with h. That is why split heads are cheap, "
            "but not free."
        )
    first = wrong_keys[0]
    return wrong(f"{len(wrong_keys)} of {len(QUANTITIES)} not yet. '{first}': {EXERCISE_2_HINTS[first]}")


def mystery_table(d_model: int = D_MODEL, h: int = H, n: int = N) -> dict[str, dict[str, int]]:
    """Exercise 3: {column: {part: FLOPs}} for the three designs, under the letters of MYSTERY_COLUMNS."""
    designs = {
        "one head": flop_count(n, n, d_model, 1),
        "split": flop_count(n, n, d_model, h),
        "naive": flop_count(n, n, d_model, h, split=False),
    }
    return {letter: designs[design] for letter, design in MYSTERY_COLUMNS.items()}


def check_mystery_columns(answer: object) -> Feedback:
    """Exercise 3: name the design behind each column A, B, C of mystery_table()."""
    what = "a dict mapping 'A', 'B' and 'C' to 'one head', 'split' or 'naive'"
    chosen = as_choices(answer, tuple(MYSTERY_COLUMNS), DESIGNS, what)
    if isinstance(chosen, Feedback):
        return chosen
    if chosen == MYSTERY_COLUMNS:
        return right(
            "B is exactly h times C in every part: full-width heads are h copies of one head. A agrees with C in "
            "every matrix product and differs only in the softmax, where it has as many weights as B."
        )
    if sorted(chosen.values()) != sorted(DESIGNS):
        return wrong("Each design is in exactly one column: use 'one head', 'split' and 'naive' once each.")
    if chosen["B"] != "naive":
        return wrong(
            "One column is the same whole multiple of another in every part. Which design copies a head h times?"
        )
    return wrong("A and C agree in all but one part. Which part is it, and which design has h times more of it?")
