"""RMSNorm, and QK-norm: RMSNorm on every head's queries and keys before their dot products.

A score q·k grows with the lengths of q and k, so larger weights W^Q, W^K give larger scores and a
saturated softmax (lesson 4). RMSNorm rescales each vector to root-mean-square 1 (then by a learned
per-feature weight): after QK-norm a head's scores are at most √d_k times the weights' product,
whatever the scale of x or of W^Q and W^K. Qwen3, Gemma 3 and OLMo 2 do this.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ._checks import as_float_array, check_finite, check_heads, check_number, check_positive_int


def _check_eps(eps: object) -> float:
    return check_number("eps", eps, low=0, what="a positive finite number (1e-6 in most models)")


def _check_weight(name: str, weight: object, width: int) -> np.ndarray | None:
    if weight is None:
        return None
    weight = as_float_array(name, weight)
    if weight.shape != (width,):
        raise ValueError(f"{name}: expected shape ({width},), one scale per feature, got {weight.shape}")
    check_finite(name, weight)
    return weight


def rms_norm(x: np.ndarray, weight: np.ndarray | None = None, eps: float = 1e-6) -> np.ndarray:
    """x (..., d) -> x / sqrt(mean(x², last axis) + eps) * weight, same shape; weight (d,) or None for 1."""
    x = as_float_array("x", x)
    if not x.shape[-1]:
        raise ValueError(f"x: expected at least one feature on the last axis to normalise, got shape {x.shape}")
    check_finite("x", x)
    weight = _check_weight("weight", weight, x.shape[-1])
    eps = _check_eps(eps)
    # Unlike LayerNorm, no mean is subtracted: only the length of x is normalised, not its offset.
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps).astype(x.dtype, copy=False)
    return y if weight is None else y * weight.astype(x.dtype, copy=False)


@dataclasses.dataclass(frozen=True)
class QKNorm:
    """QK-norm's learned scales: q_weight and k_weight (d_k,), shared by all heads (None: all ones), and eps."""

    q_weight: np.ndarray | None = None
    k_weight: np.ndarray | None = None
    eps: float = 1e-6

    def __post_init__(self) -> None:
        # d_k is known only with the params (multihead.check_qk_norm checks the widths); the rest is checked here.
        for name in ("q_weight", "k_weight"):
            weight = getattr(self, name)
            if weight is not None:
                weight = as_float_array(name, weight)
                if weight.ndim != 1 or not weight.size:
                    raise ValueError(f"{name}: expected shape (d_k,), one scale per feature, got {weight.shape}")
                check_finite(name, weight)
                object.__setattr__(self, name, weight)
        _check_eps(self.eps)


def head_rms_norm(x: np.ndarray, h: int, weight: np.ndarray | None = None, eps: float = 1e-6) -> np.ndarray:
    """x (..., n, h*d_k) -> same shape: rms_norm over each head's d_k features (columns i*d_k:(i+1)*d_k)."""
    x = as_float_array("x", x, 2)
    h = check_positive_int("h", h)
    if not x.shape[-1]:
        raise ValueError(f"x: expected shape (..., n, h*d_k) with h*d_k >= 1, got {x.shape}")
    d_k = check_heads(x.shape[-1], h)
    per_head = x.reshape(*x.shape[:-1], h, d_k)  # (..., n, h, d_k): head i's features on the last axis
    return rms_norm(per_head, weight, eps).reshape(x.shape)  # (..., n, h*d_k)
