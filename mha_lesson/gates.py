"""Gated attention: each head's output multiplied, feature by feature, by a sigmoid gate read from the query's token.

Without a gate, W^V and W^O act on the heads one after the other with only the (linear) weighted sum between them,
so each head's W_i^V W_i^O is one low-rank linear map (lesson 1). Qiu et al. (2025, "Gated Attention for Large
Language Models") put sigmoid(x W^gate) between them: a non-linearity that depends on the query's token, and that
can close (≈ 0) when the head has nothing to add, instead of parking the weight on a sink token. Qwen3-Next uses it.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from ._blas import one_blas_thread
from ._checks import DEFAULT_MAX_BYTES, as_float_array, check_finite, check_memory
from .cost import flop_count
from .multihead import SMALL_WORK_FLOPS, _check_inputs, _project, attention_heads, check_qk_norm
from .norms import QKNorm
from .projections import MHAParams


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + e^-x), elementwise, without overflow for large |x|: +-inf give 1 and 0, NaN in gives NaN out."""
    x = as_float_array("x", x, 0)
    # e^-|x| <= 1 never overflows; for x < 0, sigmoid(x) = e^x / (1 + e^x) = e^-|x| / (1 + e^-|x|).
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0, e) / (1.0 + e)


def _check_gate(w_gate: object, b_gate: object, d_model: int) -> tuple[np.ndarray, np.ndarray | None]:
    w_gate = as_float_array("w_gate", w_gate, 2)
    if w_gate.shape != (d_model, d_model):
        raise ValueError(f"w_gate: expected shape (d_model, h*d_k) = {(d_model, d_model)}, got {w_gate.shape}")
    check_finite("w_gate", w_gate)
    if b_gate is not None:
        b_gate = as_float_array("b_gate", b_gate)
        if b_gate.shape != (d_model,):
            raise ValueError(f"b_gate: expected shape (h*d_k,) = ({d_model},), got {b_gate.shape}")
        check_finite("b_gate", b_gate)
    return w_gate, b_gate


def gated_multi_head_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    params: MHAParams,
    w_gate: np.ndarray,
    b_gate: np.ndarray | None = None,
    mask: np.ndarray | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    qk_norm: QKNorm | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """multi_head_attention with (heads concatenated) * sigmoid(q @ w_gate + b_gate) before W^O: -> (out, weights).

    Arguments and results as multi_head_attention; w_gate is (d_model, h*d_k) and b_gate (h*d_k,) or None, so
    the gate (..., n_q, h*d_k) gives every feature of every head its own factor in (0, 1) (Qiu et al.'s
    elementwise, head-specific gate), computed from the query's input q.
    """
    q, k, v, lead, mask = _check_inputs(q, k, v, params, mask)
    w_gate, b_gate = _check_gate(w_gate, b_gate, params.d_model)
    check_qk_norm(qk_norm, params)
    n_q, n_kv = q.shape[-2], k.shape[-2]
    dtype = np.result_type(q, k, v, params.dtype)
    check_memory("q, k", (*lead, params.h, n_q, n_kv), dtype, max_bytes)
    flops = math.prod(lead) * flop_count(n_q, n_kv, params.d_model, params.h)["total"] if n_q and n_kv else 0
    with one_blas_thread() if flops < SMALL_WORK_FLOPS else contextlib.nullcontext():
        concat, weights = attention_heads(q, k, v, params, mask, lead, dtype, True, qk_norm)  # (..., n_q, h*d_k)
        gate = sigmoid(_project(q, w_gate, b_gate))  # (..., n_q, h*d_k), one factor per head feature
        return _project(concat * gate, params.w_o, params.b_o), weights
