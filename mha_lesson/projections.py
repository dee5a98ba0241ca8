"""The learned projections W^Q, W^K, W^V, W^O and their per-head slices (steps 2 and 5)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

import numpy as np

from ._checks import as_float_array, check_finite, check_heads, check_positive_int

_WEIGHTS = ("w_q", "w_k", "w_v", "w_o")
_BIASES = ("b_q", "b_k", "b_v", "b_o")


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class MHAParams:
    """Weights of one multi-head attention layer, applied as x @ w (the Q W^Q convention).

    w_q, w_k, w_v, w_o are (d_model, d_model); b_q, b_k, b_v, b_o are (d_model,) or None.
    Head i owns columns i*d_k:(i+1)*d_k of w_q, w_k, w_v and the same rows of w_o.
    """

    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    w_o: np.ndarray
    h: int
    b_q: np.ndarray | None = None
    b_k: np.ndarray | None = None
    b_v: np.ndarray | None = None
    b_o: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in _WEIGHTS:
            w = as_float_array(name, getattr(self, name), 2)
            if w.ndim != 2 or w.shape[0] != w.shape[1]:
                raise ValueError(f"{name}: expected a square (d_model, d_model) matrix, got {w.shape}")
            if w.shape != np.shape(self.w_q):
                raise ValueError(f"{name}: expected shape {np.shape(self.w_q)} like w_q, got {w.shape}")
            check_finite(name, w)
            object.__setattr__(self, name, w)
        check_heads(self.d_model, self.h)
        for name in _BIASES:
            b = getattr(self, name)
            if b is None:
                continue
            b = as_float_array(name, b)
            if b.shape != (self.d_model,):
                raise ValueError(f"{name}: expected shape ({self.d_model},), got {b.shape}")
            check_finite(name, b)
            object.__setattr__(self, name, b)

    @property
    def d_model(self) -> int:
        """Model width: rows (and columns) of every weight matrix."""
        return self.w_q.shape[0]

    @property
    def d_k(self) -> int:
        """Per-head width d_k = d_v = d_model / h."""
        return self.d_model // self.h

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

    def w_k_head(self, i: int) -> np.ndarray:
        """W_i^K: (d_model, d_k), columns i*d_k:(i+1)*d_k of w_k."""
        return self.w_k[:, self._cols(i)]

    def w_v_head(self, i: int) -> np.ndarray:
        """W_i^V: (d_model, d_k), columns i*d_k:(i+1)*d_k of w_v."""
        return self.w_v[:, self._cols(i)]

    def w_o_head(self, i: int) -> np.ndarray:
        """W_i^O: (d_k, d_model), rows i*d_k:(i+1)*d_k of w_o (the block that reads head i)."""
        return self.w_o[self._cols(i), :]

    def b_head(self, name: str, i: int) -> np.ndarray | None:
        """Head i's slice (d_k,) of bias b_q, b_k or b_v, or None when there is no bias."""
        if name not in _BIASES[:3]:
            raise ValueError(f"name: expected one of {_BIASES[:3]}, got {name!r}")
        b = getattr(self, name)
        return None if b is None else b[self._cols(i)]

    @property
    def has_bias(self) -> bool:
        """True when any of the four biases is set."""
        return any(getattr(self, n) is not None for n in _BIASES)

    def arrays(self) -> dict[str, np.ndarray]:
        """Every parameter array by name (biases only when set)."""
        names = _WEIGHTS + _BIASES
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}

    def astype(self, dtype: np.dtype | type) -> MHAParams:
        """A copy with every array cast to dtype."""
        return dataclasses.replace(self, **{n: a.astype(dtype) for n, a in self.arrays().items()})

    def without_heads(self, heads: Iterable[int]) -> MHAParams:
        """A copy in which the listed heads are switched off: their rows of w_o are zero."""
        w_o = self.w_o.copy()
        for i in heads:
            # Zeroing head i's block of W^O removes exactly head i's term from sum_i head_i W_i^O.
            w_o[self._cols(i), :] = 0.0
        return dataclasses.replace(self, w_o=w_o)


def init_params(
    d_model: int, h: int, *, bias: bool = False, seed: int = 0, dtype: np.dtype | type = np.float64
) -> MHAParams:
    """Xavier/Glorot-uniform weights (d_model, d_model), zero biases when bias=True; fixed by seed."""
    check_positive_int("d_model", d_model)
    check_heads(d_model, h)
    if not np.issubdtype(dtype, np.floating):
        # An integer dtype would silently truncate every weight in (-1, 1) to 0.
        raise ValueError(f"dtype: expected a floating-point dtype, got {np.dtype(dtype)}")
    rng = np.random.default_rng(seed)
    # Glorot uniform: U(-a, a) with a = sqrt(6 / (fan_in + fan_out)) keeps activations' variance steady.
    a = math.sqrt(6.0 / (d_model + d_model))
    weights = {n: rng.uniform(-a, a, size=(d_model, d_model)).astype(dtype) for n in _WEIGHTS}
    # PyTorch's nn.MultiheadAttention also starts its biases at zero.
    biases = {n: np.zeros(d_model, dtype=dtype) for n in _BIASES} if bias else {}
    return MHAParams(h=h, **weights, **biases)
