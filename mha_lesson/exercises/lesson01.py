"""Exercise checks for lesson 1 (one head is not enough)."""

from __future__ import annotations

import numpy as np

from ..demos.one_head import BindingTask, best_single_head, binding_task, fit_heads, heads_output, r_squared
from ._base import Feedback, as_array, as_label_set, as_number, right, wrong

HELD_OUT_SEED = 1  # exercise 2's heads are scored on a fresh sequence, with the lesson's A and B


def check_same_map(answer: object) -> Feedback:
    """Exercise 1: (R^2, alpha) of the best single head when B = A."""
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


def held_out_task() -> BindingTask:
    """The lesson's A and B on a fresh sequence: exercise 2's heads must fit data they were not fitted on."""
    lesson = binding_task()
    return BindingTask(binding_task(seed=HELD_OUT_SEED).x, lesson.a, lesson.b)


def check_two_heads(alphas: object, maps: object) -> Feedback:
    """Exercise 2: two heads (alphas[i] on key t-1, maps[i] of shape (d, d)) that fit the binding task exactly."""
    if alphas is None or maps is None:
        return wrong("Replace both Nones: alphas = (α_0, α_1) and maps = (W_0, W_1).")
    weights = as_array(alphas, "two attention weights (α_0, α_1)")
    if isinstance(weights, Feedback):
        return weights
    task = held_out_task()
    d = task.a.shape[0]
    if weights.shape != (2,) or not np.all((weights >= 0) & (weights <= 1)):
        return wrong(f"Expected two weights in [0, 1] (one per head, on key t-1), got {alphas!r}.")
    try:
        stacked = [np.asarray(w, dtype=float) for w in maps]  # type: ignore[union-attr]
    except (TypeError, ValueError):
        return wrong(f"Expected two ({d}, {d}) matrices (W_0, W_1), got {type(maps).__name__}.")
    if len(stacked) != 2 or any(w.shape != (d, d) for w in stacked):
        return wrong(f"Expected two ({d}, {d}) matrices, one map per head; got shapes {[w.shape for w in stacked]}.")
    r2 = r_squared(task.target, heads_output(task, tuple(weights), stacked))
    if r2 > 1 - 1e-9:
        return right(
            f"R² = {r2:.12f} on a sequence your maps never saw: each head looks up one token and applies its own map."
        )
    best = fit_heads(task, tuple(weights)).r2  # the best maps for these attention weights
    if abs(weights[0] - weights[1]) < 1e-12:
        return wrong(
            f"R² = {r2:.3f}. Both heads read the same mix, so together they are one head with map W_0 + W_1. "
            "Let them look at different keys."
        )
    if best > 1 - 1e-9:
        return wrong(f"R² = {r2:.3f}. The heads look at usable places; now give each head the map of what it reads.")
    return wrong(f"R² = {r2:.3f}: check which key each head reads and which of A and B belongs to that key.")


DIP_OPTIONS = {
    "a": "the softmax saturates at α = 0.5, so the gradient vanishes",
    "b": "both heads read the same mix, so their two maps act as one map W_0 + W_1",
    "c": "least squares cannot be solved when two columns of the inputs are equal",
    "d": "the two heads' outputs cancel each other at α = 0.5",
}


def check_dip(answer: object) -> Feedback:
    """Exercise 3: why two heads fall back to one head's R^2 at alpha = 0.5 (one letter of DIP_OPTIONS)."""
    chosen = as_label_set(answer, tuple(DIP_OPTIONS), "one letter, e.g. 'a'")
    if isinstance(chosen, Feedback):
        return chosen
    if len(chosen) != 1:
        return wrong(f"Choose one letter, got {sorted(chosen)}.")
    (letter,) = chosen
    task = binding_task()
    one, two = fit_heads(task, (0.5,)).r2, fit_heads(task, (0.5, 0.5)).r2
    if letter == "b":
        return right(
            f"at α = 0.5 both heads read (x_{{t-1}} + x_{{t-2}}) / 2, and z W_0 + z W_1 = z (W_0 + W_1): "
            f"R² = {two:.3f}, the same as one head's {one:.3f}. Heads only help when they look at different places."
        )
    hints = {
        "a": "No softmax is trained here: the weights are set, and the maps come from least squares, not gradients.",
        "c": "Least squares still has a solution (many, in fact); what limits it is what the inputs contain.",
        "d": "Outputs cancel only if the maps make them; the least-squares maps would not choose that.",
    }
    return wrong(hints[letter])
