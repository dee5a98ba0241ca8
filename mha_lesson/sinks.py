"""Attention with a sink logit: a softmax that may give a row less than 1 in total, so a head can attend to nothing.

Softmax weights always sum to 1, so a query with nothing relevant to find must still put its weight somewhere
(MiniLM parks it on [SEP]). gpt-oss gives every head one learned logit s that joins each row of scores as an
extra column; after the softmax that column is dropped. The weight it took, e^s / (e^s + sum_j e^{score_j}), is
simply missing from the row, and the output shrinks towards zero by the same share. With s = 0 this is
softmax_1 ("softmax plus one"): a row of very negative scores gives an output near zero.
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import DEFAULT_MAX_BYTES, as_float_array, check_finite, check_mask, check_memory
from .attention import check_qkv


def attention_with_sink(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    sink: np.ndarray | float,
    mask: np.ndarray | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> tuple[np.ndarray, np.ndarray]:
    """softmax([q kᵀ/√d_k, sink]) without the sink column, times v: -> (out (..., n_q, d_v), weights (..., n_q, n_kv)).

    Shapes as scaled_dot_product_attention. sink broadcasts to (..., n_q, 1): one logit per head is an (h, 1, 1)
    array, a scalar is one logit for every row. It is compared with the *scaled* scores, as in gpt-oss's
    `sdpa` (openai/gpt-oss, gpt_oss/torch/model.py: `QK *= sm_scale`, then `torch.cat([QK, S], dim=-1)`,
    softmax, `W[..., :-1]`). Rows of weights sum to less than 1; a fully masked row puts all its weight on
    the sink, so its weights and output are zero.
    """
    q, k, v, lead = check_qkv(q, k, v)
    n_q, n_kv = q.shape[-2], k.shape[-2]
    target = (*lead, n_q, n_kv)
    dtype = np.result_type(q, k, v)
    check_memory("q, k", target, dtype, max_bytes)
    if mask is not None:
        mask = check_mask(mask, target)
    sink = as_float_array("sink", sink, 0)
    check_finite("sink", sink)
    try:
        sink = np.broadcast_to(sink, (*lead, n_q, 1)).astype(dtype, copy=False)
    except ValueError:
        raise ValueError(
            f"sink: expected a shape that broadcasts to (..., n_q, 1) = {(*lead, n_q, 1)}, "
            f"for example (h, 1, 1) for one logit per head, got {sink.shape}"
        ) from None

    scores = (q * (1.0 / math.sqrt(q.shape[-1]))).astype(dtype, copy=False) @ k.swapaxes(-1, -2)  # (..., n_q, n_kv)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    # The sink joins the row's max: exp() of every logit, the sink's included, stays <= 1 and cannot overflow.
    m = np.maximum(scores.max(axis=-1, keepdims=True, initial=-np.inf), sink)  # (..., n_q, 1), finite: sink is
    e = np.exp(scores - m)  # (..., n_q, n_kv); masked keys give exp(-inf) = 0
    # The sink's share is in the denominator only: its column would be dropped anyway.
    weights = e / (e.sum(axis=-1, keepdims=True) + np.exp(sink - m))
    return weights @ v, weights
