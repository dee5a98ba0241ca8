"""Exercise checks for lesson 14 (circuits and induction heads)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..circuits import (
    InductionModel,
    hand_built_induction,
    induction_score,
    repeated_sequence,
)
from ..multihead import multi_head_attention
from ..projections import MHAParams, init_params
from ._base import Feedback, as_label_set, right, wrong

# Exercise 1: the hand-built model's sizes. Exercise 2: a random layer and a matrix that is not a rotation.
VOCAB, MAX_LEN, K = 8, 14, 6
D_MODEL, H = 8, 2
M = np.array([[2.0, 1.0, 0.0, 0.0], [0.0, 1.0, 0.5, 0.0], [0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.5]])


def tokens() -> np.ndarray:
    """Exercise 1's test sequence: K distinct tokens, repeated, then random ones (MAX_LEN in all)."""
    return repeated_sequence(np.random.default_rng(12), VOCAB, K, MAX_LEN)


def with_position_scores(scores: np.ndarray) -> InductionModel:
    """The hand-built model with layer 1's position-by-position block of W_QK replaced: scaled scores `scores`.

    Key j offers the one-hot of its position, and query i's vector is row i of `scores`, so the scaled score
    query position i gives key position j is scores[i, j] (the sqrt(d_k) is undone inside).
    """
    model = hand_built_induction(VOCAB, MAX_LEN)
    first = model.layers[0]
    pos = model.blocks["position"]
    w_q = first.w_q.copy()
    w_q[pos, pos] = math.sqrt(first.d_k) * np.asarray(scores, dtype=float)
    return dataclasses.replace(model, layers=(dataclasses.replace(first, w_q=w_q), model.layers[1]))


def layer() -> MHAParams:
    """Exercise 2's layer: d_model 8, two heads of width 4, Glorot-random."""
    return init_params(D_MODEL, H, seed=12)


SHIFTED_OPTIONS = {
    "a": "the right next token: the model still completes the copy",
    "b": "the token two places after the current token's earlier occurrence (one ahead of the right answer)",
    "c": "the current token again",
    "d": "no particular token: layer 2's attention is spread evenly",
}


def two_back_model() -> InductionModel:
    """The hand-built model with layer 1 looking 2 back instead of 1 back (scaled score 10 on key i - 2)."""
    return with_position_scores(10.0 * np.eye(MAX_LEN, k=-2))


def shifted_option() -> str:
    """The option that describes two_back_model()'s predictions on the second copy of tokens(), measured."""
    t = tokens()
    queries = np.arange(K, 2 * K - 2)  # second-copy queries whose token two ahead is still in the copy
    predicted = two_back_model().predict(t)[queries]
    if (predicted == t[queries + 1]).mean() > 0.8:
        return "a"
    if (predicted == t[queries - K + 2]).mean() > 0.8:
        return "b"
    if (predicted == t[queries]).mean() > 0.8:
        return "c"
    return "d"


def check_shifted_previous_head(answer: object) -> Feedback:
    """Exercise 1: what the induction model predicts once layer 1 looks 2 back (a letter of SHIFTED_OPTIONS)."""
    if answer is None:
        return wrong(f"Replace None with one letter: {', '.join(SHIFTED_OPTIONS)}.")
    letter = str(answer).strip().lower()
    if letter not in SHIFTED_OPTIONS:
        return wrong(f"Expected one of the letters {', '.join(SHIFTED_OPTIONS)}, got {answer!r}.")
    if letter == shifted_option():
        return right(
            "each key now offers the token two before it, so a query holding A matches the key two after the earlier "
            "A and copies it: the model skips a token. K-composition passes on whatever offset layer 1 reads."
        )
    if letter == "a":
        return wrong("Layer 2 matches the query's token against what layer 1 wrote into each key. What is that now?")
    if letter == "c":
        return wrong("Layer 2 copies the token at the key it attends to, not the query's own token. Which key wins?")
    return wrong("Layer 1 is still sharp (score 10 on one key), so layer 2's keys still differ: one of them wins.")


CHANGE_OPTIONS = {
    "a": "W_0^Q -> 2 W_0^Q and W_0^K -> W_0^K / 2",
    "b": "W_0^Q -> W_0^Q R and W_0^K -> W_0^K R, with R a rotation (R R^T = I)",
    "c": "swap heads 0 and 1: their columns of W^Q, W^K, W^V and their rows of W^O",
    "d": "W_0^Q -> W_0^Q M and W_0^K -> W_0^K M, with the matrix ex.M (not a rotation)",
    "e": "W_0^V -> 3 W_0^V and W_0^O -> W_0^O / 3",
    "f": "W_0^Q -> -W_0^Q",
}


