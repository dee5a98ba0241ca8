"""Checks for lesson 2's exercises (why reduce the dimension per head)."""

from __future__ import annotations

from ..cost import attention_memory_bytes, flop_count, param_count
from ._base import Feedback, as_number, right, wrong


def check_naive_params(answer: object) -> Feedback:
    """Exercise 1: parameters of 12 full-width heads at d_model = 768, no biases."""
    value = as_number(answer, "the number of learned weights (an integer)")
    if isinstance(value, Feedback):
        return value
    d, h = 768, 12
    if value == param_count(d, h, split=False):
        return right(f"each of the {h} heads owns three {d}x{d} matrices, and W^O reads {h}x{d} features.")
    if value == param_count(d, h):
        return wrong("That is the split design (d_k = d_model / h). Here every head is d_model wide.")
    if value == 3 * h * d * d:
        return wrong("W^Q, W^K, W^V are counted; the output projection W^O is missing. How many rows does it have?")
    if value == 3 * h * d * d + d * d:
        return wrong("Close: W^O multiplies the concatenation of all heads. How wide is that concatenation here?")
    return wrong("Count per head: three matrices of shape (d_model, d_k) with d_k = d_model. Then add W^O.")


def check_flop_ratio(answer: object) -> Feedback:
    """Exercise 2: total FLOPs of naive over split heads at d_model = 768, h = 12, n = 512, to two decimals."""
    value = as_number(answer, "a ratio such as 3.14")
    if isinstance(value, Feedback):
        return value
    d, h, n = 768, 12, 512  # BERT-base on 512 tokens
    ratio = flop_count(n, n, d, h, split=False)["total"] / flop_count(n, n, d, h)["total"]
    if abs(value - ratio) < 0.006:
        return right(f"{ratio:.4f}: just under h = {h}, because the softmax costs the same in both designs.")
    if value == h:
        return wrong("Close, but not exactly h. Is there a part whose cost the two designs share?")
    if abs(value - 1 / ratio) < 0.006:
        return wrong("That is split over naive; the question asks naive over split.")
    return wrong("Use mha.cost.flop_count twice (split=True and split=False) and divide the 'total' entries.")


def check_memory_bytes(answer: object) -> Feedback:
    """Exercise 3: bytes of float32 attention weights for one sequence, h = 12 heads, n = 512 tokens."""
    value = as_number(answer, "a number of bytes (an integer)")
    if isinstance(value, Feedback):
        return value
    expected = attention_memory_bytes(512, 512, 12)
    if value == expected:
        return right("h * n * n weights of 4 bytes, and the same for full-width heads: d_k never enters.")
    if value == attention_memory_bytes(512, 512, 1):
        return wrong("That is one head's map. Does every head keep its own?")
    if value == 2 * expected:
        return wrong("A float32 number takes 4 bytes, not 8.")
    if value == expected // 4:
        return wrong("That is the number of weights; the question asks for bytes.")
    return wrong(
        "Each head stores one weight per (query, key) pair. How many pairs, how many heads, how many bytes each?"
    )
