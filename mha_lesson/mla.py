"""Multi-head latent attention (MLA, DeepSeek-V2 §2.1): cache one d_c-wide latent per token instead of keys and values.

Every token's input x_t is compressed to a latent c_t = x_t W^DKV (d_c numbers); head i's key and value are
up-projections of it, k_i = c W_i^UK and v_i = c W_i^UV. Since q_i·(c W_i^UK) = (q_i W_i^UKᵀ)·c, W^UK can be
folded into the query ("absorbed") and W^UV into W^O: the cache then needs only c, shared by all heads.

RoPE would break that: a rotation R_t between W_i^UK and the query depends on the key's position, so no fixed
matrix can be folded. DeepSeek-V2 therefore adds a *decoupled* key of width d_rope, k^R_t = RoPE(x_t W^KR), shared
by all heads, and per-head RoPE queries q^R_i; the scores add the two parts, scaled by 1/√(d_head + d_rope). The
cache holds d_c + d_rope numbers per token and layer. Queries here come straight from x (DeepSeek-V2 also
compresses them through a low-rank latent to save training memory; that does not change the cache).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ._checks import (
    as_float_array,
    check_bool,
    check_finite,
    check_heads,
    check_mask,
    check_nonnegative_int,
    check_number,
    check_positive_int,
    check_size,
    is_int,
)
from .attention import attend, causal_mask
from .heads import merge_heads, split_heads
from .norms import rms_norm
from .rope import rope

_SHAPES = {  # name: (rows, columns), in terms of d_model (d), h, d_head (d_h), d_c and d_rope (d_r)
    "w_dkv": ("d_model", "d_c"),
    "w_uk": ("d_c", "h*d_head"),
    "w_uv": ("d_c", "h*d_head"),
    "w_kr": ("d_model", "d_rope"),
    "w_q": ("d_model", "h*d_head"),
    "w_qr": ("d_model", "h*d_rope"),
    "w_o": ("h*d_head", "d_model"),
}


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class MLAParams:
    """One MLA layer's weights, applied as x @ w; head i owns columns i*d_head:(i+1)*d_head (i*d_rope:... of w_qr).

    w_dkv (d_model, d_c) compresses; w_uk, w_uv (d_c, h*d_head) up-project keys and values; w_kr (d_model, d_rope)
    gives the shared RoPE key; w_q (d_model, h*d_head) and w_qr (d_model, h*d_rope) the queries; w_o
    (h*d_head, d_model). d_head = d_model / h. latent_norm (d_c,) or None: an RMSNorm on c, as DeepSeek-V2/V3's
    code has (kv_a_layernorm) though the paper's equations do not. RoPE uses rope_base.
    """

    w_dkv: np.ndarray
    w_uk: np.ndarray
    w_uv: np.ndarray
    w_kr: np.ndarray
    w_q: np.ndarray
    w_qr: np.ndarray
    w_o: np.ndarray
    h: int
    latent_norm: np.ndarray | None = None
    rope_base: float = 10000.0

    def __post_init__(self) -> None:
        w_dkv = as_float_array("w_dkv", self.w_dkv, 2)
        if w_dkv.ndim != 2 or not w_dkv.size:
            raise ValueError(f"w_dkv: expected shape (d_model, d_c), both at least 1, got {w_dkv.shape}")
        w_kr = as_float_array("w_kr", self.w_kr, 2)
        if w_kr.ndim != 2 or w_kr.shape[1] < 2 or w_kr.shape[1] % 2:
            raise ValueError(
                f"w_kr: expected shape (d_model, d_rope) with d_rope a positive even number "
                f"(RoPE turns features in pairs), got {w_kr.shape}"
            )
        d_model, d_c = w_dkv.shape
        d_rope = w_kr.shape[1]
        d_head = check_heads(d_model, self.h)
        sizes = {"d_model": d_model, "d_c": d_c, "d_rope": d_rope, "h*d_head": self.h * d_head}
        sizes["h*d_rope"] = self.h * d_rope
        for name, (rows, cols) in _SHAPES.items():
            a = as_float_array(name, getattr(self, name), 2)
            if a.shape != (sizes[rows], sizes[cols]):
                expected = (sizes[rows], sizes[cols])
                raise ValueError(f"{name}: expected shape ({rows}, {cols}) = {expected}, got {a.shape}")
            check_finite(name, a)
            object.__setattr__(self, name, a)
        if self.latent_norm is not None:
            norm = as_float_array("latent_norm", self.latent_norm)
            if norm.shape != (d_c,):
                raise ValueError(f"latent_norm: expected shape (d_c,) = ({d_c},), got {norm.shape}")
            check_finite("latent_norm", norm)
            object.__setattr__(self, "latent_norm", norm)
        check_number("rope_base", self.rope_base, low=0, what="a positive number (10000.0 in most models)")

    @property
    def d_model(self) -> int:
        return self.w_dkv.shape[0]

    @property
    def d_c(self) -> int:
        return self.w_dkv.shape[1]

    @property
    def d_rope(self) -> int:
        return self.w_kr.shape[1]

    @property
    def d_head(self) -> int:
        return self.d_model // self.h


def _check_sizes(d_c: object, d_rope: object) -> None:
    check_positive_int("d_c", d_c)
    if not is_int(d_rope) or d_rope < 2 or d_rope % 2:
        raise ValueError(f"d_rope: expected a positive even integer (RoPE turns features in pairs), got {d_rope!r}")


def init_mla_params(d_model: int, h: int, d_c: int, d_rope: int, seed: int = 0) -> MLAParams:
    """Xavier/Glorot-uniform weights for every matrix of an MLA layer, fixed by seed; no latent norm."""
    check_positive_int("d_model", d_model)
    d_head = check_heads(d_model, h)
    _check_sizes(d_c, d_rope)
    seed = check_nonnegative_int("seed", seed)
    sizes = {"d_model": d_model, "d_c": d_c, "d_rope": d_rope, "h*d_head": h * d_head, "h*d_rope": h * d_rope}
    # Before allocating: the seven matrices, blamed on the largest of the sizes they grow with.
    largest = max(("d_model", "d_c", "d_rope"), key=lambda name: sizes[name])
    total = sum(sizes[rows] * sizes[cols] for rows, cols in _SHAPES.values())
    check_size(largest, "the seven weight matrices", (total,), np.float64)
    rng = np.random.default_rng(seed)
    weights = {}
    for name, (rows, cols) in _SHAPES.items():
        a = math.sqrt(6.0 / (sizes[rows] + sizes[cols]))
        weights[name] = rng.uniform(-a, a, size=(sizes[rows], sizes[cols]))
    return MLAParams(h=h, **weights)


def _latent(x: np.ndarray, p: MLAParams, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What the cache keeps: x (..., n, d_model) -> (c (..., n, d_c), RoPE key k^R (..., n, d_rope))."""
    c = x @ p.w_dkv  # (..., n, d_c)
    if p.latent_norm is not None:
        c = rms_norm(c, p.latent_norm)
    return c, rope(x @ p.w_kr, positions, p.rope_base)


