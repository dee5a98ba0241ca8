"""Exercise checks for lesson 6 (the output projection W^O)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..multihead import multi_head_attention
from ..projections import MHAParams, init_params
from ._base import Feedback, as_array, as_shape, right, wrong

# Exercise 1: the sizes asked about.
D_MODEL, H = 512, 8
# Exercise 2: the head to switch off.
OFF = 2


def check_block_shape(answer: object) -> Feedback:
    """Exercise 1: shape of W^O_i, the block of W^O that reads head i, for d_model = 512, h = 8."""
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
    """Exercise 2's input x (6, 16) and params (d_model=16, h=4), both seeded."""
    x = np.random.default_rng(5).normal(size=(6, 16))
    return x, init_params(16, 4, seed=5)


def check_ablation_delta(answer: object) -> Feedback:
    """Exercise 2: out - out without head OFF, computed from the trace alone."""
    delta = as_array(answer, "an (n, d_model) array computed from the trace and params")
    if isinstance(delta, Feedback):
        return delta
    x, params = exercise_inputs()
    out = multi_head_attention(x, x, x, params)[0]
    expected = out - multi_head_attention(x, x, x, params.without_heads([OFF]))[0]
    if delta.shape != expected.shape:
        return wrong(f"Expected shape {expected.shape} (one row per token, d_model columns), got {delta.shape}.")
    if np.allclose(delta, expected, atol=1e-10):
        return right("switching a head off removes exactly its own term head_i W^O_i from the sum.")
    if np.allclose(delta, -expected, atol=1e-10):
        return wrong("Right size, opposite sign: the question asks for out minus the output without the head.")
    if np.allclose(delta, out, atol=1e-10):
        return wrong("That is the whole output. Which single term of the sum over heads disappears?")
    return wrong(f"Not yet. Which head's output, times which block of W^O? (The head is {OFF}.)")


def all_off_inputs() -> tuple[np.ndarray, MHAParams]:
    """Exercise 3's input x (4, 8) and params (d_model=8, h=2) with an output bias b_o."""
    x = np.random.default_rng(6).normal(size=(4, 8))
    params = init_params(8, 2, bias=True, seed=6)
    return x, dataclasses.replace(params, b_o=np.linspace(-1.0, 1.0, 8))


def check_all_off(answer: object) -> Feedback:
    """Exercise 3: the output of all_off_inputs() when every head is switched off (a (4, 8) or (8,) array)."""
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
