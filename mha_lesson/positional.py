"""Sinusoidal positional encoding (Vaswani et al. 2017, section 3.5): telling attention where each token sits.

Attention by itself is blind to order: permute the tokens and every output row is permuted the same way.
Adding a position-dependent vector to each token's embedding gives the heads something to read.
"""

from __future__ import annotations

import numpy as np

from ._checks import check_float_dtype, check_number, check_positive_int, check_size


def sinusoidal_encoding(
    n: int, d_model: int, *, base: float = 10000.0, dtype: np.dtype | type = np.float64
) -> np.ndarray:
    """(n, d_model): PE[p, 2i] = sin(p * w_i), PE[p, 2i+1] = cos(p * w_i), w_i = base^(-2i/d_model).

    Column pair i is a clock hand turning at angular speed w_i (radians per position), from 1 for
    i = 0 down to nearly 1/base for the last pair: fast hands tell neighbours apart, slow hands tell
    far-apart positions apart. Because each pair is a rotation, PE[p + k] is PE[p] rotated by k*w_i
    in every pair, whatever p is: a fixed matrix maps any position to the one k steps away.
    """
    n = check_positive_int("n", n)
    d_model = check_positive_int("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"d_model: expected an even number (sin and cos come in pairs), got {d_model}")
    base = check_number("base", base, low=1.0)
    dtype = check_float_dtype("dtype", dtype)
    # The angles and their sines are float64 whatever dtype is: blame the larger of the two sizes.
    check_size("n" if n >= d_model else "d_model", "the encoding", (n, d_model), np.float64)
    speeds = base ** (-np.arange(0, d_model, 2) / d_model)  # (d_model/2,) radians per position
    angles = np.arange(n)[:, None] * speeds[None, :]  # (n, d_model/2)
    pe = np.empty((n, d_model), dtype=dtype)
    pe[:, 0::2] = np.sin(angles)  # even columns: sine of each hand's angle
    pe[:, 1::2] = np.cos(angles)  # odd columns: cosine of the same angle
    return pe
