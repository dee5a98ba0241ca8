"""The learned projections W^Q, W^K, W^V, W^O and their per-head slices (steps 2 and 5)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

import numpy as np

from ._checks import (
    as_float_array,
    check_bool,
    check_finite,
    check_float_dtype,
    check_heads,
    check_kv_heads,
    check_nonnegative_int,
    check_positive_int,
    check_size,
    is_int,
)

_WEIGHTS = ("w_q", "w_k", "w_v", "w_o")
_BIASES = ("b_q", "b_k", "b_v", "b_o")


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class MHAParams:
    """Weights of one multi-head attention layer, applied as x @ w (the Q W^Q convention).

    w_q, w_o are (d_model, d_model) and w_k, w_v (d_model, h_kv*d_k); biases match their weight's columns or are None.
    Head i owns columns i*d_k:(i+1)*d_k of w_q and the same rows of w_o. With h_kv = h (the default) it
    also owns those columns of w_k, w_v. With fewer key/value heads (grouped-query attention; h_kv = 1 is
    multi-query attention) query head i reads key/value head i // (h / h_kv), as PyTorch's
    scaled_dot_product_attention(enable_gqa=True) does: heads in a group share K and V, not Q.
    """

    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    w_o: np.ndarray
    h: int
    h_kv: int | None = None  # None: h, one key/value head per query head
    b_q: np.ndarray | None = None
    b_k: np.ndarray | None = None
    b_v: np.ndarray | None = None
    b_o: np.ndarray | None = None

    def __post_init__(self) -> None:
        w_q = as_float_array("w_q", self.w_q, 2)
        if w_q.ndim != 2 or w_q.shape[0] != w_q.shape[1]:
            raise ValueError(f"w_q: expected a square (d_model, d_model) matrix, got {w_q.shape}")
        d = w_q.shape[0]
        d_k = check_heads(d, self.h)
        object.__setattr__(self, "h_kv", self.h if self.h_kv is None else check_kv_heads(self.h, self.h_kv))
        for name in _WEIGHTS + _BIASES:
            a = getattr(self, name)
            if a is None and name in _WEIGHTS:  # only a bias may be left out: a layer has all four weights
                raise ValueError(
                    f"{name}: expected a (d_model, {'h_kv*d_k' if name[-1] in 'kv' else 'd_model'}) matrix, got None"
                )
            if a is None:  # a bias left out
                continue
            # K and V have h_kv*d_k columns (d_model unless grouped), Q and the output d_model.
            cols, width = (self.h_kv * d_k, "h_kv*d_k") if name[-1] in "kv" else (d, "d_model")
            is_weight = name in _WEIGHTS
            a = as_float_array(name, a, 2 if is_weight else 1)
            shape = (d, cols) if is_weight else (cols,)
            if a.shape != shape:
                expected = f"(d_model, {width})" if is_weight else f"({width},)"
                raise ValueError(f"{name}: expected shape {shape} = {expected}, got {a.shape}")
            check_finite(name, a)
            object.__setattr__(self, name, a)

    @property
    def d_model(self) -> int:
        """Model width: rows (and columns) of every weight matrix."""
        return self.w_q.shape[0]

    @property
    def d_k(self) -> int:
        """Per-head width d_k = d_v = d_model / h."""
        return self.d_model // self.h

    @property
    def group_size(self) -> int:
        """Query heads per key/value head: h / h_kv (1 for plain multi-head attention)."""
        return self.h // self.h_kv

    @property
    def dtype(self) -> np.dtype:
        """Common dtype of the weights."""
        return np.result_type(*(getattr(self, n) for n in _WEIGHTS))

    def _cols(self, i: int) -> slice:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.h:
            raise ValueError(f"i: expected a head index in [0, {self.h}), got {i!r}")
        return slice(i * self.d_k, (i + 1) * self.d_k)

    def w_q_head(self, i: int) -> np.ndarray:
        """W_i^Q: (d_model, d_k), columns i*d_k:(i+1)*d_k of w_q."""
        return self.w_q[:, self._cols(i)]

    def _kv_cols(self, i: int) -> slice:
        """Columns of w_k, w_v that query head i reads: those of key/value head j = i // group_size."""
        j = self._cols(i).start // self.d_k // self.group_size  # _cols checks that i is a head index
        return slice(j * self.d_k, (j + 1) * self.d_k)

    def w_k_head(self, i: int) -> np.ndarray:
        """W_i^K: (d_model, d_k), columns j*d_k:(j+1)*d_k of w_k, j = i // group_size (j = i when h_kv = h)."""
        return self.w_k[:, self._kv_cols(i)]

    def w_v_head(self, i: int) -> np.ndarray:
        """W_i^V: (d_model, d_k), columns j*d_k:(j+1)*d_k of w_v, j = i // group_size (j = i when h_kv = h)."""
        return self.w_v[:, self._kv_cols(i)]

    def w_o_head(self, i: int) -> np.ndarray:
        """W_i^O: (d_k, d_model), rows i*d_k:(i+1)*d_k of w_o (the block that reads head i)."""
        return self.w_o[self._cols(i), :]

    def b_head(self, name: str, i: int) -> np.ndarray | None:
        """Head i's slice (d_k,) of bias b_q, b_k or b_v, or None when there is no bias."""
        if name not in _BIASES[:3]:
            raise ValueError(f"name: expected one of {_BIASES[:3]}, got {name!r}")
        b = getattr(self, name)
        cols = self._cols(i) if name == "b_q" else self._kv_cols(i)
        return None if b is None else b[cols]

    @property
    def has_bias(self) -> bool:
        """True when any of the four biases is set."""
        return any(getattr(self, n) is not None for n in _BIASES)

    def arrays(self) -> dict[str, np.ndarray]:
        """Every parameter array by name (biases only when set)."""
        names = _WEIGHTS + _BIASES
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}

    def astype(self, dtype: np.dtype | type) -> MHAParams:
        """A copy with every array cast to dtype, a floating-point one (an integer dtype would zero every weight)."""
        dtype = check_float_dtype("dtype", dtype)
        return dataclasses.replace(self, **{n: a.astype(dtype) for n, a in self.arrays().items()})

    def head_indices(self, heads: object, name: str = "heads") -> list[int]:
        """heads as a list of head indices in [0, h), or ValueError naming the argument."""
        if isinstance(heads, (str, bytes, dict)) or not isinstance(heads, Iterable):
            raise ValueError(f"{name}: expected an iterable of head indices in [0, {self.h}), got {heads!r}")
        heads = list(heads)
        bad = [i for i in heads if not is_int(i) or not 0 <= i < self.h]
        if bad:
            raise ValueError(f"{name}: expected head indices in [0, {self.h}), got {bad[0]!r}")
        return [int(i) for i in heads]

    def without_heads(self, heads: Iterable[int]) -> MHAParams:
        """A copy in which the listed heads are switched off: their rows of w_o are zero."""
        heads = self.head_indices(heads)
        w_o = self.w_o.copy()
        for i in heads:
            # Zeroing head i's block of W^O removes exactly head i's term from sum_i head_i W_i^O.
            w_o[self._cols(i), :] = 0.0
        return dataclasses.replace(self, w_o=w_o)


