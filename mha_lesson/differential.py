"""Differential attention (Ye et al., "Differential Transformer", ICLR 2025): the difference of two softmaxes.

Softmax weights are never negative, so a head cannot subtract what it does not want, and every key keeps a
little weight ("attention noise"). Two attention maps from two query/key pairs, the second scaled by λ and
subtracted, cancel the weight both give to the same irrelevant keys, like a differential amplifier.
The paper also normalises each head's output (GroupNorm) and scales it by 1 - λ_init: those steps act on the
output and are left to the caller.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, check_finite
from .attention import scaled_dot_product_attention


def differential_attention(
    q1: np.ndarray,
    k1: np.ndarray,
    q2: np.ndarray,
    k2: np.ndarray,
    v: np.ndarray,
    lam: float | np.ndarray,
    mask: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(softmax(q1 k1ᵀ/√d) - λ softmax(q2 k2ᵀ/√d)) v -> (out (..., n_q, d_v), weights (..., n_q, n_kv)).

    q1, q2 are (..., n_q, d), k1, k2 (..., n_kv, d), v (..., n_kv, d_v); lam is a number or an array that
    broadcasts to (..., 1, 1), for example (h, 1, 1) for one λ per head. weights may be negative, and each row
    sums to 1 - λ (0 where every key is masked).
    """
    q1, q2 = as_float_array("q1", q1, 2), as_float_array("q2", q2, 2)
    k1, k2 = as_float_array("k1", k1, 2), as_float_array("k2", k2, 2)
    if q2.shape != q1.shape:
        raise ValueError(f"q2: expected the shape of q1 {q1.shape}, got {q2.shape}")
    if k2.shape != k1.shape:
        raise ValueError(f"k2: expected the shape of k1 {k1.shape}, got {k2.shape}")
    for name, a in (("q1", q1), ("k1", k1), ("q2", q2), ("k2", k2)):
        check_finite(name, a)
    lam = as_float_array("lam", lam, 0)
    check_finite("lam", lam)
    if lam.size != 1 and (lam.ndim < 2 or lam.shape[-2:] != (1, 1)):
        raise ValueError(f"lam: expected a number or a shape (..., 1, 1), one λ per row group, got {lam.shape}")
    _, w1 = scaled_dot_product_attention(q1, k1, v, mask)
    _, w2 = scaled_dot_product_attention(q2, k2, v, mask)
    try:
        weights = w1 - lam * w2  # (..., n_q, n_kv)
    except ValueError:
        raise ValueError(f"lam: expected a shape broadcasting to {w1.shape[:-2]} + (1, 1), got {lam.shape}") from None
    return weights @ v, weights
