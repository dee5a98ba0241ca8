"""The backward pass of multi-head attention: the forward steps of lessons 2-6 run in reverse, one function per step.

Each backward step takes the gradient of the loss with respect to its step's output (written d_<name>) and
returns the gradients with respect to that step's inputs. Chained from W^O back to the projections they
give the gradient of sum(output * grad_output) with respect to every input and weight.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math

import numpy as np

from ._blas import one_blas_thread
from ._checks import DEFAULT_MAX_BYTES, as_float_array, check_bool, check_finite, check_memory, type_name
from .attention import SAFE_EXP_ARGUMENT
from .cost import flop_count
from .heads import merge_heads, split_heads
from .multihead import SMALL_WORK_FLOPS, _check_inputs, _project, kv_heads
from .projections import MHAParams


@dataclasses.dataclass(frozen=True)
class Cache:
    """What the forward keeps for the backward: the inputs and every intermediate the steps below read."""

    q: np.ndarray  # (..., n_q, d_model) inputs
    k: np.ndarray  # (..., n_kv, d_model)
    v: np.ndarray  # (..., n_kv, d_model)
    Q: np.ndarray  # (..., h, n_q, d_k), already scaled by 1/sqrt(d_k)
    K: np.ndarray  # (..., h, n_kv, d_k), every query head's keys
    V: np.ndarray  # (..., h, n_kv, d_k)
    weights: np.ndarray  # (..., h, n_q, n_kv), zero where masked
    concat: np.ndarray  # (..., n_q, d_model), the heads side by side


def row_sums(x: np.ndarray) -> np.ndarray:
    """Unchecked: x.sum(axis=-1, keepdims=True), (..., m) -> (..., 1), computed as one matrix-vector product.

    numpy sums a short last axis row by row; for rows of 16 the product with a vector of ones was 7x faster here.
    """
    rows = x.reshape(math.prod(x.shape[:-1]), x.shape[-1])  # (rows, m); not -1, which fails when m = 0
    return (rows @ np.ones((x.shape[-1], 1), dtype=x.dtype)).reshape(*x.shape[:-1], 1)


def masked_softmax(scores: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """Unchecked softmax over the keys: scores (..., h, n_q, n_kv) -> weights in scores' memory; masked keys get 0."""
    # Softmax is shift-invariant; shifting each row by its max only keeps exp() finite, so skip that
    # (slow, row by row) pass when every score is small. Checked before masking adds -inf.
    large = scores.size and max(scores.max(), -scores.min()) > SAFE_EXP_ARGUMENT
    row_max = scores.max(axis=-1, keepdims=True) if large else None  # (..., h, n_q, 1), over every key
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # exp(-inf) = 0: no weight on a masked key
        if large:
            # Where masked keys alone top the allowed ones by more than SAFE_EXP_ARGUMENT, shift by the allowed
            # keys' max instead: the full row's max would push every allowed score below exp's range (float32
            # underflows below exp(-103)) and zero the row. Elsewhere the shift stays the full row's max, as it
            # always was, so runs saved before (lesson 11's sweep) are recomputed bit for bit.
            allowed_max = scores.max(axis=-1, keepdims=True)  # -inf on a fully masked row
            far = (row_max - allowed_max > SAFE_EXP_ARGUMENT) & np.isfinite(allowed_max)
            row_max = np.where(far, allowed_max, row_max)
    if large:
        scores -= row_max  # masked keys stay -inf
    weights = np.exp(scores, out=scores)
    total = row_sums(weights)  # (..., h, n_q, 1)
    total[total == 0] = 1.0  # a fully masked row: every numerator is 0, so its weights stay 0, not NaN
    weights /= total
    return weights


def forward(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, params: MHAParams, mask: np.ndarray | None, *, check: bool = True
) -> tuple[np.ndarray, Cache]:
    """The forward that keeps its intermediates: -> (output (..., n_q, d_model), Cache).

    The inputs are checked as multi_head_attention checks them; check=False skips that, for a model's own
    activations (a diverged run's NaN must reach its loss, where the trainer reports it with the step number).
    """
    if check_bool("check", check):
        q, k, v, lead, mask = _check_inputs(q, k, v, params, mask)  # shapes, NaN, the mask
        dtype = np.result_type(q, k, v, params.dtype)
        check_memory("q, k", (*lead, params.h, q.shape[-2], k.shape[-2]), dtype, DEFAULT_MAX_BYTES)
    # Steps 1-2: project, then view the columns as heads. Scaling Q costs n*d_k per head, not n^2.
    Q = split_heads(_project(q, params.w_q, params.b_q), params.h) * (1.0 / math.sqrt(params.d_k))  # (..., h, n_q, d_k)
    K = kv_heads(_project(k, params.w_k, params.b_k), params)  # (..., h, n_kv, d_k): head i reads K head i // group
    V = kv_heads(_project(v, params.w_v, params.b_v), params)  # (..., h, n_kv, d_k)
    # Step 3: scaled dot-product attention inside every head.
    weights = masked_softmax(Q @ K.swapaxes(-1, -2), mask)  # (..., h, n_q, n_kv)
    heads = weights @ V  # (..., h, n_q, d_k)
    # Steps 4-5: concatenate the heads, then mix them with W^O.
    concat = merge_heads(heads)  # (..., n_q, d_model)
    return _project(concat, params.w_o, params.b_o), Cache(q, k, v, Q, K, V, weights, concat)


