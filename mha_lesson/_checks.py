"""Input checks shared by the core: every public function fails early with a ValueError that names the argument."""

from __future__ import annotations

import math

import numpy as np

# Attention weights are the one array that grows as n^2; refuse anything larger than this by default.
DEFAULT_MAX_BYTES = 4 * 2**30


def type_name(value: object) -> str:
    """The name of value's type, as a message shows what arrived: NoneType, str, dict, ndarray."""
    return type(value).__name__


def as_array(name: str, x: object) -> np.ndarray:
    """Return np.asarray(x), or raise ValueError naming the argument when x is no array at all (None, a dict, ...)."""
    if x is None or isinstance(x, (dict, set, frozenset)):
        raise ValueError(f"{name}: expected an array of numbers, got {type_name(x)}")
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as exc:  # ragged nested lists, objects numpy cannot read as an array
        raise ValueError(
            f"{name}: expected an array of numbers, got {type_name(x)} that numpy cannot read ({exc})"
        ) from None
    # A broadcast view (np.broadcast_to) holds one copy of its data whatever its shape; anything computed from it
    # has the full size. Refuse here, before the first such computation would exhaust memory.
    if arr.nbytes > DEFAULT_MAX_BYTES:
        raise ValueError(
            f"{name}: expected an array of at most {DEFAULT_MAX_BYTES / 2**30:.0f} GiB, got shape {arr.shape} "
            f"({arr.nbytes / 2**30:.1f} GiB of {arr.dtype}), too large to compute on"
        )
    return arr


def as_real_array(name: str, x: object) -> np.ndarray:
    """Return x as an array of real numbers of any dtype (no copy, no cast), or raise ValueError."""
    arr = as_array(name, x)
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name}: expected an array of real numbers, got dtype {arr.dtype}")
    return arr


def as_float_array(name: str, x: object, min_ndim: int = 1) -> np.ndarray:
    """Return x as a floating-point array of at least min_ndim dimensions, or raise ValueError."""
    arr = as_array(name, x)
    if not np.issubdtype(arr.dtype, np.floating):
        if np.issubdtype(arr.dtype, np.number) and not np.issubdtype(arr.dtype, np.complexfloating):
            arr = arr.astype(np.float64)
        else:
            raise ValueError(f"{name}: expected a real floating-point array, got dtype {arr.dtype}")
    if arr.ndim < min_ndim:
        raise ValueError(f"{name}: expected at least {min_ndim} dimensions, got shape {arr.shape}")
    return arr


def as_finite_array(name: str, x: object, min_ndim: int = 1) -> np.ndarray:
    """as_float_array, then check_finite: for the functions whose result NaN or inf would make meaningless."""
    arr = as_float_array(name, x, min_ndim)
    check_finite(name, arr)
    return arr


def as_int_array(name: str, x: object, ndim: int | None = None) -> np.ndarray:
    """Return x as an integer array (of exactly ndim dimensions when given), or raise ValueError."""
    arr = as_array(name, x)
    if not np.issubdtype(arr.dtype, np.integer) or (ndim is not None and arr.ndim != ndim):
        shape = "an array" if ndim is None else f"a {ndim}-D array"
        raise ValueError(f"{name}: expected {shape} of integers, got shape {arr.shape} dtype {arr.dtype}")
    return arr


def check_finite(name: str, arr: np.ndarray) -> None:
    """Raise ValueError if arr holds NaN or +-inf."""
    if not np.isfinite(arr).all():
        bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name}: expected finite values, got {bad} NaN or infinite entries")


