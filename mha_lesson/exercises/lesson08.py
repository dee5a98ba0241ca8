"""Checks for lesson 8's exercises: a parameter count, a crossover length, an attention-memory size."""

from __future__ import annotations

import numpy as np

from .. import cost
from ..demos import complexity as cx
from ._base import Feedback, as_number, right, wrong


def check_param_count(answer: object) -> Feedback:
    """Exercise 1: learned numbers of one MHA layer with d_model=1280, h=20 (GPT-2 large), no biases."""
    value = as_number(answer, "the number of parameters, a whole number")
    if isinstance(value, Feedback):
        return value
    d, h = 1280, 20
    if value == cost.param_count(d, h):
        return right("4·d_model² does not depend on h: 20 heads of 64 features cost the same as 1 head of 1280.")
    if value == cost.param_count(d, h, bias=True):
        return wrong("That count includes the biases; this layer has none.")
    if value == 3 * d * d:
        return wrong("You counted W^Q, W^K and W^V; W^O is learned too.")
    if value == cost.param_count(d, h, split=False):
        return wrong("That is the naive design where every head is full width; here each head gets d_k = d_model/h.")
    if value == 4 * d * (d // h):
        return wrong("That is one head's share; the layer has h of them.")
    return wrong("Count the four (d_model, d_model) matrices W^Q, W^K, W^V, W^O.")


def check_crossover(answer: object) -> Feedback:
    """Exercise 2: crossover length n* for self-attention with d_model=2048, h=16, to the nearest token."""
    value = as_number(answer, "the crossover length n*, in tokens")
    if isinstance(value, Feedback):
        return value
    d, h = 2048, 16
    n_star = cx.crossover_n(d, h)
    if abs(value - n_star) <= 1:
        return right(f"n* = 8·d²/(4·d + 5·h) ≈ {n_star:.1f}: just under 2·d_model, because the softmax adds h·n² work.")
    if abs(value - 2 * d) <= 1:
        return wrong("Close: that leaves out the softmax's 5·h·n² operations, which count as n² work too.")
    if abs(value - d) <= 1:
        return wrong("The linear parts are 8·n·d², the quadratic ones about 4·n²·d: set them equal and solve for n.")
    return wrong(
        "Write the n parts (projections + output) and the n² parts (scores, softmax, weighted sum), "
        "set them equal and solve for n."
    )


def check_memory_bytes(answer: object) -> Feedback:
    """Exercise 3: bytes of one layer's attention weights for n=4096, h=16, float16, batch 1."""
    value = as_number(answer, "the number of bytes")
    if isinstance(value, Feedback):
        return value
    n, h = 4096, 16
    correct = cost.attention_memory_bytes(n, n, h, np.float16)
    if value == correct:
        return right("h·n² numbers of 2 bytes each: halving the float width halves it, doubling n quadruples it.")
    if value == cost.attention_memory_bytes(n, n, h, np.float32):
        return wrong("That is float32; float16 stores each weight in 2 bytes.")
    if value == correct // h:
        return wrong("That is one head; every head keeps its own n × n weight matrix.")
    if value == correct // 2:
        return wrong("That is the number of weights; how many bytes does each float16 take?")
    if value == h * n * 2:
        return wrong("Every query has a weight for every key: n × n per head, not n.")
    return wrong("Count the weights first (per head an n × n matrix), then multiply by the bytes per number.")