def changed_layer(option: str) -> MHAParams:
    """layer() with CHANGE_OPTIONS[option] applied."""
    p = layer()
    d_k = p.d_k
    head0, head1 = slice(0, d_k), slice(d_k, 2 * d_k)
    w = {name: getattr(p, name).copy() for name in ("w_q", "w_k", "w_v", "w_o")}
    rotation = np.linalg.qr(np.random.default_rng(5).normal(size=(d_k, d_k)))[0]
    if option == "a":
        w["w_q"][:, head0] *= 2
        w["w_k"][:, head0] /= 2
    elif option == "b":
        w["w_q"][:, head0] = p.w_q_head(0) @ rotation
        w["w_k"][:, head0] = p.w_k_head(0) @ rotation
    elif option == "c":
        for name in ("w_q", "w_k", "w_v"):
            w[name][:, head0], w[name][:, head1] = getattr(p, name)[:, head1], getattr(p, name)[:, head0]
        w["w_o"][head0], w["w_o"][head1] = p.w_o[head1], p.w_o[head0]
    elif option == "d":
        w["w_q"][:, head0] = p.w_q_head(0) @ M
        w["w_k"][:, head0] = p.w_k_head(0) @ M
    elif option == "e":
        w["w_v"][:, head0] *= 3
        w["w_o"][head0] /= 3
    elif option == "f":
        w["w_q"][:, head0] *= -1
    else:
        raise ValueError(f"option: expected one of {sorted(CHANGE_OPTIONS)}, got {option!r}")
    return dataclasses.replace(p, **w)


def unchanged_options() -> set[str]:
    """The options after which the layer's output is the same on random inputs (measured)."""
    x = np.random.default_rng(0).normal(size=(2, 5, D_MODEL))
    out = multi_head_attention(x, x, x, layer())[0]
    return {o for o in CHANGE_OPTIONS if np.allclose(multi_head_attention(x, x, x, changed_layer(o))[0], out)}


def check_same_function(answer: object) -> Feedback:
    """Exercise 2: the set of changes (letters of CHANGE_OPTIONS) that leave the layer's output unchanged."""
    chosen = as_label_set(answer, tuple(CHANGE_OPTIONS), 'a set of letters, e.g. {"a", "c"}')
    if isinstance(chosen, Feedback):
        return chosen
    truth = unchanged_options()
    if chosen == truth:
        return right(
            "a, b and e keep each head's W_QK and W_OV (R^-T = R for a rotation); c swaps two terms of a sum. "
            "The circuits, not the weights, are what a layer computes, and even which head is 'head 0' is arbitrary."
        )
    if "c" not in chosen:
        return wrong("The layer's output is a sum of one term per head: does the order of the terms matter?")
    if "d" in chosen:
        return wrong("Write out W^Q M (W^K M)^T: is M M^T the identity here? Try print(ex.M @ ex.M.T).")
    if "f" in chosen:
        return wrong("Flipping W^Q flips every score's sign: the softmax then favours the keys it used to avoid.")
    missing = sorted(truth - chosen)
    return wrong(f"Some changes you left out keep W_QK and W_OV as they were: check option {missing[0]}'s product.")


OPTIONS = {
    "a": "it still attends to the token after the earlier occurrence of the current token",
    "b": "it attends to the earlier occurrence of the current token itself",
    "c": "it spreads its attention evenly over the positions after the first, up to its own",
    "d": "it attends to the first token only",
}


def ablated_attention() -> np.ndarray:
    """(n, n) layer 2's weights on tokens() in the hand-built model with layer 1's head switched off (W^O rows 0)."""
    model = hand_built_induction(VOCAB, MAX_LEN)
    first, second = model.layers
    ablated = dataclasses.replace(model, layers=(first.without_heads([0]), second))
    return ablated.attention(tokens())[1, 0]


def measured_option() -> str:
    """The option that describes ablated_attention(), measured on the second copy's queries."""
    w = ablated_attention()
    rows = np.arange(K, 2 * K)
    if induction_score(w, K) > 0.5:
        return "a"
    if w[rows, rows - K].mean() > 0.5:
        return "b"
    if w[rows, 0].mean() > 0.5:
        return "d"
    spread = [np.ptp(w[t, 1 : t + 1]) for t in rows]  # equal weights over the keys 1..t
    return "c" if max(spread) < 0.05 else "none"


def check_ablation(answer: object) -> Feedback:
    """Exercise 3: what layer 2's head does once the previous-token head is switched off (a letter)."""
    if answer is None:
        return wrong(f"Replace None with one letter: {', '.join(OPTIONS)}.")
    letter = str(answer).strip().lower()
    if letter not in OPTIONS:
        return wrong(f"Expected one of the letters {', '.join(OPTIONS)}, got {answer!r}.")
    truth = measured_option()
    if letter == truth:
        return right(
            "with layer 1 off, the 'previous token' block every key offers is empty, so every score is 0 (key 0 is "
            "marked down) and the softmax of equal scores is uniform: K-composition needs both heads."
        )
    if letter == "a":
        return wrong("Layer 2's key reads what layer 1 wrote. What does the key offer once layer 1 writes nothing?")
    if letter == "b":
        return wrong("Layer 2's query looks for a token in the 'previous token' block, not in the token block.")
    return wrong("Key 0 is marked down on purpose. Measure: print(ex.ablated_attention().round(2)).")
