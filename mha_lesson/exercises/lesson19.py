"""Checks for lesson 19's exercises (attention in today's models): predict a sink logit, choose d_c for a memory
budget (design), and write one step of the delta rule (code)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..linear_attention import linear_attention
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


# Exercise 3 (code): one step of the delta rule, S <- S + β (v - S k) kᵀ, with S (d_v, d_k), k (d_k,), v (d_v,).
# The check runs the learner's step over a short sequence and compares every read S_t q_t with mha.linear_attention.
DELTA = {"n": 12, "d_k": 4, "d_v": 3, "seed": 19}


def delta_case() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """q, k (n, d_k) with unit keys, v (n, d_v), beta (n,) in (0, 1): the sequence the check replays."""
    rng = np.random.default_rng(DELTA["seed"])
    q, k = rng.normal(size=(2, DELTA["n"], DELTA["d_k"]))
    k /= np.linalg.norm(k, axis=-1, keepdims=True)  # the delta rule expects unit keys
    v = rng.normal(size=(DELTA["n"], DELTA["d_v"]))
    beta = rng.uniform(0.2, 0.9, size=DELTA["n"])
    return q, k, v, beta


class ReturnedNone(TypeError):
    """The learner's step returned None (the skeleton's `...`): no state to check."""


def run_steps(step: Callable, q: np.ndarray, k: np.ndarray, v: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Reads S_t q_t (n, d_v) with S_t = step(S_{t-1}, k_t, v_t, β_t), S_0 = 0; passes copies (in-place edits ok)."""
    state = np.zeros((v.shape[-1], k.shape[-1]))
    reads = []
    for t in range(q.shape[0]):
        result = step(state.copy(), k[t].copy(), v[t].copy(), float(beta[t]))
        if result is None:
            raise ReturnedNone("the function returned None")
        state = np.asarray(result, dtype=float)
        if state.shape != (v.shape[-1], k.shape[-1]):
            raise ValueError(f"state: expected shape (d_v, d_k) = {(v.shape[-1], k.shape[-1])}, got {state.shape}")
        reads.append(state @ q[t])
    return np.array(reads)


# Typical slips, each with the hint it earns: (name, step, hint).
SLIPS: tuple[tuple[str, Callable, str], ...] = (
    (
        "additive",
        lambda S, k, v, b: S + b * np.outer(v, k),
        "That only adds β v kᵀ, the additive rule: first take away what S already returns for k (S k), "
        "so the new value replaces the old one.",
    ),
    (
        "no beta",
        lambda S, k, v, b: S + np.outer(v - S @ k, k),
        "Right direction, full step: scale the correction by β_t (the writing strength).",
    ),
    (
        "sign",
        lambda S, k, v, b: S - b * np.outer(v - S @ k, k),
        "The correction must move S k towards v: add β (v − S k) kᵀ; subtracting it pushes the read away.",
    ),
)


def check_delta_step(fn: object) -> Feedback:
    """Exercise 3: fn(S, k, v, beta) -> S + β (v - S k) kᵀ, checked against mha.linear_attention(..., beta=beta)."""
    if fn is None:
        return wrong("Replace None with your function, e.g. delta_step (the name, without calling it).")
    if not callable(fn):
        return wrong(f"Expected a function taking (S, k, v, beta), got {type(fn).__name__!r}.")
    q, k, v, beta = delta_case()
    try:
        with np.errstate(all="ignore"):
            got = run_steps(fn, q, k, v, beta)
    except ReturnedNone:
        return wrong("Your function returned None: return the new state, an array of shape (d_v, d_k).")
    except Exception as exc:  # a learner's function may fail in any way: report it, do not raise
        shape_hint = " v kᵀ is np.outer(v, k), of shape (d_v, d_k)." if "shape" in str(exc) else ""
        return wrong(f"It raised {type(exc).__name__}: {exc}.{shape_hint}")
    want = linear_attention(q, k, v, beta=beta)
    if np.allclose(got, want, atol=1e-9):
        return right(
            f"all {DELTA['n']} reads match mha.linear_attention(q, k, v, beta=beta). With β = 1 and a unit key, "
            "the step makes S k = v exactly: the old value under k is overwritten."
        )
    for _, slip, hint in SLIPS:
        if np.allclose(got, run_steps(slip, q, k, v, beta), atol=1e-9):
            return wrong(hint)
    gap = float(np.nanmax(np.abs(got - want))) if np.isfinite(got).any() else float("nan")
    return wrong(
        f"The reads differ from mha.linear_attention(q, k, v, beta=beta) by up to {gap:.3g}: "
        "compute the read S k, the error v − S k, then add β times np.outer(error, k)."
    )
