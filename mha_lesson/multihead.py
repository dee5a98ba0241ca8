"""Multi-head attention, twice: a literal loop over heads that follows the derivation, and a batched version."""

from __future__ import annotations

import contextlib
import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._blas import one_blas_thread
from ._checks import DEFAULT_MAX_BYTES, as_float_array, check_bool, check_finite, check_mask, check_memory
from .attention import attend, softmax
from .cost import flop_count
from .heads import split_heads
from .norms import QKNorm, _check_weight, head_rms_norm
from .projections import MHAParams

# The batched version works on blocks of heads whose (n_q, n_kv) score matrices fit in about this many
# bytes, so that scores, exp() and the weighted sum stay in cache instead of streaming h*n^2 numbers
# through memory several times. Small inputs (every lesson) fit in one block: fully vectorised.
BLOCK_BYTES = 4 * 2**20
# Below this many FLOPs (a few tokens) one BLAS thread is faster even on an idle machine: see _blas.
# Explorers force one thread for all their work, since the browser keeps the cores busy meanwhile.
SMALL_WORK_FLOPS = 10_000_000


def _check_inputs(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, params: MHAParams, mask: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...], np.ndarray | None]:
    """Validate q (..., n_q, d_model), k and v (..., n_kv, d_model); return them, the batch shape and the mask."""
    if not isinstance(params, MHAParams):
        raise ValueError(f"params: expected an MHAParams, got {type(params).__name__}")
    d = params.d_model
    arrays = []
    for name, x in (("q", q), ("k", k), ("v", v)):
        x = as_float_array(name, x, 2)
        if x.shape[-1] != d:
            raise ValueError(f"{name}: expected shape (..., n, d_model={d}) to match params, got {x.shape}")
        check_finite(name, x)
        arrays.append(x)
    q, k, v = arrays
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"v: expected the same length n_kv={k.shape[-2]} as k, got shape {v.shape} (k has shape {k.shape})"
        )
    try:
        lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"k: expected batch dimensions that broadcast with q's {q.shape[:-2]}, "
            f"got k {k.shape[:-2]} and v {v.shape[:-2]}"
        ) from None
    if mask is not None:
        mask = check_mask(mask, (*lead, params.h, q.shape[-2], k.shape[-2]))
    return q, k, v, lead, mask


