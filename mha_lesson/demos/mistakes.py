"""Common-mistakes lesson: the usual bugs in multi-head attention, each a small buggy function with its check.

Every mistake in MISTAKES pairs a buggy function with the correct core function of the same signature and a
check. A check calls the function it is given on a small seeded input and returns a CheckResult: passed is
True when the function behaves as attention must, and symptom is one line with the number it measured.
Each check FAILS on its buggy function and PASSES on the correct core (tests/test_mistakes.py).

The buggy functions are written the way a learner would write them, one mistake each, and take no biases
(checks use bias-free parameters). They are for reading and checking, not for use.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable

import numpy as np

from ..attention import causal_mask, scaled_dot_product_attention, softmax
from ..heads import merge_heads, split_heads
from ..multihead import multi_head_attention
from ..projections import MHAParams, init_params

Pair = tuple[np.ndarray, np.ndarray]  # (output, attention weights), as the core's attention functions return

# ------------------------------------------------------------------------------------------------------
# The buggy functions. Each has the same signature as the correct core function it imitates.
# ------------------------------------------------------------------------------------------------------


def attention_no_scale(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None) -> Pair:
    """softmax(q kᵀ) v: q (n_q, d_k), k (n_kv, d_k), v (n_kv, d_v) -> (out, weights)."""
    scores = q @ k.swapaxes(-1, -2)  # BUG: no / sqrt(d_k): scores grow like sqrt(d_k) and saturate the softmax
    weights = softmax(scores, axis=-1)
    return weights @ v, weights


def attention_wrong_axis(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None) -> Pair:
    """softmax over the queries instead of the keys: q (n_q, d_k), k, v (n_kv, .) -> (out, weights)."""
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1])  # (n_q, n_kv)
    weights = softmax(scores, axis=0)  # BUG: normalises each column (key); each row (query) must sum to 1
    return weights @ v, weights


def attention_mask_after_softmax(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray) -> Pair:
    """Masked attention that masks the weights instead of the scores; mask True = may attend."""
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1])  # (n_q, n_kv)
    weights = softmax(scores, axis=-1)
    weights = weights * mask  # BUG: too late: the masked keys already took their share, rows now sum to < 1
    return weights @ v, weights


def attention_mask_with_zero(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray) -> Pair:
    """Masked attention that zeroes the masked scores; mask True = may attend."""
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1])  # (n_q, n_kv)
    scores = scores * mask  # BUG: a score of 0 still gets weight exp(0)/sum > 0; masked scores must be -inf
    weights = softmax(scores, axis=-1)
    return weights @ v, weights


def attention_flipped_mask(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray) -> Pair:
    """Masked attention that reads mask True as "may NOT attend", as PyTorch's nn.MultiheadAttention attn_mask does."""
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1])  # (n_q, n_kv)
    # BUG: this project's masks (and F.scaled_dot_product_attention's) say True = may attend; this hides those keys
    scores = np.where(mask, -np.inf, scores)
    weights = softmax(scores, axis=-1)
    return weights @ v, weights


