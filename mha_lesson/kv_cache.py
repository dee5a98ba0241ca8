"""Decoding one token at a time with a KV cache: each new token's K and V are projected once and kept.

Causal self-attention lets token t see tokens 0..t only, so the keys and values of earlier tokens never
change once computed. Generating token after token, a decoder therefore projects just the new token and
appends its K and V to a cache; one cache per attention layer. Its memory: cost.kv_cache_bytes.
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import as_float_array, check_finite, check_nonnegative_int, check_positive_int
from .attention import attend
from .heads import split_heads
from .multihead import _project
from .projections import MHAParams


class KVCache:
    """The keys and values of the tokens one attention layer keeps: (..., h_kv, n, d_k) each.

    KVCache() keeps every token seen. The arrays grow by doubling, so appending a token copies the cache
    only now and then (amortised: a constant per token), like a Python list.
    KVCache(window, sinks) keeps the first `sinks` tokens and the last `window` (StreamingLLM's cache; with
    sinks=0, Mistral's rolling buffer): once full, a new token overwrites the oldest windowed one in place, so
    its memory stays at sinks + window tokens however long the sequence. decode_step with it equals
    multi_head_attention with the mask "key j visible to query i iff j <= i and (j < sinks or i - j < window)".
    """

    def __init__(self, window: int | None = None, sinks: int = 0) -> None:
        if window is not None:
            check_positive_int("window", window)
        check_nonnegative_int("sinks", sinks)
        self.window = None if window is None else int(window)
        self.sinks = int(sinks)
        self._k: np.ndarray | None = None  # (..., h_kv, capacity, d_k); the first n slots are used
        self._v: np.ndarray | None = None
        self._pos: np.ndarray = np.empty(0, dtype=np.int64)  # (capacity,): the token position in each slot
        self.n = 0  # tokens kept
        self.seen = 0  # tokens appended so far: the position of the next token

    def __len__(self) -> int:
        return self.n

    @property
    def keys(self) -> np.ndarray | None:
        """(..., h_kv, n, d_k) keys of the kept tokens (a view) in slot order, or None when empty."""
        return None if self._k is None else self._k[..., : self.n, :]

    @property
    def values(self) -> np.ndarray | None:
        """(..., h_kv, n, d_k) values of the kept tokens (a view) in slot order, or None when empty."""
        return None if self._v is None else self._v[..., : self.n, :]

    @property
    def positions(self) -> np.ndarray:
        """(n,) absolute position of the token in each slot: once a window wraps, slot order is not token order."""
        return self._pos[: self.n]

    @property
    def nbytes(self) -> int:
        """Bytes held by the key and value arrays (their whole capacity, used or not)."""
        return 0 if self._k is None else self._k.nbytes + self._v.nbytes

    def _capacity_limit(self) -> float:
        return math.inf if self.window is None else self.sinks + self.window

    def append(self, k_t: np.ndarray, v_t: np.ndarray) -> None:
        """Add one token's key and value, each (..., h_kv, d_k); a full window drops its oldest token."""
        k_t = as_float_array("k_t", k_t, 2)
        v_t = as_float_array("v_t", v_t, 2)
        if v_t.shape != k_t.shape:
            raise ValueError(f"v_t: expected the shape of k_t {k_t.shape} (..., h_kv, d_k), got {v_t.shape}")
        check_finite("k_t", k_t)
        check_finite("v_t", v_t)
        if self._k is None:
            start = int(min(16, self._capacity_limit()))
            self._k, self._v = (np.empty((*a.shape[:-1], start, a.shape[-1]), a.dtype) for a in (k_t, v_t))
            self._pos = np.empty(start, dtype=np.int64)
        elif k_t.shape != self._k.shape[:-2] + self._k.shape[-1:]:
            expected = self._k.shape[:-2] + self._k.shape[-1:]
            raise ValueError(f"k_t: expected shape {expected} (..., h_kv, d_k) like the cached keys, got {k_t.shape}")
        capacity = self._k.shape[-2]
        if self.n < self._capacity_limit():
            if self.n == capacity:  # full but allowed to grow: double the capacity, up to sinks + window
                grow = int(min(capacity, self._capacity_limit() - capacity))
                self._k, self._v = (
                    np.concatenate([a, np.empty((*a.shape[:-2], grow, a.shape[-1]), a.dtype)], axis=-2)
                    for a in (self._k, self._v)
                )
                self._pos = np.concatenate([self._pos, np.empty(grow, dtype=np.int64)])
            slot = self.n
            self.n += 1
        else:
            # Rolling buffer: the windowed slots sinks..sinks+window-1 are reused in turn, so the token
            # written here is the one `window` tokens older; the first `sinks` slots are never overwritten.
            slot = self.sinks + (self.seen - self.sinks) % self.window
        self._k[..., slot, :] = k_t
        self._v[..., slot, :] = v_t
        self._pos[slot] = self.seen
        self.seen += 1


def decode_step(x_t: np.ndarray, params: MHAParams, cache: KVCache) -> np.ndarray:
    """One new token x_t (d_model,) or (batch, d_model) -> its attention output, same shape; appends to cache.

    Only x_t is projected: its query attends over the cached keys and values of every earlier token and
    its own. Feeding a sequence token by token gives causal multi_head_attention's output row by row; with a
    windowed cache, that of the window-and-sinks mask (see KVCache). The cached keys' slot order does not matter:
    the softmax treats keys as a set.
    """
    if not isinstance(params, MHAParams):
        raise ValueError(f"params: expected an MHAParams, got {type(params).__name__}")
    if not isinstance(cache, KVCache):
        raise ValueError(f"cache: expected a KVCache, got {type(cache).__name__}")
    h, h_kv, d_k = params.h, params.h_kv, params.d_k
    if len(cache) and (cache.keys.shape[-3], cache.keys.shape[-1]) != (h_kv, d_k):
        # Checked before x_t: a token of the new params' width is right for them, but the cache is not.
        raise ValueError(
            f"params: expected h_kv={cache.keys.shape[-3]} key/value heads of d_k={cache.keys.shape[-1]} like the "
            f"params that filled the cache (start a new KVCache for other params), got h_kv={h_kv}, d_k={d_k}"
        )
    x_t = as_float_array("x_t", x_t)
    if x_t.ndim > 2 or x_t.shape[-1] != params.d_model:
        raise ValueError(f"x_t: expected shape (d_model={params.d_model},) or (batch, d_model), got {x_t.shape}")
    check_finite("x_t", x_t)
    if len(cache) and cache.keys.shape[:-3] != x_t.shape[:-1]:
        raise ValueError(f"x_t: expected batch shape {cache.keys.shape[:-3]} like the cached tokens, got {x_t.shape}")
    row = x_t[..., None, :]  # (..., 1, d_model): the new token as a one-row sequence
    q_t = _project(row, params.w_q, params.b_q) * (1.0 / math.sqrt(d_k))  # (..., 1, d_model)
    k_t = split_heads(_project(row, params.w_k, params.b_k), h_kv)[..., 0, :]  # (..., h_kv, d_k)
    v_t = split_heads(_project(row, params.w_v, params.b_v), h_kv)[..., 0, :]  # (..., h_kv, d_k)
    cache.append(k_t, v_t)
    # Query head i reads key/value head i // group_size: group the query heads by their key/value head,
    # so each group's queries are the rows of one (group_size, d_k) matrix against that head's cache.
    q_groups = q_t.reshape(*x_t.shape[:-1], h_kv, params.group_size, d_k)  # (..., h_kv, group_size, d_k)
    heads, _ = attend(q_groups, cache.keys, cache.values, None, need_weights=False)  # (..., h_kv, group_size, d_k)
    # Head i sits in group i // group_size, row i % group_size: in memory order, heads 0, 1, ..., h-1.
    concat = heads.reshape(*x_t.shape[:-1], h * d_k)  # (..., d_model)
    return _project(concat, params.w_o, params.b_o)  # (..., d_model)
