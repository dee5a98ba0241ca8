"""Tiled attention with an online softmax (the arithmetic of FlashAttention): exact, without the n_q x n_kv scores.

The keys are read in blocks. For each query row the loop keeps three running numbers: the largest score
seen so far m, the sum of exp(score - m) so far, and the weighted sum of values so far. When a block brings
a larger score, both sums were taken with the old shift m_old and are multiplied by exp(m_old - m_new)
(see rescale) before the block's own terms are added. At the end, output = weighted sum / row sum.
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import as_array, check_bool, check_mask, check_positive_int
from .attention import check_qkv

DEFAULT_BLOCK = 512


def _check_rescale(row_sum: object, out: object, m_old: object, m_new: object) -> None:
    """Raise ValueError naming the argument unless rescale's four arrays are floats of matching shapes."""
    arrays = {"row_sum": row_sum, "out": out, "m_old": m_old, "m_new": m_new}
    for name, a in arrays.items():
        a = as_array(name, a)
        if not np.issubdtype(a.dtype, np.floating) or a.ndim < 2:
            # An integer running sum would be truncated by the caller's next in-place update.
            raise ValueError(f"{name}: expected a floating-point array (..., n_q, ...), got {a.dtype} {a.shape}")
        # m_old = -inf before any key is seen (its factor is exp(-inf) = 0); nothing else may be non-finite.
        if np.isnan(a).any() or np.isposinf(a).any() or (name != "m_old" and np.isneginf(a).any()):
            raise ValueError(f"{name}: expected finite values{' or -inf' * (name == 'm_old')}, got NaN or inf")
        arrays[name] = a
    column = arrays["row_sum"].shape
    if column[-1] != 1:
        raise ValueError(f"row_sum: expected shape (..., n_q, 1), got {column}")
    for name in ("m_old", "m_new"):
        if arrays[name].shape != column:
            raise ValueError(f"{name}: expected row_sum's shape (..., n_q, 1) {column}, got {arrays[name].shape}")
    if arrays["out"].shape[:-1] != column[:-1]:
        raise ValueError(f"out: expected shape (..., n_q, d_v) with row_sum's {column[:-1]}, got {arrays['out'].shape}")


def rescale(
    row_sum: np.ndarray, out: np.ndarray, m_old: np.ndarray, m_new: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """tiled_attention's step: sums taken with shift m_old, moved onto m_new, both times exp(m_old - m_new).

    row_sum (..., n_q, 1) and out (..., n_q, d_v); m_old and m_new (..., n_q, 1). Term by term,
    exp(s - m_old) * exp(m_old - m_new) = exp(s - m_new): the rescaled sums are exactly those the new
    shift would have given. The factor is at most 1, since the running max only grows.
    """
    _check_rescale(row_sum, out, m_old, m_new)
    factor = np.exp(m_old - m_new)  # (..., n_q, 1)
    return row_sum * factor, out * factor


def tiled_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    block: int = DEFAULT_BLOCK,
    causal: bool = False,
    mask: np.ndarray | None = None,
) -> np.ndarray:
    """softmax(q kᵀ / √d_k) v, key block by key block: q (..., n_q, d_k), k (..., n_kv, d_k), v (..., n_kv, d_v).

    Returns (..., n_q, d_v), equal to scaled_dot_product_attention(q, k, v, mask)[0], while holding at
    most one (..., n_q, block) slice of scores. mask is boolean, True = may attend, broadcastable to
    (..., n_q, n_kv). causal=True lets query i see keys 0..i, as causal_mask does, also when n_q != n_kv
    (aligned at the first key, like PyTorch's is_causal); with a mask too, a key must pass both.
    A query with no allowed key gives a zero output.
    """
    q, k, v, lead = check_qkv(q, k, v)
    block = check_positive_int("block", block)
    causal = check_bool("causal", causal)
    n_q, n_kv, d_v = q.shape[-2], k.shape[-2], v.shape[-1]
    if mask is not None:
        mask = check_mask(mask, (*lead, n_q, n_kv))  # a broadcast view: no n_q x n_kv copy
    # Broadcast k (a view) so every block of scores carries all leading dimensions, v's and the mask's too.
    k = np.broadcast_to(k, (*lead, n_kv, k.shape[-1]))  # (..., n_kv, d_k)
    dtype = np.result_type(q, k, v)
    q = (q * (1.0 / math.sqrt(q.shape[-1]))).astype(dtype, copy=False)  # a Python float keeps float32
    m = np.full((*lead, n_q, 1), -np.inf, dtype)  # running row max of the scores
    row_sum = np.zeros((*lead, n_q, 1), dtype)  # running sum of exp(score - m)
    out = np.zeros((*lead, n_q, d_v), dtype)  # running sum of exp(score - m) * value
    # Under the causal mask no query reaches a key at or beyond n_q: skip those blocks altogether.
    stop_at = min(n_kv, n_q) if causal else n_kv
    for start in range(0, stop_at, block):
        stop = min(start + block, stop_at)
        s = q @ k[..., start:stop, :].swapaxes(-1, -2)  # (..., n_q, stop - start): the only block of scores
        if causal:
            np.copyto(s, -np.inf, where=np.arange(start, stop) > np.arange(n_q)[:, None])  # key j > query i
        if mask is not None:
            np.copyto(s, -np.inf, where=~mask[..., start:stop])
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        # A row with no allowed key so far has m_new = -inf: shift it by 0, so its exp() is 0 and not NaN.
        shift = np.where(np.isneginf(m_new), 0.0, m_new)
        row_sum, out = rescale(row_sum, out, m, shift)
        s -= shift
        np.exp(s, out=s)  # s now holds the block's unnormalised weights exp(score - m_new)
        row_sum += s.sum(axis=-1, keepdims=True)
        out += s @ v[..., start:stop, :]
        m = m_new
        del s  # free this block's scores before the next block's exist: one block alive at a time
    row_sum[row_sum == 0] = 1.0  # a query with no allowed key: its out is all 0 and stays 0
    out /= row_sum
    return out
