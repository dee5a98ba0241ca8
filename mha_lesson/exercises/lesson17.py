"""Checks for lesson 17's exercises: size a KV cache, choose h_kv for a memory budget, diagnose a tiled softmax."""

from __future__ import annotations

import math

import numpy as np

from .. import cost
from ..tiled import DEFAULT_BLOCK
from ._base import Feedback, as_number, as_whole_number, check_letter, right, wrong

# Exercise 1: a 40-layer model with d_model 5120 and 40 query heads (d_k 128) sharing 8 key/value heads,
# holding one 8,192-token sequence in bfloat16 (2 bytes per number).
CACHE_MODEL = {"layers": 40, "d_model": 5120, "h": 40, "h_kv": 8, "n": 8192, "bytes": 2}


def kv_cache_answer() -> int:
    """Exercise 1's bytes, from cost.kv_cache_bytes."""
    m = CACHE_MODEL
    return cost.kv_cache_bytes(m["layers"], m["n"], m["h_kv"], m["d_model"] // m["h"], np.float16)


def check_kv_cache_size(answer: object) -> Feedback:
    """Exercise 1: bytes of CACHE_MODEL's KV cache."""
    correct = kv_cache_answer()
    number = as_number(answer, "the number of bytes")
    if not isinstance(number, Feedback) and any(
        math.isclose(number, correct / unit, rel_tol=0.01) for unit in (2**30, 1e9)
    ):
        return wrong("Right size, wrong unit: give the answer in bytes.")
    value = as_whole_number(answer, "the number of bytes")
    if isinstance(value, Feedback):
        return value
    if value == correct:
        return right(
            f"{correct / 2**30:g} GiB: 2 (K and V) · layers · n · h_kv · d_k · 2 bytes. With all 40 heads keeping "
            "their own K and V it would be 5 times as much."
        )
    if value == correct * CACHE_MODEL["h"] // CACHE_MODEL["h_kv"]:
        return wrong("That counts all 40 heads; only the 8 key/value heads are cached, the queries are not.")
    if value == correct // 2:
        return wrong("Half the answer: count both arrays of each layer (keys and values) and 2 bytes per number.")
    if value == 2 * correct:
        return wrong("bfloat16 stores each number in 2 bytes, not 4.")
    if value == correct // CACHE_MODEL["layers"]:
        return wrong("That is one layer; every layer keeps its own keys and values.")
    return wrong("Multiply: 2 (K and V) × layers × tokens × key/value heads × d_k × bytes per number.")


# Exercise 2: a server holding 16 sequences of 8,192 tokens at once for a 32-layer model with 32 query heads
# of d_k 128, in float16, with 24 GiB left for the KV cache.
BUDGET = {"layers": 32, "h": 32, "d_k": 128, "n": 8192, "batch": 16, "gib": 24}


def budget_bytes(h_kv: int) -> int:
    """Exercise 2: the KV cache of BUDGET's model and batch with h_kv key/value heads."""
    b = BUDGET
    return cost.kv_cache_bytes(b["layers"], b["n"], h_kv, b["d_k"], np.float16, batch=b["batch"])


def best_h_kv() -> int:
    """Exercise 2's answer: the largest divisor of h whose cache fits the budget."""
    fits = [g for g in range(1, BUDGET["h"] + 1) if BUDGET["h"] % g == 0 and budget_bytes(g) <= BUDGET["gib"] * 2**30]
    return max(fits)


def check_h_kv_budget(answer: object) -> Feedback:
    """Exercise 2: the largest h_kv that divides h = 32 and keeps the cache within 24 GiB."""
    value = as_whole_number(answer, "a number of key/value heads")
    if isinstance(value, Feedback):
        return value
    if not 1 <= value <= BUDGET["h"]:
        return wrong(f"h_kv counts key/value heads: from 1 (multi-query) to h = {BUDGET['h']} (plain multi-head).")
    if BUDGET["h"] % value:
        return wrong(f"h_kv must divide h = {BUDGET['h']}: each key/value head serves a whole group of query heads.")
    need = budget_bytes(value) / 2**30
    best = best_h_kv()
    if value == best:
        return right(
            f"h_kv = {value} needs {need:g} GiB; the next divisor up would need "
            f"{budget_bytes(2 * value) / 2**30:g} GiB. Each key/value head costs the same, so the budget divided by "
            "one head's cost bounds h_kv."
        )
    if value > best:
        return wrong(f"h_kv = {value} needs {need:g} GiB, more than the {BUDGET['gib']} GiB budget.")
    return wrong(
        f"h_kv = {value} fits ({need:g} GiB), but a larger h_kv also fits, and more key/value heads keep more quality."
    )


# Exercise 3: an online softmax with one line missing.


def buggy_tiled(q: np.ndarray, k: np.ndarray, v: np.ndarray, block: int = DEFAULT_BLOCK) -> np.ndarray:
    """Tiled attention, q (n_q, d_k), k (n_kv, d_k), v (n_kv, d_v) -> (n_q, d_v), with one step forgotten."""
    q = np.asarray(q, dtype=float) / math.sqrt(q.shape[-1])
    m = np.full((len(q), 1), -np.inf)
    row_sum, out = np.zeros((len(q), 1)), np.zeros((len(q), v.shape[-1]))
    for start in range(0, len(k), block):
        s = q @ k[start : start + block].T  # (n_q, block)
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        row_sum *= np.exp(m - m_new)
        e = np.exp(s - m_new)
        row_sum += e.sum(axis=-1, keepdims=True)
        out += e @ v[start : start + block]
        m = m_new
    return out / row_sum


OPTIONS = {
    "a": "always, for every query row",
    "b": "only in query rows whose running max goes up in a later key block (a later block holds a larger score "
    "than every block before it)",
    "c": "only when n is not a multiple of the block size",
    "d": "only when the scores are large (above about 60), where exp() would overflow",
}


def check_diagnosis(answer: object) -> Feedback:
    """Exercise 3: when does buggy_tiled go wrong? One letter of OPTIONS."""
    hints = {
        "a": "Try keys whose largest score is in the first block: does it still differ from the standard version?",
        "c": "Try a block that divides n exactly, with the largest score in the last block.",
        "d": "Try small scores (q and k of size about 1) with the largest one in the last block.",
    }
    praise = (
        "out was summed with the old shift; when the max goes up it must be multiplied by exp(m_old - m_new) "
        "like row_sum. If the first block holds the row's max, every factor is 1 and the bug is invisible."
    )
    return check_letter(answer, OPTIONS, "b", praise, hints)
