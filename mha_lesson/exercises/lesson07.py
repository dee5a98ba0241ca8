"""Checks for lesson 7's exercises, all on the worked example (the, cat, ate, fish; d_model=8, h=2)."""

from __future__ import annotations

import dataclasses
import math

from ..attention import causal_mask
from ..demos.examples import worked_example
from ..multihead import multi_head_attention
from ._base import Feedback, as_number, as_shape, right, wrong

CAT, FISH = 1, 3  # token positions in the worked example


def _probability(answer: object) -> float | Feedback:
    """The answer as a float in [0, 1], or a friendly Feedback."""
    value = as_number(answer, "your weight, a number between 0 and 1")
    if isinstance(value, Feedback):
        return value
    if not 0.0 <= value <= 1.0:
        return wrong(f"An attention weight lies between 0 and 1 (each row sums to 1); got {answer}.")
    return value


def doubled_query_weight() -> float:
    """Head 0's weight from 'cat' to 'fish' after doubling head 0's columns of W^Q."""
    x, params = worked_example()
    w_q = params.w_q.copy()
    w_q[:, : params.d_k] *= 2  # head 0 owns the first d_k columns
    _, weights = multi_head_attention(x, x, x, dataclasses.replace(params, w_q=w_q))
    return float(weights[0, CAT, FISH])


def check_doubled_query(answer: object) -> Feedback:
    """Exercise 1: the weight cat -> fish in head 0 when W_0^Q is doubled."""
    value = _probability(answer)
    if isinstance(value, Feedback):
        return value
    x, params = worked_example()
    _, before = multi_head_attention(x, x, x, params)
    if math.isclose(value, doubled_query_weight(), abs_tol=2e-3):
        return right(
            "doubling the queries doubles every score, so the softmax gets sharper: 'cat' looks at 'fish' more."
        )
    if math.isclose(value, float(before[0, CAT, FISH]), abs_tol=2e-3):
        return wrong("That is the weight before the change. Doubling W_0^Q doubles Q_0, and with it the scores.")
    return wrong("Double 'cat's row of Q_0, recompute its four scaled scores, then apply the softmax to that row.")


def check_causal_weight(answer: object) -> Feedback:
    """Exercise 2: head 0's weight from 'cat' to itself under a causal mask."""
    value = _probability(answer)
    if isinstance(value, Feedback):
        return value
    x, params = worked_example()
    _, masked = multi_head_attention(x, x, x, params, mask=causal_mask(len(x)))
    _, free = multi_head_attention(x, x, x, params)
    if math.isclose(value, float(masked[0, CAT, CAT]), abs_tol=2e-3):
        return right("with 'fish' hidden, the weight it had goes to the keys 'cat' may still see.")
    if math.isclose(value, float(free[0, CAT, CAT]), abs_tol=2e-3):
        return wrong("That is the weight without the mask. 'cat' (position 1) may only see positions 0 and 1.")
    return wrong(
        "Keep only the scaled scores of the keys 'the' and 'cat' in 'cat's row, and take the softmax of those two."
    )


def check_shapes(scores_shape: object, concat_shape: object) -> Feedback:
    """Exercise 3: shapes of one head's scores and of the concatenation for n=10, d_model=8, h=2."""
    scores = as_shape(scores_shape, "the shape of one head's scores, a tuple like (2, 3)")
    if isinstance(scores, Feedback):
        return scores
    concat = as_shape(concat_shape, "the shape of the concatenation, a tuple like (2, 3)")
    if isinstance(concat, Feedback):
        return concat
    n, d_model, h = 10, 8, 2
    good_scores, good_concat = scores == (n, n), concat == (n, d_model)
    if good_scores and good_concat:
        return right("the scores grow as n × n whatever d_model is; the concatenation is back to d_model wide.")
    if not good_scores:
        if scores == (n, d_model // h):
            return wrong("(n, d_k) is the shape of Q_i or head_i; the scores compare every query with every key.")
        return wrong("Scores have one row per query and one column per key.")
    if concat == (n, d_model // h):
        return wrong("That is one head's output; the concatenation puts all h heads side by side.")
    return wrong("The concatenation has one row per token and h·d_k columns.")
