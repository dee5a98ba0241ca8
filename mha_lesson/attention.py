"""Scaled dot-product attention, softmax and masks (step 3 of the derivation)."""

from __future__ import annotations

import math

import numpy as np

from ._checks import (
    DEFAULT_MAX_BYTES,
    as_array,
    as_float_array,
    as_int_array,
    check_finite,
    check_mask,
    check_memory,
    check_positive_int,
    check_size,
    is_int,
)


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Softmax along axis, same shape as x; -inf entries get weight 0 and an all -inf slice gets all 0."""
    x = as_float_array("x", x)
    if np.isnan(x).any() or np.isposinf(x).any():
        raise ValueError("x: expected finite values or -inf (masked), got NaN or +inf")
    if not is_int(axis) or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis: expected an integer axis of x, in [-{x.ndim}, {x.ndim}), got {axis!r}")
    # Subtracting the max keeps exp() <= 1, so logits of 1e4 do not overflow to inf/inf = NaN.
    # initial=-inf: an empty slice (no keys at all) behaves like an all -inf one instead of crashing.
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0.0).astype(x.dtype, copy=False)
    e = np.exp(x - m)
    total = e.sum(axis=axis, keepdims=True)
    # A slice that is entirely -inf sums to 0: leave its zeros instead of dividing 0 by 0.
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def causal_mask(n: int) -> np.ndarray:
    """(n, n) boolean mask, True on and below the diagonal: query i may attend to keys 0..i."""
    n = check_positive_int("n", n)
    check_size("n", "the mask", (n, n), bool)
    return np.tri(n, dtype=bool)


def sliding_window_mask(n: int, window: int) -> np.ndarray:
    """(n, n) boolean causal sliding window: query i may attend to keys i-window+1..i (n*window pairs, not n^2)."""
    check_positive_int("n", n)
    check_positive_int("window", window)
    check_size("n", "the (n, n) offsets behind the mask", (n, n), np.intp)
    offset = np.arange(n)[:, None] - np.arange(n)  # (n, n): i - j, how far back key j lies from query i
    return (offset >= 0) & (offset < window)


def receptive_field(mask: np.ndarray, layers: int) -> np.ndarray:
    """(n, n) boolean: which input tokens reach position i after `layers` layers that each attend by mask (n, n)."""
    mask = as_array("mask", mask)
    if mask.dtype != np.bool_ or mask.ndim != 2 or mask.shape[0] != mask.shape[1]:
        raise ValueError(f"mask: expected a square boolean (n, n) array, got shape {mask.shape} dtype {mask.dtype}")
    layers = check_positive_int("layers", layers)
    check_size("mask", "the matrix powers (three n x n at once)", (3, *mask.shape), bool)
    # Boolean matrix power by squaring: i reaches token t after a + b layers if i reaches some j after a
    # layers and j reaches t after b. log2(layers) products, so layers = 10**9 costs 30 of them, not 10**9.
    reach, power = None, mask
    while True:
        if layers & 1:
            reach = power if reach is None else power @ reach
        layers >>= 1
        if not layers:
            return reach
        power = power @ power


def padding_mask(lengths: np.ndarray | list[int], n: int) -> np.ndarray:
    """(batch, 1, 1, n) boolean mask, True for the first lengths[b] keys of sequence b."""
    n = check_positive_int("n", n)
    lengths = as_int_array("lengths", lengths, 1)
    check_size("n", "the mask", (len(lengths), n), bool)
    if (lengths < 0).any() or (lengths > n).any():
        raise ValueError(f"lengths: expected values in [0, n={n}], got {lengths.tolist()}")
    # Shape (batch, 1, 1, n) broadcasts over heads and queries: padded keys are hidden from all.
    return (np.arange(n) < lengths[:, None])[:, None, None, :]


# exp(60) is about 1e26: a row of up to 1e12 such terms still sums well below float32's 3e38.
SAFE_EXP_ARGUMENT = 60.0


def attend(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None, need_weights: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    """Unchecked core: q (..., n_q, d_k) already scaled by 1/sqrt(d_k) -> ((..., n_q, d_v), weights)."""
    s = q @ k.swapaxes(-1, -2)  # (..., n_q, n_kv)
    if mask is not None:
        np.copyto(s, -np.inf, where=~mask)
    m = s.max(axis=-1, keepdims=True, initial=-np.inf)  # initial: n_kv = 0 acts as a fully masked row
    # A fully masked row has max -inf; shifting by 0 instead keeps its exp() at 0 rather than NaN.
    m[~np.isfinite(m)] = 0.0
    # Softmax is shift-invariant: the shift only keeps exp() from overflowing (or every weight of a row
    # from underflowing), so skip its pass over all n_q*n_kv scores when no row max is large.
    if m.size and np.abs(m).max() > SAFE_EXP_ARGUMENT:
        s -= m
    np.exp(s, out=s)
    total = s.sum(axis=-1, keepdims=True)
    total[total == 0] = 1.0  # fully masked rows: numerator is all 0, so the output stays 0
    if need_weights:
        s /= total
        return s @ v, s
    # Without weights, divide the (n_q, d_v) result instead of the (n_q, n_kv) weights: n_kv/d_v fewer divides.
    out = s @ v
    out /= total
    return out, None


def check_qkv(q: object, k: object, v: object) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...]]:
    """Validate q (..., n_q, d_k), k (..., n_kv, d_k), v (..., n_kv, d_v); return them and the broadcast batch shape."""
    q = as_float_array("q", q, 2)
    k = as_float_array("k", k, 2)
    v = as_float_array("v", v, 2)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"k: expected last dimension d_k={q.shape[-1]} to match q, got shape {k.shape}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"v: expected n_kv={k.shape[-2]} rows to match k, got shape {v.shape}")
    for name, arr in (("q", q), ("k", k), ("v", v)):
        check_finite(name, arr)
    try:
        lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"k: expected leading dimensions that broadcast with q {q.shape[:-2]}, "
            f"got k {k.shape[:-2]} and v {v.shape[:-2]}"
        ) from None
    return q, k, v, lead


def scaled_dot_product_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: np.ndarray | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> tuple[np.ndarray, np.ndarray]:
    """softmax(q kᵀ / √d_k) v: q (..., n_q, d_k), k (..., n_kv, d_k), v (..., n_kv, d_v) -> (out, weights).

    out is (..., n_q, d_v) and weights (..., n_q, n_kv); leading dimensions broadcast.
    mask is boolean, True = may attend, broadcastable to (..., n_q, n_kv). A query whose keys are
    all masked gets all-zero weights and a zero output (PyTorch returns NaN for such a row).
    """
    q, k, v, lead = check_qkv(q, k, v)
    target = (*lead, q.shape[-2], k.shape[-2])
    dtype = np.result_type(q, k, v)
    check_memory("q, k", target, dtype, max_bytes)
    if mask is not None:
        mask = check_mask(mask, target)
    # Broadcast k (a view, no copy) so the scores carry every leading dimension, v's included:
    # otherwise a mask or a v with more batch dimensions than q and k would not fit the scores.
    k = np.broadcast_to(k, (*lead, *k.shape[-2:]))  # (..., n_kv, d_k)
    # A Python float keeps float32 inputs float32 (a numpy float64 scalar would promote them).
    scale = 1.0 / math.sqrt(q.shape[-1])
    out, weights = attend((q * scale).astype(dtype, copy=False), k, v, mask, need_weights=True)
    return out, weights
