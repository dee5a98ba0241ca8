"""Checks for lesson 8's exercises, all on the worked example (the, cat, ate, fish; d_model=8, h=2)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..attention import causal_mask
from ..demos.examples import worked_example
from ..multihead import multi_head_attention, multi_head_attention_loop
from ._base import Feedback, as_label_set, as_number, right, wrong

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
    """Extra exercise: the weight cat -> fish in head 0 when W_0^Q is doubled."""
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
    """Exercise 1: head 0's weight from 'cat' to itself under a causal mask."""
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


# Exercise 2: the intermediates a learner can name, and the change made before running the loop again.
STAGES = ("Q", "K", "V", "scores 0", "scores 1", "weights 0", "weights 1", "head_0", "head_1", "concat", "output")
CHANGED_HEAD = 1  # its columns of W^K are doubled


def _stages(trace: dict) -> dict[str, np.ndarray]:
    """The trace of multi_head_attention_loop under the names of STAGES."""
    named = {m: np.hstack(trace[f"{m}_i"]) for m in ("Q", "K", "V")}  # (n, d_model): every head's block
    for i in range(len(trace["weights"])):
        named[f"scores {i}"], named[f"weights {i}"] = trace["scores"][i], trace["weights"][i]
        named[f"head_{i}"] = trace["head_i"][i]
    return named | {"concat": trace["concat"], "output": trace["output"]}


def changed_stages() -> set[str]:
    """The stages whose numbers change when head CHANGED_HEAD's columns of W^K are doubled (measured)."""
    x, params = worked_example()
    w_k = params.w_k.copy()
    w_k[:, CHANGED_HEAD * params.d_k : (CHANGED_HEAD + 1) * params.d_k] *= 2  # (d_model, d_k) block of head 1
    before = _stages(multi_head_attention_loop(x, x, x, params, return_trace=True)[2])
    after = _stages(multi_head_attention_loop(x, x, x, dataclasses.replace(params, w_k=w_k), return_trace=True)[2])
    return {name for name in STAGES if not np.allclose(before[name], after[name], rtol=0, atol=1e-12)}


def check_changed_stages(answer: object) -> Feedback:
    """Exercise 2: which intermediates change when head 1's columns of W^K are doubled?"""
    chosen = as_label_set(answer, STAGES, 'a set of stage names, e.g. {"Q", "scores 0"}')
    if isinstance(chosen, Feedback):
        return chosen
    truth = changed_stages()
    if chosen == truth:
        return right(
            "only head 1's keys change, so only its scores, weights and output do; head 0 never reads those columns. "
            "The concatenation holds head_1, and W^O mixes it into every output feature."
        )
    if {"Q", "V"} & chosen:
        return wrong("Q and V are computed with W^Q and W^V, which did not change.")
    if "K" not in chosen:
        return wrong("The change is in W^K itself: which of Q, K, V is computed with it?")
    if {"scores 0", "weights 0", "head_0"} & chosen:
        return wrong("Head 0 reads only its own columns of W^K (the first d_k). Did any of them change?")
    if "weights 1" not in chosen:
        return wrong("Doubling head 1's keys doubles its scores. Is the softmax of doubled scores the same row?")
    return wrong("Follow head_1 further: the concatenation holds it, and W^O mixes the concatenation into the output.")
