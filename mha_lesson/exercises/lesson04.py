"""Exercise checks for lesson 4 (scaled dot-product attention per head)."""

from __future__ import annotations

import math

import numpy as np

from ..attention import softmax
from ..demos.scaling import row_stats
from ..demos.toy import MAX_LEN, PREVIOUS, SHARP, TOKENS, toy_embeddings, toy_params, toy_weights
from ..multihead import multi_head_attention
from ..widgets.scaling import scaling_stats
from ..widgets.sharpness import MAX_GAIN, toy_scaled_scores
from ._base import Feedback, as_number, as_whole_number, right, wrong

# Exercise 1: a colleague's layer (d_model = FIX_D_MODEL, h = FIX_H heads) forgot the scale; FIX_N random keys.
FIX_D_MODEL, FIX_H, FIX_N = 1024, 4, 32
# Extra exercise C: q has variance VAR_Q per component, k has VAR_K, d_k = D_K.
D_K, VAR_Q, VAR_K = 64, 2.0, 3.0
# Extra exercise D: the query position asked about (the second "the").
DUPLICATE_QUERY = 3
# Extra exercise B: the previous-token head's query 5 scores key 4 at SHARP * g and the other keys at 0.
HALF_QUERY, HALF_TOLERANCE = 5, 0.005


def check_scale_fix(divisor: object) -> Feedback:
    """Exercise 1: the number a head of d_model / h = 256 columns must divide its scores by to start unsaturated."""
    value = as_number(divisor, "the number to divide the scores by")
    if isinstance(value, Feedback):
        return value
    if value <= 0:
        return wrong("Dividing by zero or a negative number is no scale: the divisor must be positive.")
    d_k = FIX_D_MODEL // FIX_H
    raw = scaling_stats(d_k=d_k, n=FIX_N, seed=0)["raw"]  # (queries, FIX_N): unit-variance q.k at this width
    entropy, top = row_stats(raw / value)
    seen = (
        f"Divided by {value:g}, the rows have mean entropy {entropy:.2f} nats and largest weight {top:.2f} "
        f"(uniform: ln {FIX_N} = {math.log(FIX_N):.2f} nats, 1/{FIX_N} = {1 / FIX_N:.2f})."
    )
    if math.isclose(value, math.sqrt(d_k), rel_tol=1e-9):
        return right(
            f"{seen} Each head's score sums d_k = {FIX_D_MODEL} / {FIX_H} = {d_k} products, so its variance is {d_k} "
            f"and its spread √{d_k}; dividing by it gives a head of any width scores of variance 1."
        )
    if math.isclose(value, 1.0, rel_tol=1e-9):
        return wrong(f"{seen} That is the colleague's bug: no scale at all, so the rows stay nearly one-hot.")
    if math.isclose(value, FIX_D_MODEL, rel_tol=1e-9) or math.isclose(value, math.sqrt(FIX_D_MODEL), rel_tol=1e-9):
        return wrong(f"{seen} That uses d_model, the whole layer's width: one head's score sums only d_k products.")
    if math.isclose(value, d_k, rel_tol=1e-9):
        return wrong(
            f"{seen} Too soft: dividing by d_k shrinks the variance d_k to 1/d_k. The variance grows like d_k, so the "
            "spread (its square root) grows like what?"
        )
    side = "still too sharp" if value < math.sqrt(d_k) else "too soft, close to uniform"
    return wrong(f"{seen} That is {side}. What is d_k here, and how does the spread of q·k grow with it?")


def check_score_variance(answer: object) -> Feedback:
    """Extra exercise C: Var(q.k) for d_k = 64 independent components, Var(q_j) = 2, Var(k_j) = 3, all mean 0."""
    value = as_number(answer, "the variance of q·k")
    if isinstance(value, Feedback):
        return value
    expected = D_K * VAR_Q * VAR_K
    if math.isclose(value, expected, rel_tol=1e-9):
        return right(
            f"each product q_j k_j has variance {VAR_Q:g} × {VAR_K:g}, and {D_K} independent ones add up. "
            f"Dividing by √{expected:g} (not √d_k) would bring these scores back to variance 1."
        )
    if math.isclose(value, D_K, rel_tol=1e-9):
        return wrong("That is the answer for unit-variance components. What is the variance of one product q_j k_j?")
    if math.isclose(value, D_K * (VAR_Q + VAR_K), rel_tol=1e-9):
        return wrong("For independent, mean-zero factors, the variance of a product is not the sum of the variances.")
    if math.isclose(value, VAR_Q * VAR_K, rel_tol=1e-9):
        return wrong("That is the variance of one product q_j k_j. How many such products does q·k add up?")
    return wrong("Write q·k as a sum of d_k products; find the variance of one product, then of the sum.")


