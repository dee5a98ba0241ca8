"""Checks for lesson 18's exercises (positions, windows and layer order): predict the reach of a stack of mixed
sliding windows, choose a RoPE base for a context length (design), diagnose a head that rotates its values."""

from __future__ import annotations

import math

import numpy as np

from .. import attention
from ..rope import rope
from ._base import Feedback, as_number, as_whole_number, check_letter, right, wrong

# Exercise 1: four layers with causal windows of 8 keys, then two layers with windows of 3 keys.
STACK_WINDOWS = (8, 8, 8, 8, 3, 3)
STACK_QUERY = 60  # the position whose reach the learner predicts
STACK_N = 64  # sequence length of the check's independent computation


def earliest_reached(windows: tuple[int, ...] = STACK_WINDOWS, query: int = STACK_QUERY, n: int = STACK_N) -> int:
    """The earliest input position that reaches `query` through layers with these windows (boolean products)."""
    reach = np.eye(n, dtype=bool)  # (n, n): before any layer, each position holds only itself
    for window in windows:
        # One more layer: i reaches t if i attends to some j that already reached t.
        reach = attention.sliding_window_mask(n, window) @ reach
    return int(np.argmax(reach[query]))


def check_earliest_position(answer: object) -> Feedback:
    """Exercise 1: the earliest position that can reach STACK_QUERY through STACK_WINDOWS."""
    value = as_whole_number(answer, "a position")
    if isinstance(value, Feedback):
        return value
    correct = earliest_reached()
    q, windows = STACK_QUERY, STACK_WINDOWS
    if value == correct:
        return right(
            f"{q} - (4 × 7 + 2 × 2) = {correct}: each layer adds its window minus one. Swap the order of the layers "
            "and the reach stays the same: only the sum counts."
        )
    if value == q - sum(windows):
        return wrong("A window of w keys reaches w - 1 tokens back: it includes the query's own position.")
    if value == q - sum(w - 1 for w in windows) - 1 or value == q - sum(w - 1 for w in windows) + 1:
        return wrong("Off by one: count how far one window of 3 keys reaches back from position 10, then add up.")
    if value == q - len(windows) * (max(windows) - 1):
        return wrong("The last two layers have smaller windows: add each layer's own reach.")
    if value in (q - 4 * (8 - 1), q - (8 - 1), q - (3 - 1)):
        return wrong("Every layer extends the reach, the small-window layers too: add all six layers' reaches.")
    if value > q or value < 0:
        return wrong(f"Give a position between 0 and {q}: the earliest token whose information can reach {q}.")
    return wrong("Follow the reach layer by layer: how many tokens further back does each layer add?")


# Exercise 2: the slowest RoPE pair of a head of width 128 should turn less than once over the context.
BASE_D_K = 128
BASE_CONTEXT = 131_072


def slowest_wavelength(base: float, d_k: int = BASE_D_K) -> float:
    """Positions per full turn of RoPE's slowest pair, 2π / base^(-(d_k - 2)/d_k)."""
    return 2 * math.pi * base ** ((d_k - 2) / d_k)


def smallest_base(context: int = BASE_CONTEXT, d_k: int = BASE_D_K) -> float:
    """Exercise 2's answer: the base whose slowest wavelength equals the context."""
    return (context / (2 * math.pi)) ** (d_k / (d_k - 2))


def check_rope_base(answer: object) -> Feedback:
    """Exercise 2: the smallest base for which the slowest pair turns at most once over BASE_CONTEXT positions."""
    value = as_number(answer, "a RoPE base")
    if isinstance(value, Feedback):
        return value
    if value <= 1:
        return wrong("A base above 1: each pair turns by base^(-2j/d_k) radians per position, slower for larger j.")
    correct = smallest_base()
    if math.isclose(value, correct, rel_tol=0.01):
        return right(
            f"base ≈ {correct:,.0f}: its slowest pair turns once in about {slowest_wavelength(value):,.0f} positions. "
            "Models keep a wide margin: Llama 3 took 500,000, whose slowest pair turns once in about 2.6 million."
        )
    if math.isclose(value, BASE_CONTEXT / (2 * math.pi), rel_tol=0.01):
        return wrong("That is the base if the slowest pair's exponent were 1; for d_k = 128 it is 126/128.")
    if math.isclose(value, BASE_CONTEXT ** (BASE_D_K / (BASE_D_K - 2)), rel_tol=0.01):
        return wrong("Angles are in radians: one full turn is 2π, not 1.")
    if value < correct:
        return wrong(
            f"With that base the slowest pair turns once in {slowest_wavelength(value):,.0f} positions, fewer than "
            f"the {BASE_CONTEXT:,} of the context."
        )
    return wrong(
        f"That base works (one turn in {slowest_wavelength(value):,.0f} positions), but a smaller one does too: "
        "find the base at which the slowest pair turns exactly once over the context."
    )


# Exercise 3: a RoPE head that also rotates its values.


def buggy_rope_attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, positions: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """One causal RoPE head, q, k, v (n, d_k), positions (n,) -> output (n, d_k) and weights (n, n)."""
    q_r, k_r, v_r = rope(q, positions), rope(k, positions), rope(v, positions)
    scores = q_r @ k_r.T / math.sqrt(q.shape[-1])  # (n, n)
    scores = np.where(attention.causal_mask(len(q)), scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ v_r, weights


OPTIONS = {
    "a": "the attention weights change when the same tokens are moved to other positions",
    "b": "the weights stay the same when the tokens are moved, but the outputs change: the values now carry their "
    "absolute positions",
    "c": "the rotation stretches or shrinks each value, so the outputs come out at the wrong size",
    "d": "nothing changes: a rotation keeps lengths, so rotating the values is harmless",
}


def check_value_rotation(answer: object) -> Feedback:
    """Exercise 3: what goes wrong when RoPE also turns the values? One letter of OPTIONS."""
    hints = {
        "a": "Compare the weights at positions 0..n-1 and 1000..1000+n-1: which part of the head made the scores?",
        "c": "Measure np.linalg.norm of the rotated values: does a rotation change a length?",
        "d": "Compare the outputs, not only the weights, at positions 0..n-1 and 1000..1000+n-1.",
    }
    praise = (
        "The scores still depend on offsets only, so the weights do not move; but each value is turned by its "
        "own position, so the same sentence at position 1,000 gives other outputs. RoPE turns q and k only."
    )
    return check_letter(answer, OPTIONS, "b", praise, hints)
