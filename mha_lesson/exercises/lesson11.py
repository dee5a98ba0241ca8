"""Exercise checks for lesson 11 (common mistakes)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..attention import causal_mask, scaled_dot_product_attention
from ..demos.mistakes import MISTAKES, check_causal
from ..heads import merge_heads, split_heads
from ..projections import MHAParams
from ._base import Feedback, right, wrong

# Exercise 1: a decoder whose training loss falls suspiciously fast but which writes nonsense when it generates.
SYMPTOM_HINTS = {
    "mask_after_softmax": "that mistake leaves rows summing to less than 1, and here every row sums to 1.",
    "no_scale": "a missing scale saturates the softmax but hides no future token: generation would still work.",
    "wrong_axis": "with the softmax over queries the rows would not sum to 1, and here they do.",
    "reshape_only": "that one mixes tokens across heads; the clue here is about which tokens a position can see.",
    "naive_softmax": "an overflowing softmax gives NaN, not a loss that falls too fast.",
    "flipped_mask": "a flipped causal mask does show the future, but it hides every key from the last query: that "
    "row would sum to 0 (NaN in PyTorch), and here every row sums to 1.",
    "scale_d_model": "too small a scale makes the softmax too flat, but it hides no future token.",
}


def _mistake_name(answer: object, what: str) -> str | Feedback:
    """The answer as one of MISTAKES' names (case and spaces ignored), or a friendly wrong()."""
    if answer is None:
        return wrong(f"Replace None with {what}.")
    name = answer.strip().lower() if isinstance(answer, str) else None
    if name not in MISTAKES:
        return wrong(f"Use one of the registry's names: {', '.join(MISTAKES)}.")
    return name


def check_symptom(answer: object) -> Feedback:
    """Exercise 1: which mistake lets a decoder read the future (rows sum to 1, training loss too good)?"""
    name = _mistake_name(answer, "the name of a mistake, as a string, e.g. 'no_scale'")
    if isinstance(name, Feedback):
        return name
    if name == "mask_with_zero":
        return right(
            "a score of 0 still gets weight exp(0) > 0, so every position sees later tokens during training "
            "(easy to predict the next token when you can read it) and loses them at generation time."
        )
    return wrong(SYMPTOM_HINTS.get(name, "that mistake does not let a position read later tokens. Which ones do?"))


def check_fixed_masking(fn: Callable | None) -> Feedback:
    """Exercise 2: a masked attention fn(q, k, v, mask) that passes check_causal and matches the core."""
    if fn is None:
        return wrong("Replace None with your function, e.g. my_masked_attention (without calling it).")
    if not callable(fn):
        return wrong(f"Expected a function taking (q, k, v, mask), got a {type(fn).__name__}.")
    try:
        result = check_causal(fn)
        rng = np.random.default_rng(80)
        q, k, v = rng.normal(size=(3, 6, 4))  # each (n=6, d_k=4)
        mask = causal_mask(6)
        out, weights = fn(q, k, v, mask)
    except Exception as exc:  # a learner's function may fail in any way: report it, do not raise
        return wrong(f"Your function raised {type(exc).__name__}: {exc}")
    if not result.passed:
        return wrong(f"{result.symptom}. Which score value makes exp() exactly 0?")
    ref_out, ref_w = scaled_dot_product_attention(q, k, v, mask)
    if np.shape(weights) != ref_w.shape or not np.allclose(weights, ref_w):
        return wrong("The mask works, but the weights differ from softmax(q kᵀ / √d_k): check the scale.")
    if np.shape(out) != ref_out.shape or not np.allclose(out, ref_out):
        return wrong("The weights are right but the output is not: multiply the weights by v.")
    return right("future keys get exactly 0 and the allowed ones share the whole unit.")


def mystery_mha(q: np.ndarray, k: np.ndarray, v: np.ndarray, params: MHAParams) -> tuple[np.ndarray, np.ndarray]:
    """Exercise 3: multi-head attention with one of the lesson's mistakes in it. Which one?"""
    Q, K, V = (split_heads(x @ w, params.h) for x, w in ((q, params.w_q), (k, params.w_k), (v, params.w_v)))
    heads, maps = [], []
    for i in reversed(range(params.h)):  # last head first
        head, w = scaled_dot_product_attention(Q[i], K[i], V[i])
        heads.append(head)
        maps.append(w)
    return merge_heads(np.stack(heads)) @ params.w_o, np.stack(maps[::-1])


def check_mystery(answer: object) -> Feedback:
    """Exercise 3: the name of the mistake in mystery_mha."""
    name = _mistake_name(answer, "the name of a mistake, as a string: run the checks on mystery_mha first")
    if isinstance(name, Feedback):
        return name
    if name == "concat_order":
        return right(
            "the heads are computed last to first and concatenated in that order, so W^O's block 0 reads "
            "head h-1. Nothing crashes and every shape is right; only the head-block check notices."
        )
    return wrong(
        f"Run MISTAKES['{name}'].check(mystery_mha): does it fail? Try every check that takes (q, k, v, params)."
    )