def check_next_token_shift(shift: object) -> Feedback:
    """Extra exercise A: a matrix for toy_params(shift=...) that makes head 0 attend to the NEXT token."""
    if shift is None:
        return wrong(f"Replace None with a ({MAX_LEN}, {MAX_LEN}) matrix, built like toy.PREVIOUS.")
    try:
        params = toy_params(shift=shift)
    except (ValueError, TypeError) as exc:
        return wrong(f"toy_params could not use it: {exc}")
    if np.array_equal(np.asarray(shift, dtype=float), PREVIOUS):
        return wrong("That is still toy.PREVIOUS, the previous-token head. Change which column row i points at.")
    x = toy_embeddings()
    weights = multi_head_attention(x, x, x, params)[1][0]  # head 0: (n, n)
    n = len(TOKENS)
    on_next = weights[np.arange(n - 1), np.arange(1, n)]
    if (on_next > 0.9).all():
        return right(
            f"every query i < {n - 1} now puts at least {on_next.min():.3f} of its weight on key i + 1. "
            "The last token has no next one: its query is zero, so its row is uniform."
        )
    worst = int(np.argmin(on_next))
    return wrong(
        f"Query {worst} puts only {on_next[worst]:.2f} on key {worst + 1}. Row i of the matrix lists the key "
        "positions query i looks for: which entry of row i should be 1?"
    )


def check_causal_duplicate(answer: object) -> Feedback:
    """Extra exercise D: with a causal mask, which key gets most of the duplicate-token head's weight from query 3?"""
    position = as_whole_number(answer, "a key position, an integer from 0 to 10")
    if isinstance(position, Feedback):
        return position
    row = toy_weights(causal=True)[1][DUPLICATE_QUERY]  # head 1, query 3
    best = int(np.argmax(row))
    if position == best:
        return right(
            f"key {best} ('{TOKENS[best]}') gets {row[best]:.3f}. The mask hides the later 'the's at 6 and 9, "
            "and the head marks down the query's own position, so only the earlier occurrence is left."
        )
    if position == DUPLICATE_QUERY:
        return wrong(
            "That is the query itself. The head marks its own position down: is there another 'the' it may see?"
        )
    if position > DUPLICATE_QUERY:
        return wrong("A causal mask hides every key after the query. Look only at positions 0 to 3.")
    return wrong("The duplicate-token head looks for the same word. Which earlier token is also 'the'?")


def check_half_gain(answer: object) -> Feedback:
    """Extra exercise B: the gain g at which the previous-token head's query 5 puts exactly half its weight on key 4."""
    gain = as_number(answer, "a gain g")
    if isinstance(gain, Feedback):
        return gain
    others = len(TOKENS) - 1  # keys scored 0, each contributing e^0 = 1 to the softmax's sum
    expected = math.log(others) / SHARP
    # the same row the explorer shows, at any gain (the explorer's slider stops at MAX_GAIN)
    weight = float(softmax(gain * toy_scaled_scores()[0][HALF_QUERY])[HALF_QUERY - 1])
    if abs(gain - expected) <= HALF_TOLERANCE:
        return right(
            f"at g = {gain:.3f} key 4 gets {weight:.3f}: e^(8g) = {others} balances the {others} keys scored 0 "
            "(each contributes e^0 = 1). The gain needed grows with the number of competing keys, like ln n."
        )
    if math.isclose(gain, 0.0, abs_tol=1e-9) or math.isclose(gain, math.log(2) / SHARP, rel_tol=1e-3):
        return wrong(
            f"At that gain key 4 gets {weight:.3f}. Half means e^(8g) equals the sum of the other keys' terms: "
            "how many keys score 0, and what is e^0?"
        )
    if math.isclose(gain, math.log(others), rel_tol=1e-3) or math.isclose(gain, math.log(others + 1), rel_tol=1e-3):
        return wrong(f"At that gain key 4 gets {weight:.3f}. The score of key 4 is 8g, not g.")
    if math.isclose(gain, math.log(others + 1) / SHARP, rel_tol=1e-3):
        return wrong(
            f"At that gain key 4 gets {weight:.3f}. Key 4 itself is not one of the keys scored 0: count the others."
        )
    if not 0 <= gain <= MAX_GAIN:
        return wrong(f"Try a gain between 0 and {MAX_GAIN:g}: g = 0 gives every key 1/11, g = 1 the toy as built.")
    side = "more" if weight > 0.5 else "less"
    return wrong(
        f"At that gain key 4 gets {weight:.3f}, {side} than half. Write the weight as e^(8g) / (e^(8g) + number of "
        "other keys) and solve for g."
    )