def split_heads_reshape_only(x: np.ndarray, h: int) -> np.ndarray:
    """(n, d_model) -> (h, n, d_k), reshaping straight to the target shape."""
    n, d_model = x.shape
    return x.reshape(h, n, d_model // h)  # BUG: "head" 0 is now the first n/h tokens, not the first d_k features


def merge_heads_reshape_only(x: np.ndarray) -> np.ndarray:
    """(h, n, d_k) -> (n, h*d_k), reshaping straight back."""
    h, n, d_k = x.shape
    return x.reshape(n, h * d_k)  # BUG: the mirror image of split_heads_reshape_only


def mha_reshape_only(q: np.ndarray, k: np.ndarray, v: np.ndarray, params: MHAParams) -> Pair:
    """Multi-head attention whose split and merge reshape without moving the heads axis."""
    Q = split_heads_reshape_only(q @ params.w_q, params.h)  # (h, n, d_k), but the rows mix tokens and features
    K = split_heads_reshape_only(k @ params.w_k, params.h)
    V = split_heads_reshape_only(v @ params.w_v, params.h)
    heads, weights = scaled_dot_product_attention(Q, K, V)
    return merge_heads_reshape_only(heads) @ params.w_o, weights


def mha_scale_d_model(q: np.ndarray, k: np.ndarray, v: np.ndarray, params: MHAParams) -> Pair:
    """Multi-head attention that divides every head's scores by sqrt(d_model)."""
    Q, K, V = (split_heads(x @ w, params.h) for x, w in ((q, params.w_q), (k, params.w_k), (v, params.w_v)))
    # BUG: a head's q . k sums d_k products, not d_model: sqrt(d_model) shrinks the scores sqrt(h) times too much
    scores = Q @ K.swapaxes(-1, -2) / math.sqrt(params.d_model)  # (h, n_q, n_kv)
    weights = softmax(scores, axis=-1)
    return merge_heads(weights @ V) @ params.w_o, weights


def mha_same_projection(q: np.ndarray, k: np.ndarray, v: np.ndarray, params: MHAParams) -> Pair:
    """Multi-head attention, one head at a time, slicing the projections for each head."""
    d_k, heads, maps = params.d_k, [], []
    for _ in range(params.h):
        # BUG: the slice never moves with the head index: every head gets columns 0:d_k, the same projection
        Q_i, K_i, V_i = q @ params.w_q[:, :d_k], k @ params.w_k[:, :d_k], v @ params.w_v[:, :d_k]
        head, w = scaled_dot_product_attention(Q_i, K_i, V_i)
        heads.append(head)
        maps.append(w)
    return np.concatenate(heads, axis=-1) @ params.w_o, np.stack(maps)


def mha_without_w_o(q: np.ndarray, k: np.ndarray, v: np.ndarray, params: MHAParams) -> Pair:
    """Multi-head attention that stops after concatenating the heads."""
    Q, K, V = (split_heads(x @ w, params.h) for x, w in ((q, params.w_q), (k, params.w_k), (v, params.w_v)))
    heads, weights = scaled_dot_product_attention(Q, K, V)  # (h, n, d_k)
    return merge_heads(heads), weights  # BUG: forgot @ params.w_o, so no output feature mixes two heads


def merge_heads_stacked(heads: np.ndarray) -> np.ndarray:
    """(h, n, d_k) -> (n, h*d_k) by stacking the heads on a new last axis and flattening."""
    h, n, d_k = heads.shape
    # BUG: stacking on the last axis gives (n, d_k, h): the flattened row interleaves the heads feature by
    # feature, while W^O's row block i expects head i's d_k features side by side.
    return np.stack(list(heads), axis=-1).reshape(n, d_k * h)


def mha_stacked_concat(q: np.ndarray, k: np.ndarray, v: np.ndarray, params: MHAParams) -> Pair:
    """Multi-head attention that concatenates its heads with merge_heads_stacked."""
    Q, K, V = (split_heads(x @ w, params.h) for x, w in ((q, params.w_q), (k, params.w_k), (v, params.w_v)))
    heads, weights = scaled_dot_product_attention(Q, K, V)  # (h, n, d_k)
    return merge_heads_stacked(heads) @ params.w_o, weights


def split_heads_int_division(x: np.ndarray, h: int) -> np.ndarray:
    """(n, d_model) -> (h, n, d_k) by slicing d_k columns per head."""
    d_k = x.shape[-1] // h  # BUG: 10 // 3 = 3 without complaint: 3 heads cover 9 of the 10 features
    return np.stack([x[:, i * d_k : (i + 1) * d_k] for i in range(h)])  # (h, n, d_k)


def softmax_naive(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """exp(x) / sum exp(x) along axis."""
    e = np.exp(x)  # BUG: no max subtracted: exp(1000) = inf in float64 (exp(89) already in float32)
    return e / e.sum(axis=axis, keepdims=True)  # inf / inf = NaN


# ------------------------------------------------------------------------------------------------------
# The checks. Each takes a function with the signature above and measures one property attention must have.
# ------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """Outcome of a check: passed, a one-line symptom with the measured number, and that number."""

    passed: bool
    symptom: str
    value: float

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return f"{'PASS' if self.passed else 'FAIL'}: {self.symptom}"


def average_row_max(fn: Callable, d_k: int, n: int = 16, seed: int = 0) -> float:
    """Mean over queries of the largest weight fn gives, for unit-variance q, k of width d_k (1 = one-hot)."""
    rng = np.random.default_rng(seed)
    q, k, v = rng.normal(size=(3, n, d_k))  # each (n, d_k)
    return float(fn(q, k, v)[1].max(axis=-1).mean())


def check_scaled(fn: Callable) -> CheckResult:
    """Unit-variance q and k with d_k = 64 over 16 keys must give soft rows, not one-hot ones."""
    value = average_row_max(fn, d_k=64)
    return CheckResult(
        value < 0.5,
        f"average largest weight per row = {value:.2f} for unit-variance q, k with d_k = 64 "
        "(close to 1 means one-hot rows: a saturated softmax with vanishing gradients)",
        value,
    )


def check_rows_sum_to_one(fn: Callable) -> CheckResult:
    """Every query's weights over the keys must sum to 1 (5 queries, 7 keys)."""
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(5, 4)), rng.normal(size=(7, 4)), rng.normal(size=(7, 3))
    w = fn(q, k, v)[1]  # (n_q, n_kv)
    rows, cols = w.sum(axis=-1), w.sum(axis=-2)
    error = float(np.abs(rows - 1).max())
    return CheckResult(
        error < 1e-9,
        f"row sums (per query) {rows.min():.2f}..{rows.max():.2f}, "
        f"column sums (per key) {cols.min():.2f}..{cols.max():.2f}; every row must sum to 1",
        error,
    )


def check_causal(fn: Callable) -> CheckResult:
    """With a causal mask, future keys get weight exactly 0 and every row still sums to 1."""
    rng = np.random.default_rng(2)
    q, k, v = rng.normal(size=(3, 5, 4))  # each (n=5, d_k=4)
    w = fn(q, k, v, causal_mask(5))[1]  # (5, 5)
    leak = float(np.triu(w, k=1).max())
    rows = w.sum(axis=-1)
    return CheckResult(
        leak == 0.0 and bool(np.allclose(rows, 1.0)),
        f"largest weight on a future key = {leak:.3f} (must be 0); row sums {rows.min():.2f}..{rows.max():.2f} "
        "(must be 1)",
        max(leak, float(np.abs(rows - 1).max())),
    )


def _self_attention_case(seed: int, n: int = 6, d_model: int = 8, h: int = 2) -> tuple[np.ndarray, MHAParams]:
    """A seeded (n, d_model) input and bias-free parameters."""
    return np.random.default_rng(seed).normal(size=(n, d_model)), init_params(d_model, h, seed=seed)


def head_scale(fn: Callable) -> float:
    """The factor fn's heads multiply q·k by before the softmax, in units of 1/√d_k (1 for correct attention).

    softmax(c·s) = w gives ln w = c·s - (one constant per row), so after centring each row, ln w is c times
    the centred raw scores s = Q_i K_iᵀ; c is fitted by least squares over every head and row.
    """
    x, params = _self_attention_case(7, n=6, d_model=16, h=4)
    weights = fn(x, x, x, params)[1]  # (h, n, n)
    Q, K = split_heads(x @ params.w_q, params.h), split_heads(x @ params.w_k, params.h)  # (h, n, d_k) each
    raw = Q @ K.swapaxes(-1, -2)  # (h, n, n): q·k before any scaling
    raw = raw - raw.mean(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):  # a weight of exactly 0 would mean a far-off scale: the fit says so
        log_w = np.log(weights)
    log_w = log_w - log_w.mean(axis=-1, keepdims=True)
    c = float(np.sum(log_w * raw) / np.sum(raw * raw))
    return c * math.sqrt(params.d_k)


def check_head_scale(fn: Callable) -> CheckResult:
    """Every head must divide its scores by √d_k, its own width: the fitted factor must be 1."""
    value = head_scale(fn)
    return CheckResult(
        math.isfinite(value) and abs(value - 1.0) < 1e-6,
        f"the heads scale q·k by {value:.3f} × 1/√d_k with d_model = 16, h = 4, d_k = 4 (must be 1; "
        "1/√d_model would give 1/√h = 0.5)",
        value,
    )


def check_permutation_equivariance(fn: Callable) -> CheckResult:
    """Self-attention without positions must commute with reordering the tokens: f(P x) = P f(x)."""
    x, params = _self_attention_case(3)
    perm = np.random.default_rng(3).permutation(len(x))
    out, out_perm = fn(x, x, x, params)[0], fn(x[perm], x[perm], x[perm], params)[0]
    error = float(np.abs(out_perm - out[perm]).max())
    return CheckResult(
        error < 1e-9,
        f"max |f(P x) - P f(x)| = {error:.2e} after permuting the tokens (must be 0 up to rounding, ~1e-16)",
        error,
    )


def check_heads_differ(fn: Callable) -> CheckResult:
    """Heads with different random projections must produce different attention maps."""
    x, params = _self_attention_case(4, n=6, d_model=16, h=4)
    w = fn(x, x, x, params)[1]  # (h, n, n)
    spread = float(np.abs(w - w[0]).max())
    return CheckResult(
        spread > 1e-3,
        f"largest difference between head 0's weights and any other head's = {spread:.3f} "
        "(0 means every head computes the same map)",
        spread,
    )


def check_uses_w_o(fn: Callable) -> CheckResult:
    """Without biases the output is linear in W^O: doubling W^O must double the output."""
    x, params = _self_attention_case(5)
    out = fn(x, x, x, params)[0]
    out2 = fn(x, x, x, dataclasses.replace(params, w_o=2 * params.w_o))[0]
    change = float(np.linalg.norm(out2 - out) / np.linalg.norm(out))
    return CheckResult(
        abs(change - 1.0) < 1e-9,
        f"doubling W^O changed the output by {100 * change:.0f}% (must be 100%)",
        change,
    )


def check_head_blocks(fn: Callable) -> CheckResult:
    """Switch head 1 off by zeroing its block of W^O: then head 1's own W^V must not affect the output."""
    x, params = _self_attention_case(6)
    off = params.without_heads([1])
    cols = slice(params.d_k, 2 * params.d_k)  # head 1's columns of W^V, and its rows of W^O
    w_v = off.w_v.copy()
    w_v[:, cols] = np.random.default_rng(6).normal(size=(params.d_model, params.d_k))
    moved = float(np.abs(fn(x, x, x, dataclasses.replace(off, w_v=w_v))[0] - fn(x, x, x, off)[0]).max())
    return CheckResult(
        moved < 1e-12,
        f"with head 1 switched off (rows {cols.start}..{cols.stop - 1} of W^O zeroed), changing head 1's W^V "
        f"moves the output by up to {moved:.3f} (must be 0)",
        moved,
    )


def check_rejects_indivisible(fn: Callable) -> CheckResult:
    """split(x, h) must raise a ValueError naming h when h does not divide d_model, and split columns otherwise."""
    x = np.arange(12.0).reshape(1, 12)  # (n=1, d_model=12): feature j holds the value j
    good = np.asarray(fn(x, 3))  # (3, 1, 4)
    if good.shape != (3, 1, 4) or not all(np.array_equal(good[i, 0], x[0, 4 * i : 4 * i + 4]) for i in range(3)):
        return CheckResult(False, f"split of d_model=12 into h=3 heads is wrong: got shape {good.shape}", math.nan)
    x = np.arange(10.0).reshape(1, 10)  # (n=1, d_model=10)
    try:
        out = np.asarray(fn(x, 3))
    except ValueError as exc:
        names_h = re.search(r"\bh\b", str(exc)) is not None  # the message must say which argument is wrong
        return CheckResult(names_h, f"d_model=10, h=3 raises ValueError: {exc}", 0.0)
    kept = np.unique(out)
    dropped = sorted(set(range(10)) - set(kept.astype(int).tolist()))
    return CheckResult(
        False,
        f"d_model=10, h=3 returns shape {out.shape} without complaint: the heads hold {kept.size} of 10 features, "
        f"feature(s) {dropped} silently dropped",
        float(len(dropped)),
    )


def check_stable_softmax(fn: Callable) -> CheckResult:
    """softmax is shift-invariant: softmax([1000, 999, 998]) must equal softmax([2, 1, 0]), with no NaN."""
    big, small = np.array([1000.0, 999.0, 998.0]), np.array([2.0, 1.0, 0.0])
    with np.errstate(all="ignore"):  # the naive version overflows: measure it, without printing warnings
        y, y_ref = np.asarray(fn(big)), np.asarray(fn(small))
    error = float(np.abs(y - y_ref).max()) if np.isfinite(y).all() else math.inf
    return CheckResult(
        error < 1e-12,
        f"softmax([1000, 999, 998]) = {np.array2string(y, precision=3)}, "
        f"softmax([2, 1, 0]) = {np.array2string(y_ref, precision=3)} (must be equal)",
        error,
    )


# ------------------------------------------------------------------------------------------------------
# The registry: the lesson loops over it and the tests parametrize over it.
# ------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Mistake:
    """One mistake: its buggy function, the correct core function with the same signature, and its check."""

    name: str
    title: str
    buggy: Callable
    correct: Callable
    check: Callable[[Callable], CheckResult]
    explanation: str


MISTAKES: dict[str, Mistake] = {
    m.name: m
    for m in (
        Mistake(
            "no_scale",
            "forgetting the 1/√d_k scale",
            attention_no_scale,
            scaled_dot_product_attention,
            check_scaled,
            "q·k sums d_k products, so its spread grows like √d_k; dividing by √d_k keeps the softmax soft.",
        ),
        Mistake(
            "scale_d_model",
            "scaling by √d_model instead of √d_k",
            mha_scale_d_model,
            multi_head_attention,
            check_head_scale,
            "A head's q·k sums d_k products: divide by √d_k; √d_model flattens every head √h times too much.",
        ),
        Mistake(
            "wrong_axis",
            "softmax over the wrong axis",
            attention_wrong_axis,
            scaled_dot_product_attention,
            check_rows_sum_to_one,
            "Each query distributes one unit of attention over the keys: softmax along the last (key) axis.",
        ),
        Mistake(
            "mask_after_softmax",
            "masking after the softmax",
            attention_mask_after_softmax,
            scaled_dot_product_attention,
            check_causal,
            "Mask the scores with -inf before the softmax, so the allowed keys share the whole unit.",
        ),
        Mistake(
            "mask_with_zero",
            "masking with 0 instead of -inf",
            attention_mask_with_zero,
            scaled_dot_product_attention,
            check_causal,
            "exp(0) = 1 is not 0: a masked score must be -inf so that exp gives exactly 0.",
        ),
        Mistake(
            "flipped_mask",
            "a mask with the opposite convention",
            attention_flipped_mask,
            scaled_dot_product_attention,
            check_causal,
            "Here True = may attend; PyTorch's nn.MultiheadAttention attn_mask means True = blocked: invert (~mask).",
        ),
        Mistake(
            "reshape_only",
            "splitting heads with reshape but no transpose",
            mha_reshape_only,
            multi_head_attention,
            check_permutation_equivariance,
            "Reshape to (n, h, d_k), then swap to (h, n, d_k): a head is a slab of features, not of tokens.",
        ),
        Mistake(
            "same_projection",
            "the same projection for every head",
            mha_same_projection,
            multi_head_attention,
            check_heads_differ,
            "Head i must use its own columns i·d_k:(i+1)·d_k of W^Q, W^K, W^V, or all heads ask one question.",
        ),
        Mistake(
            "no_w_o",
            "forgetting W^O",
            mha_without_w_o,
            multi_head_attention,
            check_uses_w_o,
            "Without W^O each output feature comes from one head only, and W^O's weights never train.",
        ),
        Mistake(
            "concat_order",
            "concatenating heads in the wrong order for W^O",
            mha_stacked_concat,
            multi_head_attention,
            check_head_blocks,
            "Concatenate head 0, head 1, ... side by side: W^O's row block i reads head i's d_k features.",
        ),
        Mistake(
            "indivisible",
            "d_model not divisible by h",
            split_heads_int_division,
            split_heads,
            check_rejects_indivisible,
            "d_k = d_model / h must be whole; fail loudly instead of dropping features with //.",
        ),
        Mistake(
            "naive_softmax",
            "a softmax without max-subtraction",
            softmax_naive,
            softmax,
            check_stable_softmax,
            "Subtract the row max before exp: same result (softmax is shift-invariant), and exp never exceeds 1.",
        ),
    )
}


# ------------------------------------------------------------------------------------------------------
# Measurements behind the lesson's pictures.
# ------------------------------------------------------------------------------------------------------


def head_ownership_of_split(split: Callable, n: int, d_model: int, h: int) -> np.ndarray:
    """(n, d_model) integer map: which head split(x, h) hands each (token, feature) entry of x to; -1 = none."""
    ids = np.arange(n * d_model, dtype=np.float64).reshape(n, d_model)  # entry (t, j) holds its flat index
    heads = np.asarray(split(ids, h))  # (h, n, d_k)
    owner = np.full(n * d_model, -1)
    for i in range(h):
        owner[heads[i].ravel().astype(int)] = i
    return owner.reshape(n, d_model)


def head_ownership_of_merge(merge: Callable, n: int, h: int, d_k: int) -> np.ndarray:
    """(n, h*d_k) integer map: which head wrote each entry of merge(heads), the concatenation W^O reads."""
    heads = np.broadcast_to(np.arange(h, dtype=np.float64)[:, None, None], (h, n, d_k))  # head i holds the value i
    return np.asarray(merge(np.ascontiguousarray(heads))).astype(int)


def stacked_column_order(h: int, d_k: int) -> np.ndarray:
    """(h*d_k,) perm: column c of merge_heads_stacked's output is column perm[c] of merge_heads' output.

    Stacking on the last axis gives (n, d_k, h), so flattened column c holds feature c // h of head c % h,
    which merge_heads puts at column (c % h) * d_k + c // h.
    """
    c = np.arange(h * d_k)
    return (c % h) * d_k + c // h


def head_influence(fn: Callable, params: MHAParams, x: np.ndarray, seed: int = 0) -> np.ndarray:
    """(h, d_model): mean |change| of each output feature when only head i's W^V columns are perturbed."""
    base = fn(x, x, x, params)[0]  # (n, d_model)
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(params.h):
        w_v = params.w_v.copy()
        w_v[:, i * params.d_k : (i + 1) * params.d_k] += rng.normal(size=(params.d_model, params.d_k))
        rows.append(np.abs(fn(x, x, x, dataclasses.replace(params, w_v=w_v))[0] - base).mean(axis=0))
    return np.stack(rows)  # (h, d_model)