def _unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum grad over the dimensions that broadcasting added or stretched, back to shape."""
    extra = grad.ndim - len(shape)
    stretched = tuple(extra + i for i, s in enumerate(shape) if s == 1 and grad.shape[extra + i] != 1)
    axes = tuple(range(extra)) + stretched
    # An input shared by every sequence of a batch gets the sum of every sequence's gradient.
    return grad.sum(axis=axes).reshape(shape) if axes else grad


def projection_backward(
    d_y: np.ndarray, x: np.ndarray, w: np.ndarray, has_bias: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Unchecked: y = x @ w + b backward, d_y (..., n, d_out) -> d_x (..., n, d_in), d_w (d_in, d_out), d_b or None.

    d_y and x have the same leading dimensions (the steps after this one undo any broadcasting).
    """
    rows_y = d_y.reshape(-1, d_y.shape[-1])  # (batch*n, d_out)
    d_x = (rows_y @ w.T).reshape(x.shape)  # (..., n, d_in)
    # The same w serves every row of every sequence, so its gradient sums over all of them.
    d_w = x.reshape(-1, x.shape[-1]).T @ rows_y  # (d_in, batch*n) @ (batch*n, d_out)
    return d_x, d_w, rows_y.sum(axis=0) if has_bias else None


def concat_backward(d_concat: np.ndarray, h: int) -> np.ndarray:
    """Unchecked un-concatenate: d_concat (..., n_q, d_model) -> d_heads (..., h, n_q, d_k), head i's columns."""
    return split_heads(d_concat, h)