def _project(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """x @ w + b: (..., n, d_in) @ (d_in, d_out) -> (..., n, d_out)."""
    # One (batch*n, d_in) product: numpy would otherwise run one small product per sequence.
    y = (x.reshape(-1, x.shape[-1]) @ w).reshape(*x.shape[:-1], w.shape[1])  # (..., n, d_out)
    if b is not None:
        y += b
    return y


def kv_heads(x: np.ndarray, params: MHAParams) -> np.ndarray:
    """Unchecked: projected K or V (..., n, h_kv*d_k) -> (..., h, n, d_k); query head i reads K/V head i // group."""
    heads = split_heads(x, params.h_kv)  # (..., h_kv, n, d_k)
    if params.h_kv == params.h:
        return heads
    # Grouped-query attention: repeat each key/value head for the group_size query heads that share it.
    return np.repeat(heads, params.group_size, axis=-3)  # (..., h, n, d_k), a copy


def multi_head_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    params: MHAParams,
    mask: np.ndarray | None = None,
    *,
    need_weights: bool = True,
    max_bytes: int = DEFAULT_MAX_BYTES,
    qk_norm: QKNorm | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Batched MHA: q (..., n_q, d_model), k, v (..., n_kv, d_model) -> ((..., n_q, d_model), (..., h, n_q, n_kv)).

    mask is boolean, True = may attend, broadcastable to (..., h, n_q, n_kv): a 3-D mask is read as
    (h, n_q, n_kv), so give a per-sequence mask the shape (batch, 1, n_q, n_kv). A query with no
    allowed key gets all-zero weights and a zero head output; PyTorch returns NaN there.
    With need_weights=False the weights are not kept (None is returned in their place).
    Raises ValueError before allocating when the weights would exceed max_bytes. With params.h_kv < h
    (grouped-query attention) the h query heads share h_kv key/value heads (see kv_heads).
    With qk_norm (a norms.QKNorm), every head's query and key are RMS-normalised before the scores (QK-norm).
    """
    q, k, v, lead, mask = _check_inputs(q, k, v, params, mask)
    check_qk_norm(qk_norm, params)
    need_weights = check_bool("need_weights", need_weights)
    n_q, n_kv = q.shape[-2], k.shape[-2]
    dtype = np.result_type(q, k, v, params.dtype)
    check_memory("q, k", (*lead, params.h, n_q, n_kv) if need_weights else (params.h, n_q, n_kv), dtype, max_bytes)
    flops = math.prod(lead) * flop_count(n_q, n_kv, params.d_model, params.h)["total"] if n_q and n_kv else 0
    with one_blas_thread() if flops < SMALL_WORK_FLOPS else contextlib.nullcontext():
        concat, weights = attention_heads(q, k, v, params, mask, lead, dtype, need_weights, qk_norm)
        # Step 5: W^O mixes the concatenated heads (..., n_q, d_model).
        return _project(concat, params.w_o, params.b_o), weights


def check_qk_norm(qk_norm: QKNorm | None, params: MHAParams) -> None:
    """Raise ValueError unless qk_norm is None or a QKNorm whose weights have d_k entries."""
    if qk_norm is None:
        return
    if not isinstance(qk_norm, QKNorm):
        raise ValueError(f"qk_norm: expected a QKNorm or None, got {type(qk_norm).__name__}")
    _check_weight("qk_norm.q_weight", qk_norm.q_weight, params.d_k)
    _check_weight("qk_norm.k_weight", qk_norm.k_weight, params.d_k)


def attention_heads(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    params: MHAParams,
    mask: np.ndarray | None,
    lead: tuple[int, ...],
    dtype: np.dtype,
    need_weights: bool,
    qk_norm: QKNorm | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Steps 1-4, unchecked (after the caller's checks): -> (concatenated heads (..., n_q, d_model), weights or None).

    multi_head_attention and gates.gated_multi_head_attention check q, k, v, params, mask and qk_norm first.
    """
    h, d_k, d = params.h, params.d_k, params.d_model
    n_q, n_kv = q.shape[-2], k.shape[-2]

    # Steps 1-2: one (d_model, d_model) matmul projects every head at once, because W^Q is the
    # side-by-side concatenation of the W_i^Q. Scaling Q by 1/sqrt(d_k) here costs n*d, not n^2.
    Q = _project(q, params.w_q, params.b_q)
    K = _project(k, params.w_k, params.b_k)
    if qk_norm is not None:
        # QK-norm: each head's query and key get RMS 1 (times the learned scales) before their dot product.
        Q = head_rms_norm(Q, h, qk_norm.q_weight, qk_norm.eps)
        K = head_rms_norm(K, params.h_kv, qk_norm.k_weight, qk_norm.eps)
    Q *= 1.0 / math.sqrt(d_k)  # a Python float keeps float32 arrays float32
    Qh = np.broadcast_to(split_heads(Q, h), (*lead, h, n_q, d_k))
    Kh = np.broadcast_to(kv_heads(K, params), (*lead, h, n_kv, d_k))
    Vh = np.broadcast_to(kv_heads(_project(v, params.w_v, params.b_v), params), (*lead, h, n_kv, d_k))

    # Step 3 writes head i into columns i*d_k:(i+1)*d_k of this buffer, so step 4 is a free reshape.
    concat = np.empty((*lead, n_q, h, d_k), dtype=dtype)  # (..., n_q, h, d_k)
    heads = concat.swapaxes(-3, -2)  # (..., h, n_q, d_k) view of the same memory
    weights = np.empty((*lead, h, n_q, n_kv), dtype=dtype) if need_weights else None
    block_bytes = n_q * n_kv * np.dtype(dtype).itemsize
    if math.prod(lead) * h * block_bytes <= BLOCK_BYTES:
        blocks = [(..., slice(None))]  # everything in one vectorised step
    else:
        per_block = max(1, BLOCK_BYTES // block_bytes)
        blocks = [(*idx, slice(i, i + per_block)) for idx in np.ndindex(lead) for i in range(0, h, per_block)]

    def run(blk: tuple) -> None:
        out, w = attend(Qh[blk], Kh[blk], Vh[blk], None if mask is None else mask[blk], need_weights)
        heads[blk] = out  # blocks are disjoint slices, so threads never write the same memory
        if weights is not None:
            weights[blk] = w

    if len(blocks) == 1:
        run(blocks[0])
    else:
        # numpy's softmax passes (max, exp, sum) use one core. Independent blocks on every core, each
        # with a one-thread BLAS, keep all cores busy through the whole attention step.
        with one_blas_thread(), ThreadPoolExecutor(os.cpu_count()) as pool:
            list(pool.map(run, blocks))

    # Step 4: the heads side by side, (..., n_q, d_model).
    return concat.reshape(*lead, n_q, d), weights


def multi_head_attention_loop(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    params: MHAParams,
    mask: np.ndarray | None = None,
    *,
    return_trace: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
):
    """The derivation as code, one head at a time: same arguments and results as multi_head_attention.

    With return_trace=True also returns a dict of every intermediate: lists over heads of
    Q_i, K_i, V_i (..., n, d_k), scores and scaled_scores and weights (..., n_q, n_kv), head_i
    (..., n_q, d_k); then concat (..., n_q, d_model) and output (..., n_q, d_model).
    """
    q, k, v, lead, mask = _check_inputs(q, k, v, params, mask)
    return_trace = check_bool("return_trace", return_trace)
    dtype = np.result_type(q, k, v, params.dtype)
    check_memory("q, k", (*lead, params.h, q.shape[-2], k.shape[-2]), dtype, max_bytes)
    trace: dict[str, list[np.ndarray]] = {
        name: [] for name in ("Q_i", "K_i", "V_i", "scores", "scaled_scores", "weights", "head_i")
    }
    for i in range(params.h):
        # Steps 1-2 in one: project into head i's own d_k columns (W_i^Q is block i of W^Q's columns).
        Q_i = _project(q, params.w_q_head(i), params.b_head("b_q", i))  # (..., n_q, d_k)
        K_i = _project(k, params.w_k_head(i), params.b_head("b_k", i))  # (..., n_kv, d_k)
        V_i = _project(v, params.w_v_head(i), params.b_head("b_v", i))  # (..., n_kv, d_k)
        # Step 3: scaled dot-product attention inside the head.
        scores = Q_i @ K_i.swapaxes(-1, -2)  # (..., n_q, n_kv)
        scaled = scores / math.sqrt(params.d_k)
        if mask is not None:
            scaled = np.where(mask[..., i, :, :], scaled, -np.inf)
        A_i = softmax(scaled, axis=-1)  # each row sums to 1 over the keys
        head_i = A_i @ V_i  # (..., n_q, d_k)
        for name, value in zip(trace, (Q_i, K_i, V_i, scores, scaled, A_i, head_i), strict=True):
            trace[name].append(value)
    # Step 4: concatenate the heads side by side.
    concat = np.concatenate(trace["head_i"], axis=-1)  # (..., n_q, h*d_k) = (..., n_q, d_model)
    # Step 5: W^O mixes information across heads.
    output = _project(concat, params.w_o, params.b_o)  # (..., n_q, d_model)
    weights = np.stack(trace["weights"], axis=-3)  # (..., h, n_q, n_kv)
    if return_trace:
        return output, weights, {**trace, "concat": concat, "output": output}
    return output, weights
