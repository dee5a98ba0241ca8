"""Checks for lesson 3's exercises (projecting into head subspaces)."""

from __future__ import annotations

import numpy as np

from ._base import Feedback, as_array, as_pair, right, wrong


def check_head_shape(answer: object) -> Feedback:
    """Exercise 1 (first part): the shape of Q_i for n = 10 tokens, d_model = 64, h = 8."""
    pair = as_pair(answer, "a shape such as (3, 5)")
    if isinstance(pair, Feedback):
        return pair
    n, d_model, h = 10, 64, 8
    if pair == (n, d_model // h):
        return right("one row per token, d_k = d_model / h columns: the head's own small space.")
    if pair == (n, d_model):
        return wrong("That is the shape of the full Q = X W^Q. How many of its columns does one head get?")
    if pair == (d_model // h, n):
        return wrong("The right numbers, in the wrong order: X W_i^Q has one row per token.")
    return wrong("Q_i = X W_i^Q with X of shape (n, d_model) and W_i^Q of shape (d_model, d_k).")


def check_head_columns(answer: object) -> Feedback:
    """Exercise 1 (second part): the columns (start, stop) of W^Q that belong to head i = 2 when d_model = 64, h = 8."""
    pair = as_pair(answer, "a (start, stop) pair as in W_q[:, start:stop]")
    if isinstance(pair, Feedback):
        return pair
    d_k, i = 64 // 8, 2
    if pair == (i * d_k, (i + 1) * d_k):
        return right("head i owns columns i*d_k up to (not including) (i+1)*d_k.")
    if pair == (i * d_k, (i + 1) * d_k - 1):
        return wrong("Almost: in Python's start:stop the stop is not included.")
    if pair == ((i - 1) * d_k, i * d_k):
        return wrong("Heads are numbered from 0: head 0 owns the first d_k columns.")
    return wrong("Each head owns d_k = d_model / h neighbouring columns, head 0 first.")


def head_blocks(h: int = 4, d_model: int = 16, seed: int = 3) -> np.ndarray:
    """(h, d_model, d_model // h): h random per-head blocks W_i^Q stacked head first, for exercise 3."""
    return np.random.default_rng(seed).normal(size=(h, d_model, d_model // h))


def check_w_q(w_q: object) -> Feedback:
    """Exercise 2: one (16, 16) W^Q from head_blocks(), so that X @ W^Q gives every head's projection."""
    matrix = as_array(w_q, "one (16, 16) array built from stacked")
    if isinstance(matrix, Feedback):
        return matrix
    stacked = head_blocks()  # (h, d_model, d_k)
    h, d_model, d_k = stacked.shape
    expected = np.concatenate(list(stacked), axis=1)  # (d_model, h * d_k): head i's block in columns i*d_k:(i+1)*d_k
    if matrix.shape == expected.shape and np.array_equal(matrix, expected):
        return right("with the blocks side by side, X @ W_q computes all four Q_i in one matmul.")
    if matrix.shape == (h * d_model, d_k):
        return wrong("You stacked the blocks on top of each other. Which axis holds the heads' columns?")
    if matrix.ndim == 3:
        return wrong("That still has an axis for heads. W^Q should be one 2-D (d_model, d_model) matrix.")
    if matrix.shape == expected.shape and np.array_equal(matrix, stacked.reshape(d_model, h * d_k)):
        return wrong(
            "Right shape, but a plain reshape reads the numbers in memory order, head by head. "
            "Compare w_q[:, 4:8] with stacked[1]."
        )
    if matrix.shape == expected.shape:
        return wrong("The shape is right but the entries are not: head i's block belongs in columns i*d_k:(i+1)*d_k.")
    return wrong(f"Expected a matrix of shape {expected.shape}: the blocks side by side.")
