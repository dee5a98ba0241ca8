"""Rotary position embedding (RoPE): positions enter as rotations of q and k, so scores see only offsets.

Pairs of features are rotated by an angle proportional to the token's position m, each pair at its own
frequency. Since rotations compose, rope(q)_m · rope(k)_n = q · R(n - m) k: the score depends on the
offset n - m alone, never on m and n apart, and the rotation keeps every vector's length.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_finite_array, as_float_array, check_finite, check_number, check_positive_int, check_size


def rope_angles(positions: np.ndarray, d_k: int, base: float = 10000.0) -> np.ndarray:
    """(..., n) positions -> (..., n, d_k/2) angles position * base^(-2j/d_k) for pairs j = 0..d_k/2-1."""
    positions = as_finite_array("positions", positions, 0)
    d_k = check_positive_int("d_k", d_k)
    if d_k % 2:
        raise ValueError(f"d_k: expected an even number (features are rotated in pairs), got {d_k}")
    base = check_number("base", base, low=0.0)
    check_size("d_k", "the angles", (*positions.shape, d_k // 2), np.float64)
    # The first pair turns fastest (one radian per token), the last slowest: like the sinusoidal encoding's
    # frequencies, which RoPE reuses.
    inv_freq = base ** (-np.arange(0, d_k, 2) / d_k)  # (d_k/2,)
    return positions.astype(np.float64, copy=False)[..., None] * inv_freq


def rope(x: np.ndarray, positions: np.ndarray | None = None, base: float = 10000.0) -> np.ndarray:
    """Rotate x (..., n, d_k) by position: feature j pairs with feature j + d_k/2 and turns by rope_angles.

    This is the half-split pairing of GPT-NeoX and of Llama in Hugging Face transformers (their rotate_half),
    not the interleaved pairs (2j, 2j+1) of the RoFormer paper; both give the same scores up to a fixed
    permutation of the features. positions broadcasts to (..., n); None means 0, 1, ..., n-1.
    """
    x = as_float_array("x", x, 2)
    check_finite("x", x)
    n, d_k = x.shape[-2:]
    if d_k % 2 or d_k == 0:
        raise ValueError(
            f"x: expected a positive even last dimension d_k (features are rotated in pairs), got {x.shape}"
        )
    base = check_number("base", base, low=0.0)
    if positions is None:
        positions = np.arange(n)
    positions = as_float_array("positions", positions)
    check_finite("positions", positions)
    try:
        np.broadcast_shapes(positions.shape, x.shape[:-1])
    except ValueError:
        raise ValueError(
            f"positions: expected a shape that broadcasts to {x.shape[:-1]}, got {positions.shape}"
        ) from None
    angles = rope_angles(positions, d_k, base)  # (..., n, d_k/2)
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    first, second = x[..., : d_k // 2], x[..., d_k // 2 :]  # (..., n, d_k/2) each: the two halves of every pair
    # The 2-D rotation of (first, second) by each angle.
    return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)  # (..., n, d_k)
