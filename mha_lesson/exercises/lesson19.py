"""Checks for lesson 19's exercises (attention in today's models): predict a sink logit, choose d_c for a memory
budget (design), and size the cache of a local/global stack."""

from __future__ import annotations

import math

from ._base import Feedback, as_number, as_whole_number, right, wrong

# Exercise 1: one head, 7 keys whose scaled scores are all 0. Which sink logit leaves the row a total weight of 0.5?
SINK_KEYS = 7


def check_sink_logit(answer: object) -> Feedback:
    """Exercise 1: the sink logit s with 7 / (7 + e^s) = 0.5, that is s = ln 7."""
    value = as_number(answer, "a sink logit")
    if isinstance(value, Feedback):
        return value
    correct = math.log(SINK_KEYS)
    if math.isclose(value, correct, abs_tol=0.01):
        return right(f"s = ln 7 = {correct:.3f}: e^s = 7 equals the keys' e^0 + ... + e^0, so the sink takes half.")
    if math.isclose(value, SINK_KEYS, abs_tol=0.01):
        return wrong("7 is e^s, the sink's share in the denominator; the logit itself is its logarithm.")
    if math.isclose(value, 0.0, abs_tol=0.01):
        return wrong("With s = 0 the sink counts like one more key: the row keeps 7/8. It must count like all seven.")
    if math.isclose(value, math.log(0.5), abs_tol=0.01) or math.isclose(value, -correct, abs_tol=0.01):
        return wrong("A negative logit gives the sink less than one key's share; it must match all seven together.")
    return wrong("Write the row's total as 7 e^0 / (7 e^0 + e^s) and set it to 0.5.")


# Exercise 2 (design): a 48-layer MLA model (d_rope = 64) must hold 16 sequences of 32,768 tokens in bfloat16
# within 40 GiB of KV cache. The largest latent width d_c, a multiple of 64, that fits?
BUDGET = {"layers": 48, "sequences": 16, "n": 32768, "bytes": 2, "gib": 40, "d_rope": 64, "multiple": 64}


def budget_numbers() -> float:
    """Numbers per token and layer the budget allows: 40 GiB / (layers · sequences · n · 2 bytes)."""
    b = BUDGET
    return b["gib"] * 2**30 / (b["layers"] * b["sequences"] * b["n"] * b["bytes"])


def check_latent_width(answer: object) -> Feedback:
    """Exercise 2: the largest d_c (multiple of 64) with d_c + d_rope within the budget: 768."""
    value = as_whole_number(answer, "a latent width d_c")
    if isinstance(value, Feedback):
        return value
    allowed = budget_numbers()  # 853.3 numbers per token and layer
    m, rope = BUDGET["multiple"], BUDGET["d_rope"]
    correct = int((allowed - rope) // m * m)
    if value == correct:
        return right(
            f"{allowed:.0f} numbers per token and layer fit, of which 64 are the RoPE key: d_c = {correct}. "
            "A GQA cache of 8 heads of 128 would need 2,048 numbers: 2.4 times the budget."
        )
    if value % m:
        return wrong(f"The question asks for a multiple of {m}.")
    if value == int(allowed // m * m):
        return wrong("The cache also keeps the decoupled RoPE key (d_rope = 64 numbers) beside the latent.")
    if value + rope > allowed:
        return wrong("That does not fit: (d_c + d_rope) · layers · sequences · tokens · 2 bytes exceeds 40 GiB.")
    if value <= int((allowed / 2 - rope) // m * m) + m:
        return wrong("MLA caches one latent for keys and values together: do not count it twice.")
    return wrong("Fits, but a larger multiple of 64 fits too: divide 40 GiB by layers · sequences · tokens · 2 bytes.")


# Exercise 3: 48 layers, 40 of them local with a 4,096-token window, 8 global; one 131,072-token sequence. With
# every local layer's cache windowed, what share of the all-global KV cache is needed?
STACK = {"layers": 48, "local": 40, "window": 4096, "n": 131072}


def check_cache_share(answer: object) -> Feedback:
    """Exercise 3: (8 · n + 40 · window) / (48 · n) = 0.193."""
    value = as_number(answer, "a share between 0 and 1")
    if isinstance(value, Feedback):
        return value
    s = STACK
    correct = ((s["layers"] - s["local"]) * s["n"] + s["local"] * s["window"]) / (s["layers"] * s["n"])
    if value > 1.5 and math.isclose(value / 100, correct, abs_tol=0.005):
        return wrong("Give a share between 0 and 1, not a percentage.")
    if math.isclose(value, correct, abs_tol=0.005):
        return right(f"{correct:.3f}: the 8 global layers are now almost all of it ({8 / 48 / correct:.0%}).")
    if math.isclose(value, 1.0, abs_tol=0.005):
        return wrong("That is the bug: the exercise says the local layers' caches are windowed, so they stop growing.")
    if math.isclose(value, (s["layers"] - s["local"]) / s["layers"], abs_tol=0.005):
        return wrong("The local layers still keep their last 4,096 tokens each: add them.")
    return wrong("Count tokens kept: global layers keep all n, local layers keep the window; divide by 48 · n.")
