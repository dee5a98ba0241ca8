"""Input checks shared by the core: every public function fails early with a ValueError that names the argument."""

from __future__ import annotations

import math

import numpy as np

# Attention weights are the one array that grows as n^2; refuse anything larger than this by default.
DEFAULT_MAX_BYTES = 4 * 2**30


def as_float_array(name: str, x: object, min_ndim: int = 1) -> np.ndarray:
    """Return x as a floating-point array of at least min_ndim dimensions, or raise ValueError."""
    arr = np.asarray(x)
    if not np.issubdtype(arr.dtype, np.floating):
        if np.issubdtype(arr.dtype, np.number) and not np.issubdtype(arr.dtype, np.complexfloating):
            arr = arr.astype(np.float64)
        else:
            raise ValueError(f"{name}: expected a real floating-point array, got dtype {arr.dtype}")
    if arr.ndim < min_ndim:
        raise ValueError(f"{name}: expected at least {min_ndim} dimensions, got shape {arr.shape}")
    return arr


def check_finite(name: str, arr: np.ndarray) -> None:
    """Raise ValueError if arr holds NaN or +-inf."""
    if not np.isfinite(arr).all():
        bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name}: expected finite values, got {bad} NaN or infinite entries")


def check_positive_int(name: str, value: object) -> int:
    """Return value as an int if it is a positive integer, else raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    return int(value)


def check_heads(d_model: int, h: int) -> int:
    """Return d_k = d_model // h, or raise ValueError when h does not divide d_model."""
    h = check_positive_int("h", h)
    d_model = check_positive_int("d_model", d_model)
    if d_model % h:
        divisors = [i for i in range(1, d_model + 1) if d_model % i == 0]
        shown = divisors if len(divisors) <= 12 else divisors[:6] + ["..."] + divisors[-3:]
        raise ValueError(
            f"h: expected a divisor of d_model={d_model} so that d_k = d_model / h is whole "
            f"(for example {', '.join(map(str, shown))}), got h={h}"
        )
    return d_model // h


def check_kv_heads(h: int, h_kv: int) -> int:
    """Return h_kv, the number of key/value heads, or raise ValueError when it does not divide h."""
    h_kv = check_positive_int("h_kv", h_kv)
    if h % h_kv:
        divisors = [i for i in range(1, h + 1) if h % i == 0]
        raise ValueError(
            f"h_kv: expected a divisor of h={h}, so that each key/value head serves a whole group of "
            f"query heads (one of {', '.join(map(str, divisors))}), got h_kv={h_kv}"
        )
    return h_kv


def check_mask(mask: object, target: tuple[int, ...]) -> np.ndarray:
    """Return mask as a boolean array broadcast (as a view) to target, or raise ValueError."""
    m = np.asarray(mask)
    if m.dtype != np.bool_:
        raise ValueError(f"mask: expected a boolean array (True = may attend), got dtype {m.dtype}")
    try:
        return np.broadcast_to(m, target)
    except ValueError:
        raise ValueError(
            f"mask: expected a shape that broadcasts to {target} (..., h, n_q, n_kv), got {m.shape}"
        ) from None


def check_memory(name: str, shape: tuple[int, ...], dtype: np.dtype, max_bytes: int) -> None:
    """Raise ValueError if an array of this shape and dtype would need more than max_bytes."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if nbytes > max_bytes:
        raise ValueError(
            f"{name}: the attention weights of shape {shape} would need {nbytes / 2**30:.2f} GiB, "
            f"expected at most max_bytes={max_bytes / 2**30:.2f} GiB; "
            "use a shorter sequence, a smaller batch, or pass need_weights=False"
        )