def _queries(x: np.ndarray, p: MLAParams, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x (..., n, d_model) -> (q^C (..., h, n, d_head), q^R (..., h, n, d_rope)), scaled by 1/√(d_head + d_rope)."""
    scale = 1.0 / math.sqrt(p.d_head + p.d_rope)
    q_c = split_heads(x @ p.w_q, p.h) * scale  # (..., h, n, d_head)
    q_r = rope(split_heads(x @ p.w_qr, p.h), positions, p.rope_base) * scale  # (..., h, n, d_rope)
    return q_c, q_r


def _per_head(w: np.ndarray, h: int) -> np.ndarray:
    """(d_c, h*d_head) -> (h, d_c, d_head): head i's block W_i of an up-projection."""
    return w.reshape(w.shape[0], h, -1).swapaxes(0, 1)  # (h, d_c, d_head)


def _absorbed_heads(q_c: np.ndarray, q_r: np.ndarray, c: np.ndarray, k_r: np.ndarray, p: MLAParams, mask, need_w):
    """Attention over the cache itself: one shared "key" [c, k^R] and "value" c for all heads -> (out, weights)."""
    # q_i·(c W_i^UK) = (q_i W_i^UKᵀ)·c: the query moves into the latent space, d_c wide.
    q_lat = q_c @ _per_head(p.w_uk, p.h).swapaxes(-1, -2)  # (..., h, n_q, d_c)
    query = np.concatenate([q_lat, q_r], axis=-1)  # (..., h, n_q, d_c + d_rope)
    key = np.concatenate([c, k_r], axis=-1)[..., None, :, :]  # (..., 1, n_kv, d_c + d_rope): one for all heads
    lat, weights = attend(query, key, c[..., None, :, :], mask, need_w)  # (..., h, n_q, d_c)
    # sum_i (w c W_i^UV) W_i^O = sum_i (w c) (W_i^UV W_i^O): W^UV folds into W^O, one (d_c, d_model) block per head.
    w_ov = _per_head(p.w_uv, p.h) @ p.w_o.reshape(p.h, p.d_head, p.d_model)  # (h, d_c, d_model)
    return np.einsum("...hnc,hcd->...nd", lat, w_ov), weights


def mla_attention(
    x: np.ndarray, params: MLAParams, mask: np.ndarray | None = None, *, absorb: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Causal MLA self-attention: x (..., n, d_model) -> (out (..., n, d_model), weights (..., h, n, n)).

    mask (boolean, True = may attend, broadcastable to (..., h, n, n)) further restricts the causal mask.
    absorb=False up-projects every head's keys and values; absorb=True attends over the latents with W^UK folded
    into the queries and W^UV into W^O. Both give the same result; token positions are 0..n-1.
    """
    if not isinstance(params, MLAParams):
        raise ValueError(f"params: expected an MLAParams, got {type(params).__name__}")
    absorb = check_bool("absorb", absorb)
    x = as_float_array("x", x, 2)
    if x.shape[-1] != params.d_model:
        raise ValueError(f"x: expected shape (..., n, d_model={params.d_model}), got {x.shape}")
    check_finite("x", x)
    n, h = x.shape[-2], params.h
    allowed = causal_mask(n) if n else np.ones((0, 0), bool)
    if mask is not None:
        allowed = check_mask(mask, (*x.shape[:-2], h, n, n)) & allowed
    positions = np.arange(n)
    c, k_r = _latent(x, params, positions)  # (..., n, d_c), (..., n, d_rope)
    q_c, q_r = _queries(x, params, positions)  # (..., h, n, d_head), (..., h, n, d_rope)
    if absorb:
        return _absorbed_heads(q_c, q_r, c, k_r, params, allowed, True)
    k_c = split_heads(c @ params.w_uk, h)  # (..., h, n, d_head)
    v = split_heads(c @ params.w_uv, h)  # (..., h, n, d_head)
    # Each head's key is [its own k^C_i, the shared k^R]; its query [q^C_i, q^R_i].
    k_rope = np.broadcast_to(k_r[..., None, :, :], (*k_r.shape[:-2], h, n, params.d_rope))  # (..., h, n, d_rope)
    query = np.concatenate([q_c, q_r], axis=-1)  # (..., h, n, d_head + d_rope)
    key = np.concatenate([k_c, k_rope], axis=-1)  # (..., h, n, d_head + d_rope)
    heads, weights = attend(query, key, v, allowed, True)  # (..., h, n, d_head)
    return merge_heads(heads) @ params.w_o, weights


class MLACache:
    """What MLA keeps per token and layer: the latent c (..., n, d_c) and the RoPE key k^R (..., n, d_rope).

    Made empty with MLACache(); mla_decode_step appends to it. Grows by doubling, like KVCache.
    """

    def __init__(self) -> None:
        self._c: np.ndarray | None = None  # (..., capacity, d_c); the first n rows are used
        self._k_r: np.ndarray | None = None  # (..., capacity, d_rope)
        self.n = 0

    def __len__(self) -> int:
        return self.n

    @property
    def latents(self) -> np.ndarray | None:
        """(..., n, d_c) latents of the tokens so far (a view), or None when empty."""
        return None if self._c is None else self._c[..., : self.n, :]

    @property
    def rope_keys(self) -> np.ndarray | None:
        """(..., n, d_rope) RoPE keys of the tokens so far (a view), or None when empty."""
        return None if self._k_r is None else self._k_r[..., : self.n, :]

    def append(self, c_t: np.ndarray, k_r_t: np.ndarray) -> None:
        """Add one token's latent (..., d_c) and RoPE key (..., d_rope), with the same leading (batch) shape."""
        c_t = as_float_array("c_t", c_t)
        k_r_t = as_float_array("k_r_t", k_r_t)
        if c_t.shape[-1] == 0:
            raise ValueError(f"c_t: expected a latent (..., d_c) with d_c >= 1, got shape {c_t.shape}")
        if k_r_t.shape[-1] == 0 or k_r_t.shape[-1] % 2:
            raise ValueError(f"k_r_t: expected a RoPE key (..., d_rope), d_rope positive and even, got {k_r_t.shape}")
        if k_r_t.shape[:-1] != c_t.shape[:-1]:
            raise ValueError(f"k_r_t: expected the batch shape {c_t.shape[:-1]} of c_t, got shape {k_r_t.shape}")
        check_finite("c_t", c_t)
        check_finite("k_r_t", k_r_t)
        if self._c is not None:
            for name, a, cached in (("c_t", c_t, self._c), ("k_r_t", k_r_t, self._k_r)):
                expected = cached.shape[:-2] + cached.shape[-1:]
                if a.shape != expected:
                    raise ValueError(f"{name}: expected shape {expected} like the cached tokens, got {a.shape}")
        if self._c is None:
            self._c, self._k_r = (np.empty((*a.shape[:-1], 16, a.shape[-1]), a.dtype) for a in (c_t, k_r_t))
        if self.n == self._c.shape[-2]:  # full: double the capacity
            self._c, self._k_r = (np.concatenate([a, np.empty_like(a)], axis=-2) for a in (self._c, self._k_r))
        self._c[..., self.n, :] = c_t
        self._k_r[..., self.n, :] = k_r_t
        self.n += 1


def mla_decode_step(x_t: np.ndarray, params: MLAParams, cache: MLACache) -> np.ndarray:
    """One new token x_t (d_model,) or (batch, d_model) -> its MLA output, same shape; appends c_t, k^R_t to cache.

    The absorbed form: the query attends over the cached latents and RoPE keys directly, so no head's keys or
    values are ever rebuilt. The token's position (for RoPE) is the number of tokens already in the cache.
    """
    if not isinstance(params, MLAParams):
        raise ValueError(f"params: expected an MLAParams, got {type(params).__name__}")
    if not isinstance(cache, MLACache):
        raise ValueError(f"cache: expected an MLACache, got {type(cache).__name__}")
    if len(cache) and (cache.latents.shape[-1], cache.rope_keys.shape[-1]) != (params.d_c, params.d_rope):
        raise ValueError(
            f"params: expected d_c={cache.latents.shape[-1]} and d_rope={cache.rope_keys.shape[-1]} like the params "
            f"that filled the cache (start a new MLACache for other params), got d_c={params.d_c}, "
            f"d_rope={params.d_rope}"
        )
    x_t = as_float_array("x_t", x_t)
    if x_t.ndim > 2 or x_t.shape[-1] != params.d_model:
        raise ValueError(f"x_t: expected shape (d_model={params.d_model},) or (batch, d_model), got {x_t.shape}")
    check_finite("x_t", x_t)
    if len(cache) and cache.latents.shape[:-2] != x_t.shape[:-1]:
        raise ValueError(
            f"x_t: expected batch shape {cache.latents.shape[:-2]} like the cached tokens, got {x_t.shape}"
        )
    row = x_t[..., None, :]  # (..., 1, d_model): the new token as a one-row sequence
    position = np.array([len(cache)])  # absolute position: RoPE must see where the token really is
    c_t, k_r_t = _latent(row, params, position)  # (..., 1, d_c), (..., 1, d_rope)
    cache.append(c_t[..., 0, :], k_r_t[..., 0, :])
    q_c, q_r = _queries(row, params, position)  # (..., h, 1, d_head), (..., h, 1, d_rope)
    out, _ = _absorbed_heads(q_c, q_r, cache.latents, cache.rope_keys, params, None, False)  # (..., 1, d_model)
    return out[..., 0, :]
