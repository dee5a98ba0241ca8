"""Checks for lesson 10's exercises: a parameter count, a prediction about the crossover, a memory diagnosis."""

from __future__ import annotations

import numpy as np

from .. import cost
from ..demos import complexity as cx
from ._base import Feedback, as_choices, as_label_set, as_number, right, wrong

# Exercise 2: the layer (d_model, h) before each change; each change as (d_model, h, whole block?).
D_MODEL, H = 512, 8
CHANGES = {"h": (512, 16, False), "d_model": (1024, 8, False), "ffn": (512, 8, True)}
FACTORS = {"about half": 0.5, "about the same": 1.0, "about double": 2.0, "about triple": 3.0}
# Exercise 3: one layer's attention weights at this length and head count, against this much GPU memory.
N_LONG, H_LONG, GPU_BYTES = 16_384, 16, 16e9
FIXES = {
    "a": ("halve h to 8 heads, d_model unchanged", {"h": 8}),
    "b": ("halve d_model, h unchanged (so d_k halves)", {}),
    "c": ("store the weights in float16 instead of float32", {"dtype": np.float16}),
    "d": ("double d_k to 128 by doubling d_model, h unchanged", {}),
}
OPTIONS = {letter: text for letter, (text, _) in FIXES.items()}


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


def crossover_factors() -> dict[str, float]:
    """Exercise 2, measured: n* after each change divided by n* of self-attention at d_model=512, h=8."""
    before = cx.crossover_n(D_MODEL, H)
    after = {
        name: (cx.block_crossover_n(d, h) if block else cx.crossover_n(d, h)) for name, (d, h, block) in CHANGES.items()
    }
    return {name: n_star / before for name, n_star in after.items()}


def _nearest(factor: float) -> str:
    """The FACTORS word closest to factor, on a log scale."""
    return min(FACTORS, key=lambda word: abs(np.log(factor / FACTORS[word])))


EXERCISE_2_HINTS = {
    "h": "More heads change only the softmax's 5·h·n² term. How big is it next to 4·n²·d_model?",
    "d_model": "n* = 8·d²/(4·d + 5·h): the top grows like d², the bottom about like d.",
    "ffn": "The feed-forward network works on each token alone: which group does its 16·n·d² join?",
}


def check_crossover_changes(answer: object) -> Feedback:
    """Exercise 2: predict how n* moves when h doubles, when d_model doubles, and when the FFN is counted too."""
    what = "a dict mapping 'h', 'd_model' and 'ffn' to 'about half', 'about the same', 'about double' or 'about triple'"
    chosen = as_choices(answer, tuple(CHANGES), tuple(FACTORS), what)
    if isinstance(chosen, Feedback):
        return chosen
    factors = crossover_factors()
    wrong_keys = [name for name in CHANGES if chosen[name] != _nearest(factors[name])]
    if not wrong_keys:
        shown = ", ".join(f"{name} × {f:.2f}" for name, f in factors.items())
        return right(
            f"measured: {shown}. The softmax is a small part of the n² work, so h barely moves n*; n* grows with "
            "d_model; and the FFN triples the n work of a block while adding no n² work."
        )
    return wrong(f"'{wrong_keys[0]}': {EXERCISE_2_HINTS[wrong_keys[0]]}")


def weight_bytes(letter: str | None = None) -> float:
    """Exercise 3: bytes of one layer's attention weights, as they are (None) or after fix `letter`."""
    settings = {"h": H_LONG, "dtype": np.float32} | (FIXES[letter][1] if letter else {})
    return float(cost.attention_memory_bytes(N_LONG, N_LONG, settings["h"], settings["dtype"]))


def check_memory_fixes(answer: object) -> Feedback:
    """Exercise 3: which changes make one layer's attention weights fit in GPU_BYTES?"""
    chosen = as_label_set(answer, tuple(FIXES), 'a set of letters, e.g. {"a", "d"}')
    if isinstance(chosen, Feedback):
        return chosen
    truth = {letter for letter in FIXES if weight_bytes(letter) <= GPU_BYTES}
    if chosen == truth:
        return right(
            "the weights are h·n² numbers of a few bytes: fewer heads or fewer bytes per number help, while the "
            "head width d_k (and d_model with it) never enters. Only a kernel that never stores the n × n maps "
            "(the FlashAttention remark in section 6) escapes the n² itself."
        )
    if chosen - truth:
        return wrong("One of your choices does not change h·n²·(bytes per number). Does d_model or d_k appear in it?")
    return wrong("A fix is missing: which of h, n and the bytes per number can you change here?")