def is_int(value: object) -> bool:
    """True for a Python or numpy integer that is not a bool (True would otherwise count as 1)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_positive_int(name: str, value: object) -> int:
    """Return value as an int if it is a positive integer, else raise ValueError."""
    if not is_int(value) or value < 1:
        raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    return int(value)


def check_nonnegative_int(name: str, value: object) -> int:
    """Return value as an int if it is an integer >= 0 (a seed, an offset), else raise ValueError."""
    if not is_int(value) or value < 0:
        raise ValueError(f"{name}: expected a non-negative integer, got {value!r}")
    return int(value)


def check_bool(name: str, value: object) -> bool:
    """Return value if it is True or False (numpy's too), else raise ValueError: 'no' and None are not flags."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}: expected True or False, got {value!r}")
    return bool(value)


def check_number(name: str, value: object, *, low: float = -math.inf, strict: bool = True, what: str = "") -> float:
    """Return value as a float if it is a finite real number above low (or >= low when strict=False), else raise.

    what replaces "a finite number > low" in the message (say, "a positive distance").
    """
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
    if not ok or not math.isfinite(value) or (value <= low if strict else value < low):
        bound = "" if low == -math.inf else f" {'>' if strict else '>='} {low:g}"
        raise ValueError(f"{name}: expected {what or 'a finite number' + bound}, got {value!r}")
    return float(value)


def as_dtype(name: str, dtype: object) -> np.dtype:
    """Return dtype as a numpy dtype of numbers, or raise ValueError naming it (None would silently mean float64)."""
    try:
        dt = np.dtype(dtype) if dtype is not None else None
    except TypeError:
        dt = None
    if dt is None or not np.issubdtype(dt, np.number):
        raise ValueError(f"{name}: expected a numeric dtype such as np.float32, got {dtype!r}")
    return dt


def check_float_dtype(name: str, dtype: object) -> np.dtype:
    """Return dtype as a numpy dtype if it is a floating-point one, else raise ValueError naming it."""
    dt = as_dtype(name, dtype)
    if not np.issubdtype(dt, np.floating):
        # An integer dtype would silently truncate every weight in (-1, 1) to 0.
        raise ValueError(f"{name}: expected a floating-point dtype, got {dtype!r}")
    return dt


def check_max_bytes(max_bytes: object) -> float:
    """Return max_bytes if it is a positive number (inf allowed: no limit), else raise: NaN would disable the check."""
    ok = isinstance(max_bytes, (int, float, np.integer, np.floating)) and not isinstance(max_bytes, (bool, np.bool_))
    if not ok or math.isnan(max_bytes) or max_bytes <= 0:
        raise ValueError(f"max_bytes: expected a positive number of bytes, got {max_bytes!r}")
    return max_bytes


def _near_divisors(n: int, near: int, wanted: int = 6) -> list[int | str]:
    """Up to `wanted` divisors of n closest to near (with 1 and n), found without listing all of n's divisors."""
    if n <= 10**5:  # small enough to list every divisor, as the lessons' widgets do
        found = [i for i in range(1, n + 1) if n % i == 0]
        return found if len(found) <= 12 else [*found[:6], "...", *found[-3:]]
    # Look at most 10**4 numbers either side of near: a few microseconds, whatever the size of n.
    found = {1, n} | {c for c in range(max(1, near - 10**4), min(n, near + 10**4) + 1) if n % c == 0}
    return sorted(sorted(found, key=lambda c: abs(c - near))[:wanted])


def check_heads(d_model: int, h: int) -> int:
    """Return d_k = d_model // h, or raise ValueError when h does not divide d_model."""
    h = check_positive_int("h", h)
    d_model = check_positive_int("d_model", d_model)
    if d_model % h:
        raise ValueError(
            f"h: expected a divisor of d_model={d_model} so that d_k = d_model / h is whole "
            f"(for example {', '.join(map(str, _near_divisors(d_model, h)))}), got h={h}"
        )
    return d_model // h


def check_kv_heads(h: int, h_kv: int) -> int:
    """Return h_kv, the number of key/value heads, or raise ValueError when it does not divide h."""
    h_kv = check_positive_int("h_kv", h_kv)
    if h % h_kv:
        raise ValueError(
            f"h_kv: expected a divisor of h={h}, so that each key/value head serves a whole group of "
            f"query heads (one of {', '.join(map(str, _near_divisors(h, h_kv)))}), got h_kv={h_kv}"
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


def check_size(
    name: str, what: str, shape: tuple[int, ...], dtype: object, max_bytes: float = DEFAULT_MAX_BYTES
) -> None:
    """Raise ValueError, before allocating, if `what` of this shape and dtype would need more than max_bytes."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if nbytes > max_bytes:
        raise ValueError(
            f"{name}: {what} of shape {shape} would need {nbytes / 2**30:.2f} GiB, "
            f"expected at most max_bytes={max_bytes / 2**30:.2f} GiB"
        )


def check_memory(name: str, shape: tuple[int, ...], dtype: np.dtype, max_bytes: int) -> None:
    """Raise ValueError if attention weights of this shape and dtype would need more than max_bytes."""
    check_max_bytes(max_bytes)
    try:
        check_size(name, "the attention weights", shape, dtype, max_bytes)
    except ValueError as exc:
        raise ValueError(f"{exc}; use a shorter sequence, a smaller batch, or pass need_weights=False") from None