def weighted_sum_backward(d_heads: np.ndarray, weights: np.ndarray, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unchecked: head = weights @ V backward, d_heads (..., h, n_q, d_k) -> d_weights (..., h, n_q, n_kv), d_V."""
    d_weights = d_heads @ V.swapaxes(-1, -2)  # (..., h, n_q, n_kv): how the loss changes with each weight
    d_V = weights.swapaxes(-1, -2) @ d_heads  # (..., h, n_kv, d_k): each value row, summed over its queries
    return d_weights, _unbroadcast(d_V, V.shape)


def softmax_backward(d_weights: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Unchecked: A = softmax(S) backward as a Jacobian-vector product, d_S = A * (d_A - sum(d_A * A))."""
    # The full Jacobian diag(a) - a a^T never needs to be built: applied to d_A it is this one line.
    # Masked keys and fully masked rows have A = 0, so their gradient is exactly 0, never NaN.
    return weights * (d_weights - row_sums(d_weights * weights))


def scores_backward(d_scores: np.ndarray, Q: np.ndarray, K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unchecked: S = Q @ K^T backward, d_scores (..., h, n_q, n_kv) -> d_Q (..., h, n_q, d_k), d_K like K."""
    d_Q = d_scores @ K  # (..., h, n_q, d_k)
    d_K = d_scores.swapaxes(-1, -2) @ Q  # (..., h, n_kv, d_k)
    return _unbroadcast(d_Q, Q.shape), _unbroadcast(d_K, K.shape)


def scale_backward(d_Q_scaled: np.ndarray, d_k: int) -> np.ndarray:
    """Unchecked (d_k >= 1): Q_scaled = Q / sqrt(d_k) backward, the same factor scales d_Q (..., h, n_q, d_k)."""
    return d_Q_scaled * (1.0 / math.sqrt(d_k))


def shared_heads_backward(d_kv: np.ndarray, h_kv: int) -> np.ndarray:
    """Unchecked (h_kv divides h): GQA's (..., h, n_kv, d_k) -> (..., h_kv, n_kv, d_k), summing each group's heads."""
    *lead, h, n_kv, d_k = d_kv.shape
    # Query heads i*g .. i*g + g - 1 all read key/value head i, so their gradients add up there.
    return d_kv.reshape(*lead, h_kv, h // h_kv, n_kv, d_k).sum(axis=-3)  # sum over the group: (..., h_kv, n_kv, d_k)


def backward(cache: Cache, grad_output: np.ndarray, params: MHAParams, *, check: bool = True) -> dict[str, np.ndarray]:
    """The forward's steps in reverse: grad_output (..., n_q, d_model) -> gradient by name; check as in forward."""
    if check_bool("check", check):
        grad_output = _check_backward(cache, grad_output, params)
    grads = {}
    # Step 5: output = concat @ W^O + b_O.
    d_concat, grads["w_o"], grads["b_o"] = projection_backward(
        grad_output, cache.concat, params.w_o, params.b_o is not None
    )
    # Step 4: concat = the heads side by side.
    d_heads = concat_backward(d_concat, params.h)  # (..., h, n_q, d_k)
    # Step 3: heads = softmax(Q_scaled K^T) V, with Q_scaled = Q / sqrt(d_k).
    d_weights, d_V = weighted_sum_backward(d_heads, cache.weights, cache.V)
    d_scores = softmax_backward(d_weights, cache.weights)
    d_Q_scaled, d_K = scores_backward(d_scores, cache.Q, cache.K)
    d_Q = scale_backward(d_Q_scaled, params.d_k)
    if params.h_kv < params.h:
        d_K, d_V = shared_heads_backward(d_K, params.h_kv), shared_heads_backward(d_V, params.h_kv)
    # Steps 1-2: Q = q W^Q + b_Q viewed as h heads, and likewise K and V.
    for name, x, d_x_heads in (("q", cache.q, d_Q), ("k", cache.k, d_K), ("v", cache.v, d_V)):
        w, b = getattr(params, f"w_{name}"), getattr(params, f"b_{name}")
        d_proj = merge_heads(d_x_heads)  # (..., n, h*d_k)
        grads[name], grads[f"w_{name}"], grads[f"b_{name}"] = projection_backward(d_proj, x, w, b is not None)
    return {name: g for name, g in grads.items() if g is not None}


def _check_backward(cache: object, grad_output: object, params: object) -> np.ndarray:
    """grad_output as a finite float array shaped like the forward's output, or ValueError naming the argument."""
    if not isinstance(params, MHAParams):
        raise ValueError(f"params: expected an MHAParams, got {type_name(params)}")
    if not isinstance(cache, Cache):
        raise ValueError(
            f"cache: expected the Cache that forward(q, k, v, params, mask) returned, got {type_name(cache)}"
        )
    made = (cache.q.shape[-1], cache.Q.shape[-3], cache.V.shape[-1])  # (d_model, h, d_k) of the forward's params
    if made != (params.d_model, params.h, params.d_k):
        raise ValueError(
            f"params: expected the MHAParams the cache was made with (d_model, h, d_k) = {made}, "
            f"got {(params.d_model, params.h, params.d_k)}"
        )
    grad_output = as_float_array("grad_output", grad_output, 2)
    if grad_output.shape != cache.concat.shape:
        raise ValueError(
            f"grad_output: expected the forward output's shape {cache.concat.shape}, got {grad_output.shape}"
        )
    check_finite("grad_output", grad_output)
    return grad_output.astype(np.result_type(cache.concat, grad_output), copy=False)


def multi_head_attention_grads(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    params: MHAParams,
    grad_output: np.ndarray,
    mask: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Gradients of sum(multi_head_attention(q, k, v, params, mask)[0] * grad_output), each shaped like its input.

    Keys: q, k, v, w_q, w_k, w_v, w_o, and b_q, b_k, b_v, b_o for the biases params has. In
    self-attention pass the same x as q, k and v: its gradient is grads["q"] + grads["k"] + grads["v"].
    Weight gradients sum over every leading (batch) dimension. A query with no allowed key gets zero gradient.
    """
    q, k, v, lead, mask = _check_inputs(q, k, v, params, mask)
    n_q, n_kv = q.shape[-2], k.shape[-2]
    grad_output = as_float_array("grad_output", grad_output, 2)
    if grad_output.shape != (*lead, n_q, params.d_model):
        # Name where the expected shape comes from: a q, k or v with an extra batch dimension changes it.
        sources = ", ".join(f"{name} {a.shape}" for name, a in (("q", q), ("k", k), ("v", v)))
        raise ValueError(
            f"grad_output: expected the output's shape {(*lead, n_q, params.d_model)} (batch dimensions {lead} "
            f"broadcast from {sources}), got {grad_output.shape}"
        )
    check_finite("grad_output", grad_output)
    dtype = np.result_type(q, k, v, params.dtype, grad_output)
    check_memory("q, k", (*lead, params.h, n_q, n_kv), dtype, DEFAULT_MAX_BYTES)
    flops = math.prod(lead) * flop_count(n_q, n_kv, params.d_model, params.h)["total"] if n_q and n_kv else 0
    with one_blas_thread() if flops < SMALL_WORK_FLOPS else contextlib.nullcontext():
        _, cache = forward(q, k, v, params, mask, check=False)  # checked above
        return backward(cache, grad_output.astype(dtype, copy=False), params, check=False)
