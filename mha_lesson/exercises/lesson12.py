"""Exercise checks for lesson 12 (circuits and induction heads)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..circuits import (
    InductionModel,
    hand_built_induction,
    induction_score,
    previous_token_score,
    qk_circuit,
    repeated_sequence,
)
from ..multihead import multi_head_attention
from ..projections import MHAParams, init_params
from ._base import Feedback, as_array, right, wrong

# Exercise 1: the hand-built model's sizes. Exercise 2: a random layer and a change of basis for head 0.
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


def check_previous_token_scores(answer: object) -> Feedback:
    """Exercise 1: a (MAX_LEN, MAX_LEN) block of scaled scores that makes layer 1 a previous-token head."""
    scores = as_array(answer, f"a ({MAX_LEN}, {MAX_LEN}) matrix of scores: row = query position, column = key")
    if isinstance(scores, Feedback):
        return scores
    if scores.shape != (MAX_LEN, MAX_LEN):
        return wrong(f"Expected one row per query position and one column per key position, {(MAX_LEN, MAX_LEN)}.")
    if not np.isfinite(scores).all():
        return wrong("Use finite scores: the mask already hides the keys a query must not see.")
    t = tokens()
    model = with_position_scores(scores)
    attention = model.attention(t)
    on_previous = float(previous_token_score(attention[0, 0]))
    predicted = model.predict(t)
    copied = bool((predicted[K : 2 * K - 1] == t[K + 1 : 2 * K]).all())
    if on_previous >= 0.9 and copied:
        return right(
            f"layer 1 puts {on_previous:.3f} of its attention on the previous token, so layer 2 finds 'the token "
            "after my last occurrence' and the model completes the repeated copy."
        )
    favourite = attention[0, 0, 1:].argmax(axis=-1) - np.arange(1, MAX_LEN)  # offset of each query's top key
    wanted = scores[:-1].argmax(axis=-1) - np.arange(MAX_LEN - 1)  # offset of each query's top score, mask ignored
    if (wanted == 1).mean() > 0.5:
        return wrong("Your rows score key i + 1 highest, which comes after query i: the causal mask hides it.")
    if (favourite == 0).mean() > 0.5:
        return wrong("Your head mostly attends to the query's own position. Which key holds the previous token?")
    if (favourite == -1).mean() > 0.5:
        return wrong("Right place, but the weights are too soft: the previous key must stand out by several units.")
    if on_previous >= 0.9:
        return wrong("Layer 1 attends one back, but the copy still fails: keep every other score equal.")
    return wrong(
        f"Layer 1 puts only {on_previous:.2f} of its attention on the previous token. Row i should score key i - 1 "
        "high and the other keys low (later keys are masked anyway)."
    )


def layer() -> MHAParams:
    """Exercise 2's layer: d_model 8, two heads of width 4, Glorot-random."""
    return init_params(D_MODEL, H, seed=12)


def check_key_weights(answer: object) -> Feedback:
    """Exercise 2: head 0's new W^K (d_model, d_k) that keeps every score after W^Q -> W^Q M."""
    w_k = as_array(answer, f"head 0's new key weights, shape ({D_MODEL}, {D_MODEL // H})")
    if isinstance(w_k, Feedback):
        return w_k
    p = layer()
    if w_k.shape != p.w_k_head(0).shape:
        return wrong(f"Expected W_0^K's shape {p.w_k_head(0).shape} (d_model, d_k), got {w_k.shape}.")
    w_q, new_k = p.w_q.copy(), p.w_k.copy()
    w_q[:, : p.d_k] = p.w_q_head(0) @ M
    new_k[:, : p.d_k] = w_k
    changed = dataclasses.replace(p, w_q=w_q, w_k=new_k)
    x = np.random.default_rng(0).normal(size=(5, D_MODEL))
    if np.allclose(multi_head_attention(x, x, x, changed)[1], multi_head_attention(x, x, x, p)[1], atol=1e-10):
        same = np.allclose(qk_circuit(changed, 0), qk_circuit(p, 0))
        return right(
            f"W^K M^-T: the product W^Q M (W^K M^-T)^T = W^Q W^K^T is unchanged (W_QK the same: {same}), so the "
            "scores are, although both matrices changed."
        )
    if np.allclose(w_k, p.w_k_head(0) @ M):
        return wrong("Multiplying W^K by M too gives x W^Q M M^T W^K^T x^T: M M^T is not the identity.")
    if np.allclose(w_k, p.w_k_head(0) @ np.linalg.inv(M)):
        return wrong("Close: the scores are Q K^T, so the key side's factor is transposed. Write out (W^K N)^T.")
    return wrong("The scores changed. Which N makes W^Q M (W^K N)^T = W^Q W^K^T?")


OPTIONS = {
    "a": "it still attends to the token after the earlier occurrence of the current token",
    "b": "it attends to the earlier occurrence of the current token itself",
    "c": "it spreads its attention evenly over the positions up to its own",
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
