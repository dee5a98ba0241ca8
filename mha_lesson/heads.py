"""Splitting d_model into h heads of width d_k and merging them back (steps 2 and 4)."""

from __future__ import annotations

import numpy as np

from ._checks import as_real_array, check_heads


def split_heads(x: np.ndarray, h: int) -> np.ndarray:
    """(..., n, d_model) -> (..., h, n, d_k): head i gets columns i*d_k:(i+1)*d_k; a view, no copy.

    Values are moved, not computed with: NaN in gives NaN out, in the same place.
    """
    x = as_real_array("x", x)
    if x.ndim < 2 or x.shape[-1] == 0:
        raise ValueError(f"x: expected shape (..., n, d_model) with d_model >= 1, got {x.shape}")
    d_k = check_heads(x.shape[-1], h)
    # Reshape alone would give (..., n, h, d_k); the heads axis must then move in front of n,
    # otherwise "head" i would be a slab of tokens instead of a slab of features.
    return x.reshape(*x.shape[:-1], h, d_k).swapaxes(-3, -2)  # (..., h, n, d_k)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """(..., h, n, d_k) -> (..., n, h*d_k): concatenate the heads side by side along features.

    Values are moved, not computed with: NaN in gives NaN out, in the same place.
    """
    x = as_real_array("x", x)
    if x.ndim < 3:
        raise ValueError(f"x: expected shape (..., h, n, d_k), got {x.shape}")
    h, n, d_k = x.shape[-3:]
    return x.swapaxes(-3, -2).reshape(*x.shape[:-3], n, h * d_k)  # (..., n, h*d_k)
