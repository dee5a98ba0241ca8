"""Exercise checks for lesson 6 (the output projection W^O)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..multihead import multi_head_attention, multi_head_attention_loop
from ..projections import MHAParams, init_params
from ._base import Feedback, as_array, as_shape, right, wrong

# Extra exercise: the sizes asked about.
D_MODEL, H = 512, 8
# Exercise 1: the factor for each head's term (head 0 off, head 1 counted twice).
COEFFS = (0.0, 2.0, 1.0, 1.0)


def check_block_shape(answer: object) -> Feedback:
    """Extra exercise: shape of W^O_i, the block of W^O that reads head i, for d_model = 512, h = 8."""
    shape = as_shape(answer, "a shape, as a tuple like (rows, columns)")
    if isinstance(shape, Feedback):
        return shape
    d_k = D_MODEL // H
    if shape == (d_k, D_MODEL):
        return right(f"head_i is (n, {d_k}), so head_i W^O_i needs {d_k} rows, and it writes all {D_MODEL} outputs.")
    if shape == (D_MODEL, d_k):
        return wrong(
            "That is the shape of W_i^Q. W^O_i multiplies head_i (n, d_k) from the right: how many rows must it have?"
        )
    if shape == (D_MODEL, D_MODEL):
        return wrong("That is all of W^O. Which part of it does head i's output meet in concat @ W^O?")
    return wrong("In concat @ W^O, head i's d_k columns of concat meet d_k rows of W^O. How wide is each row?")


def exercise_inputs() -> tuple[np.ndarray, MHAParams]:
    """Exercise 1's input x (6, 16) and params (d_model=16, h=4, d_k=4), both seeded."""
    x = np.random.default_rng(5).normal(size=(6, 16))
    return x, init_params(16, 4, seed=5)


def _output_with(w_o: np.ndarray) -> np.ndarray:
    """(n, d_model): the layer on exercise_inputs() with its W^O replaced by w_o."""
    x, params = exercise_inputs()
    return multi_head_attention(x, x, x, dataclasses.replace(params, w_o=w_o))[0]


def check_reweighted_w_o(answer: object) -> Feedback:
    """Exercise 1: a W^O for exercise_inputs() whose output is sum_i COEFFS[i] head_i W^O_i (head 0 off, head 1 x2)."""
    w_o = as_array(answer, "a (16, 16) matrix: the new W^O")
    if isinstance(w_o, Feedback):
        return w_o
    x, params = exercise_inputs()
    if w_o.shape != params.w_o.shape:
        return wrong(f"Expected W^O's shape {params.w_o.shape}, got {w_o.shape}.")
    if not np.isfinite(w_o).all():
        return wrong("The matrix holds inf or nan: build it from params.w_o with finite numbers.")
    _, _, trace = multi_head_attention_loop(x, x, x, params, return_trace=True)
    terms = [head @ params.w_o_head(i) for i, head in enumerate(trace["head_i"])]  # each (n, d_model)
    want = sum(c * t for c, t in zip(COEFFS, terms, strict=True))
    got = _output_with(w_o)
    if np.allclose(got, want, atol=1e-10):
        return right(
            "scaling block i of W^O scales head i's term head_i W^O_i and nothing else: the rows of W^O decide how "
            "much of each head reaches the output."
        )
    d_k = params.d_k
    cols = params.w_o.copy()
    cols[:, :d_k] = 0
    cols[:, d_k : 2 * d_k] *= 2
    if np.allclose(w_o, cols):
        return wrong("That changes columns of W^O: output features, not heads. Which rows of W^O meet head i?")
    if np.allclose(got, sum(terms[1:]), atol=1e-10):
        return wrong("Head 0 is off; now head 1's contribution must count twice.")
    if np.allclose(got, 2 * terms[1] + sum(terms), atol=1e-10) or np.allclose(got, sum(terms) + terms[1], atol=1e-10):
        return wrong("Head 1 counts twice; now switch head 0 off.")
    return wrong(f"Rows i·d_k to (i+1)·d_k (d_k = {d_k}) of W^O meet head i only. Multiply each block by its factor.")


def all_off_inputs() -> tuple[np.ndarray, MHAParams]:
    """Extra exercise A's input x (4, 8) and params (d_model=8, h=2) with an output bias b_o."""
    x = np.random.default_rng(6).normal(size=(4, 8))
    params = init_params(8, 2, bias=True, seed=6)
    return x, dataclasses.replace(params, b_o=np.linspace(-1.0, 1.0, 8))


def check_all_off(answer: object) -> Feedback:
    """Exercise 2: the output of all_off_inputs() when every head is switched off (a (4, 8) or (8,) array)."""
    got = as_array(answer, "an array: the output with every head switched off")
    if isinstance(got, Feedback):
        return got
    x, params = all_off_inputs()
    expected = multi_head_attention(x, x, x, params.without_heads(range(params.h)))[0]  # (4, 8)
    try:
        got = np.broadcast_to(got, expected.shape)
    except ValueError:
        return wrong(f"Expected shape {expected.shape} or ({expected.shape[1]},), got {got.shape}.")
    if np.allclose(got, expected, atol=1e-12):
        return right("every block of W^O is zero, so concat @ W^O = 0 and only the bias b_o is left, in every row.")
    if np.allclose(got, 0):
        return wrong("Zero blocks make concat @ W^O zero, but the layer adds something after multiplying by W^O.")
    return wrong("With every block of W^O zero, what is left of concat @ W^O + b_o?")
