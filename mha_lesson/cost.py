"""Closed-form costs of one multi-head attention layer: parameters, FLOPs, attention-weight and KV-cache memory.

Conventions: a multiply-add counts as 2 FLOPs, so (m, k) @ (k, n) costs 2*m*k*n. The softmax counts
5 operations per attention weight (scale by 1/sqrt(d_k), subtract the row max, exp, add to the row
sum, divide), a convention: an exp costs more than an add on real hardware.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_dtype, check_bool, check_heads, check_kv_heads, check_positive_int

SOFTMAX_OPS_PER_WEIGHT = 5
PARTS = ("projections", "scores", "softmax", "weighted_sum", "output_projection")


def param_count(d_model: int, h: int, bias: bool = False, *, split: bool = True, h_kv: int | None = None) -> int:
    """Learned numbers in one layer: 4*d_model^2 (+ 4*d_model biases); h-fold W's if split=False.

    Split heads: W^Q, W^K, W^V are h blocks of (d_model, d_k), together 3*d_model^2, and W^O is
    (d_model, d_model): 4*d_model^2 whatever h is. Naive full-width heads: each head has its own
    three (d_model, d_model) matrices and W^O reads h*d_model features: 4*h*d_model^2.
    With h_kv key/value heads (grouped-query attention; None means h) W^K and W^V keep only h_kv
    blocks: 2*d_model^2 + 2*d_model*h_kv*d_k.
    """
    bias = check_bool("bias", bias)
    if check_bool("split", split):
        d_k = check_heads(d_model, h)
    else:  # full-width heads never split d_model, so h need not divide it
        d_k = check_positive_int("d_model", d_model)
        check_positive_int("h", h)
    h_kv = h if h_kv is None else check_kv_heads(h, h_kv)
    width, kv_width = h * d_k, h_kv * d_k  # columns of W^Q (rows of W^O), columns of W^K and of W^V
    weights = 2 * d_model * width + 2 * d_model * kv_width
    biases = width + 2 * kv_width + d_model if bias else 0
    return weights + biases


def flop_count(n_q: int, n_kv: int, d_model: int, h: int, split: bool = True) -> dict[str, int]:
    """FLOPs of one forward pass for one sequence, by part, plus 'total'.

    projections        2*(n_q + 2*n_kv)*d_model*width   (Q from n_q rows, K and V from n_kv rows)
    scores             2*n_q*n_kv*d_k * h                (Q_i K_i^T for every head)
    softmax            5*h*n_q*n_kv                      (per attention weight, see module doc)
    weighted_sum       2*n_q*n_kv*d_v * h                (A_i V_i for every head)
    output_projection  2*n_q*width*d_model               (concat @ W^O)
    with d_k = d_v = d_model/h and width = d_model (split=True), or d_k = d_v = d_model and
    width = h*d_model (split=False, every head at full width).
    """
    check_positive_int("n_q", n_q)
    check_positive_int("n_kv", n_kv)
    split = check_bool("split", split)
    # Full-width heads need no divisibility, but h and d_model must still be positive integers.
    d_k = check_heads(d_model, h) if split else check_positive_int("d_model", d_model)
    check_positive_int("h", h)
    width = h * d_k
    parts = {
        "projections": 2 * (n_q + 2 * n_kv) * d_model * width,
        "scores": 2 * n_q * n_kv * d_k * h,
        "softmax": SOFTMAX_OPS_PER_WEIGHT * h * n_q * n_kv,
        "weighted_sum": 2 * n_q * n_kv * d_k * h,
        "output_projection": 2 * n_q * width * d_model,
    }
    parts["total"] = sum(parts.values())
    return parts


def attention_memory_bytes(n_q: int, n_kv: int, h: int, dtype: np.dtype | type = np.float32, batch: int = 1) -> int:
    """Bytes to hold the attention weights of one layer: batch * h * n_q * n_kv * itemsize."""
    for name, value in (("n_q", n_q), ("n_kv", n_kv), ("h", h), ("batch", batch)):
        check_positive_int(name, value)
    return batch * h * n_q * n_kv * as_dtype("dtype", dtype).itemsize


def kv_cache_bytes(layers: int, n: int, h_kv: int, d_k: int, dtype: np.dtype | type, batch: int = 1) -> int:
    """Bytes of a decoder's KV cache: 2 (K and V) * layers * n tokens * h_kv heads * d_k * itemsize * batch."""
    for name, value in (("layers", layers), ("n", n), ("h_kv", h_kv), ("d_k", d_k), ("batch", batch)):
        check_positive_int(name, value)
    return 2 * layers * n * h_kv * d_k * as_dtype("dtype", dtype).itemsize * batch