def init_params(
    d_model: int,
    h: int,
    *,
    h_kv: int | None = None,
    bias: bool = False,
    seed: int = 0,
    dtype: np.dtype | type = np.float64,
) -> MHAParams:
    """Xavier/Glorot-uniform weights, zero biases when bias=True; fixed by seed.

    w_k, w_v are (d_model, h_kv*d_k), the others (d_model, d_model); h_kv=None means h (plain multi-head).
    """
    check_positive_int("d_model", d_model)
    d_k = check_heads(d_model, h)
    h_kv = h if h_kv is None else check_kv_heads(h, h_kv)
    bias = check_bool("bias", bias)
    seed = check_nonnegative_int("seed", seed)
    dtype = check_float_dtype("dtype", dtype)
    # The draws are float64 before the cast to dtype: refuse before the first of the four matrices exists.
    check_size("d_model", "the four weight matrices", (d_model, 2 * d_model + 2 * h_kv * d_k), np.float64)
    rng = np.random.default_rng(seed)
    columns = dict(zip(_WEIGHTS, (d_model, h_kv * d_k, h_kv * d_k, d_model), strict=True))
    weights = {}
    for name, cols in columns.items():
        # Glorot uniform: U(-a, a) with a = sqrt(6 / (fan_in + fan_out)) keeps activations' variance steady.
        a = math.sqrt(6.0 / (d_model + cols))
        weights[name] = rng.uniform(-a, a, size=(d_model, cols)).astype(dtype)
    # PyTorch's nn.MultiheadAttention also starts its biases at zero.
    biases = {b: np.zeros(c, dtype=dtype) for b, c in zip(_BIASES, columns.values(), strict=True)} if bias else {}
    return MHAParams(h=h, h_kv=h_kv, **weights, **biases)
