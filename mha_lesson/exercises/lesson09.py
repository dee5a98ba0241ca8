"""The capstone checks of lesson 9: the learner's own multi-head attention against the library's, in two stages.

check_attention(fn): stage 1, one head's scaled dot-product attention, fn(Q, K, V, mask) -> (out, weights), against
mha.scaled_dot_product_attention on HEAD_CASES. check_capstone(fn, split, merge): stage 2, the whole layer,
fn(q, k, v, params, mask), with the learner's own split and merge of the heads (checked first by
check_split_merge(split, merge), against mha.split_heads and mha.merge_heads on SPLIT_CASES: one sequence, a batch
and two leading axes), on CASES (simplest first: random shapes, one head and many, a causal mask, a padded batch, a
batch with causal and padding masks, cross-attention alone and in a padded batch, two leading axes, a query that may
see no key) against mha.multi_head_attention.
Each names the first case that fails and one entry that came out wrong against what was expected; when the result
equals that of a known mistake (no scale, d_k for √d_k, √d_model, √ of another axis's length (n_q, n_kv, h: d_k
read from a fixed axis such as Q.shape[1]), the mask, a -1e9 mask with a plain softmax or added as a bias, no
softmax, the softmax's axis, the output from the transposed weights, the head split (a reshape alone, d_k before h,
np.stack(np.split(...)) on axis 0, .T, the axes in another order), W^O missing or transposed, keys from q, values
from k, keys and values projected with each other's matrices, the weights averaged over the heads, one big head
never split, ...), when the weights are negative (no softmax made them), when the pair comes back as (weights,
output), or when the error or a shape is numpy's answer to a wrong transpose of the keys (`K.T` on a stack of heads,
no transpose, K.swapaxes(0, 1) or another pair counted from the front, fixed axes on arrays with another number of
axes), to the weights' .T before V, to sizes unpacked from a shape for one number of axes (n, d_model = x.shape), to
a mask given an extra axis, to heads split with swapaxes(0, 1) or stacked on axis 0 on a batch, to reshape sizes
fixed for one case (numbers, or x.shape[0] read as the tokens), to a merge by np.concatenate(list(x), axis=-1) on a
batch, or to a float size from d_model / h, it says which ("Cause:") and what to change ("Fix:"); a split, merge or
layer that fails only on two leading axes is told that the leading ... may be any number of axes. The words of
each known mistake's cause and fix are in capstone_messages (those built from a case's shapes stay beside the
code that reads them); this module decides which one an answer earns.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
import traceback
from collections.abc import Callable

import numpy as np

from ..attention import causal_mask, padding_mask, scaled_dot_product_attention, softmax
from ..heads import merge_heads, split_heads
from ..multihead import multi_head_attention
from ..projections import MHAParams, init_params
from ._base import Feedback, right, wrong
from .capstone_messages import (  # the words; this module decides which apply
    AVERAGED,
    AXES_ORDER,
    BIG_NEGATIVE,
    BIG_NEGATIVE_ADDED,
    BY_D_K,
    BY_D_MODEL,
    CONCAT,
    D_K_H,
    D_K_H_BOTH,
    FIX_MASK,
    FIXED_AXES,
    FLIPPED,
    FLOAT_SIZE,
    IGNORED,
    KEYS_AMBIGUOUS,
    KEYS_FROM_Q,
    KEYS_SWAP,
    KV_SWAPPED,
    LAYER_SIZES,
    LEADING,
    MASK_AFTER,
    MASK_ZERO,
    MERGE_D_K_H,
    MERGE_RESHAPE_ONLY,
    MERGE_SIZES,
    NAN_ROW,
    NEGATIVE_WEIGHTS,
    NO_SCALE,
    NO_SOFTMAX,
    NO_TRANSPOSE,
    NO_W_O,
    ONE_HEAD,
    ORDER,
    RESHAPE_ONLY,
    RESHAPE_ONLY_BOTH,
    SOFTMAX_AXIS,
    SPLIT_D_K_H,
    SPLIT_SIZES,
    STACK,
    SWAP_01,
    T_SPLIT,
    TRANSPOSE,
    TRANSPOSE_OR_NONE,
    UNPACK,
    UNPACK_NAMES,
    VALUES_FROM_K,
    W_O_TRANSPOSED,
    WEIGHTS_T,
    WEIGHTS_TRANSPOSED,
    X_T_SPLIT,
)


@dataclasses.dataclass(frozen=True)
class Case:
    """One call of the learner's function: its name and the arguments (q, k, v, params, mask)."""

    name: str
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    params: MHAParams
    mask: np.ndarray | None = None


def _self(name: str, n: int, d_model: int, h: int, seed: int, mask: np.ndarray | None = None) -> Case:
    """A self-attention case on n random tokens (bias-free Glorot weights; q = k = v = x)."""
    x = np.random.default_rng(seed).normal(size=(n, d_model))  # (n, d_model)
    return Case(name, x, x, x, init_params(d_model, h, seed=seed), mask)


def _cases() -> list[Case]:
    """The capstone's cases, simplest first, each with its own seed."""
    batch = np.random.default_rng(5).normal(size=(3, 5, 8))  # (batch, n, d_model): three sequences of 5 tokens
    decoders = np.random.default_rng(9).normal(size=(2, 6, 8))  # two decoder sequences of 6 tokens
    decoder, encoder = np.random.default_rng(6).normal(size=(4, 8)), np.random.default_rng(7).normal(size=(6, 8))
    encoder_v = np.random.default_rng(11).normal(size=(6, 8))  # values other than the keys: v must be read, not k
    encoders = np.random.default_rng(10).normal(size=(2, 7, 8))  # two encoder sequences, padded to 7 tokens
    encoders_v = np.random.default_rng(12).normal(size=(2, 7, 8))
    nested = np.random.default_rng(13).normal(size=(2, 3, 5, 8))  # two leading axes: 2 groups of 3 sequences
    blind = causal_mask(5)
    blind[2] = False  # query 2 may see no key at all
    return [
        _self("self-attention, 5 tokens, d_model = 8, h = 2", 5, 8, 2, seed=1),
        _self("one head, d_model = 6", 4, 6, 1, seed=2),
        _self("many narrow heads, d_model = 12, h = 4", 7, 12, 4, seed=3),
        _self("causal mask (True = may attend)", 6, 8, 2, seed=4, mask=causal_mask(6)),
        Case(
            "a batch of 3 sequences with a padding mask of shape (3, 1, 1, 5)",
            batch,
            batch,
            batch,
            init_params(8, 2, seed=5),
            padding_mask([5, 3, 1], 5),
        ),
        Case(
            "a batch of 2 with causal and padding masks, (6, 6) & (2, 1, 1, 6)",
            decoders,
            decoders,
            decoders,
            init_params(8, 2, seed=9),
            causal_mask(6) & padding_mask([6, 4], 6),
        ),
        Case(
            "cross-attention: 4 queries, 6 keys and 6 values (v other numbers than k)",
            decoder,
            encoder,
            encoder_v,
            init_params(8, 2, seed=6),
        ),
        Case(
            "cross-attention in a batch of 2: 6 queries, 7 padded keys, mask (2, 1, 1, 7)",
            decoders,
            encoders,
            encoders_v,
            init_params(8, 4, seed=10),
            padding_mask([7, 3], 7),
        ),
        Case(
            "two leading axes: (2, 3, 5, 8), 2 groups of 3 sequences, padding mask (2, 3, 1, 1, 5)",
            nested,
            nested,
            nested,
            init_params(8, 2, seed=13),
            padding_mask([5, 3, 1, 4, 2, 5], 5).reshape(2, 3, 1, 1, 5),
        ),
        _self("a query that may see no key (row 2 of the mask all False)", 5, 8, 2, seed=8, mask=blind),
    ]


CASES = _cases()


_UNPACK_ERROR = re.compile(r"(too many|not enough) values to unpack \(expected (\d+)(?:, got (\d+))?\)")


def unpack_hint(exc: BaseException) -> str | None:
    """UNPACK when exc is Python's error for sizes unpacked from a shape (n, d_model = x.shape) with another number of
    axes, else None.

    The line that raised must read a shape (.shape or np.shape) when its source is known: another unpacking, such as
    out, weights = a function's three results, gives the same words and gets no cause.
    """
    found = _UNPACK_ERROR.fullmatch(str(exc)) if isinstance(exc, ValueError) else None
    if found is None:
        return None
    frames = traceback.extract_tb(exc.__traceback__)
    code = (frames[-1].line or "").split("#")[0] if frames else ""  # the line's code, without its comment
    if code.strip() and re.search(r"\bshape\b", code) is None:
        return None
    k = int(found[2])
    this = f"this one has {found[3]}" if found[3] else f"this one has {'fewer' if found[1] == 'not enough' else 'more'}"
    names = UNPACK_NAMES.get(k, ", ".join("abcdefgh"[:k]))
    return UNPACK.format(k=k, names=names, this=this)


def leading_hint(shape: tuple[int, ...]) -> str | None:
    """LEADING for an input (..., n, d) with two leading axes or more (every case with fewer passed), else None."""
    lead = tuple(shape[:-2])
    if len(lead) < 2:
        return None
    return LEADING.format(count={2: "two", 3: "three"}.get(len(lead), str(len(lead))), lead=lead)


def _axis_names(ndim: int) -> list[str]:
    """The names of the axes of heads (..., h, n, d_k) with ndim axes, for a message."""
    lead = ndim - 3
    leading = ["batch"] if lead == 1 else [f"batch axis {i}" for i in range(lead)]
    return [*leading, "heads", "tokens", "d_k"][-ndim:]


def _shape_texts(shape: tuple[int, ...]) -> tuple[str, str]:
    """A shape as numpy's errors print it, (3,1,5), and as Python does, (3, 1, 5)."""
    return "(" + ",".join(map(str, shape)) + ")", str(tuple(shape))


def _loop_shape(mask_shape: tuple[int, ...], weights_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The weights' shape when a loop over heads hands the whole mask to each head's (..., n_q, n_kv) scores."""
    try:
        one = np.broadcast_shapes(mask_shape, weights_shape[:-3] + weights_shape[-2:])
    except ValueError:
        return None
    return one[:-2] + weights_shape[-3:-2] + one[-2:]  # the heads stacked at axis -3


def mask_axis_hint(
    mask: object, weights_shape: tuple[int, ...], text: str, got_shape: tuple | None = None
) -> str | None:
    """Why a mask given one axis too many (mask[None], mask[:, None], mask[..., None], ...) fails, or None.

    Recognised by the shapes: the extra-axis mask's shape in numpy's error (text), or the weights' shape got_shape
    equal to what that mask broadcasts the scores to. A loop over heads that hands the whole mask to one head's
    (..., n_q, n_kv) scores can give the same weights, number for number: then the hint names both.
    """
    if not isinstance(mask, np.ndarray):
        return None
    given = (
        f"The mask as given, {mask.shape}, already broadcasts to the weights' shape (..., h, n_q, n_kv) = "
        f"{weights_shape}: its axes are the last ones, and its 1s stand in for the axes it does not vary along."
    )
    extras = [np.expand_dims(mask, axis).shape for axis in range(mask.ndim + 1)]
    for extra in extras:
        if "broadcast" in text and _shape_texts(extra)[0] in text:
            return f"the mask got an extra axis, shape {extra}. {given} Fix: pass it on unchanged, " + FIX_MASK
    if got_shape is None or tuple(got_shape) == tuple(weights_shape):
        return None
    spread = []
    for extra in extras:
        try:
            spread.append((extra, np.broadcast_shapes(extra, weights_shape)))
        except ValueError:
            continue
    extra = next((e for e, shape in spread if shape == tuple(got_shape)), None)
    if got_shape == _loop_shape(mask.shape, weights_shape):
        loop = "in a loop over heads, it met one head's scores (..., n_q, n_kv), with no heads axis for its own to meet"
        why = (
            f"Either it got an extra axis (shape {extra}), or, {loop}."
            if extra is not None
            else f"{loop[0].upper()}{loop[1:]}."
        )
        return (
            f"the mask spread the scores over one axis too many. {why} {given} Fix: apply it unchanged to all heads' "
            f"scores (..., h, n_q, n_kv) at once, {FIX_MASK} In a loop, give head i np.broadcast_to(mask, "
            "scores.shape)[..., i, :, :], with scores all heads' scores."
        )
    if extra is not None:
        return f"the mask got an extra axis, shape {extra}. {given} Fix: pass it on unchanged, " + FIX_MASK
    return None


def _masked(scores: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    """The scores with the mask applied one way: "-inf" (right), "flipped", "zero", "-1e9" or "+-1e9" (mistakes)."""
    allowed = ~mask if mode == "flipped" else mask
    if mode == "zero":
        return scores * allowed
    if mode == "+-1e9":  # the mask as an additive bias (Hugging Face's style, PyTorch's float attn_mask)
        return scores + np.where(mask, 0.0, -1e9)
    return np.where(allowed, scores, -1e9 if mode == "-1e9" else -np.inf)


def plain_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """The textbook softmax, exp(x - max) / sum: NaN for a row that is all -inf, uniform for one all -1e9."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _error(product: Callable[[], object]) -> str | None:
    """The message of the ValueError numpy raises for product(), or None when it works."""
    try:
        with np.errstate(all="ignore"):
            product()
    except ValueError as exc:
        return str(exc)
    return None


def transpose_error(Q: np.ndarray, K: np.ndarray) -> str | None:
    """The error message numpy gives for Q @ K.T (the all-axes transpose), or None when that product works."""
    return _error(lambda: Q @ K.T)


def transpose_hint(Q: np.ndarray, K: np.ndarray, message: str) -> str | None:
    """Which wrong transpose of the keys gives numpy's error message on these heads (..., n, d_k), or None.

    Q @ K.T and Q @ K (no transpose) often give the same message; a fixed-axes transpose on a batch gives its own; a
    swap of two axes counted from the front (K.swapaxes(0, 1) on a stack of heads, K.swapaxes(1, 2) on a batch) may
    give K.T's or no transpose's message: then the hint names each that gives it.
    """
    with_t, without = transpose_error(Q, K), _error(lambda: Q @ K)
    pairs = [(a, a + 1) for a in range(min(2, K.ndim - 2))]  # not the last two axes: wrong on these keys
    swapped = [(a, b) for a, b in pairs if message == _error(lambda a=a, b=b: Q @ K.swapaxes(a, b))]
    if not swapped:
        if message == with_t:
            return TRANSPOSE_OR_NONE if with_t == without else TRANSPOSE
        if message == without:
            return NO_TRANSPOSE
        return FIXED_AXES if message == "axes don't match array" else None
    names = _axis_names(K.ndim)
    if len(swapped) == 1 and message not in (with_t, without):
        (a, b), shape = swapped[0], K.shape
        return KEYS_SWAP.format(a=a, b=b, shape=shape, first=names[a], second=names[b])
    which = ["K.T (it reverses every axis)"] if message == with_t else []
    which += ["no transpose at all"] if message == without else []
    which += [f"K.swapaxes({a}, {b}) (it swaps the {names[a]} and the {names[b]})" for a, b in swapped]
    listed = ", ".join(which[:-1]) + " and " + which[-1]
    return KEYS_AMBIGUOUS.format(shape=K.shape, which=listed, fix="Fix: count from the end: K.swapaxes(-1, -2).")


def weights_transpose_hint(weights: np.ndarray, V: np.ndarray, message: str) -> str | None:
    """WEIGHTS_T when message is numpy's error for weights.T @ V on these (right) weights and values, else None."""
    if weights.ndim < 3 or message != _error(lambda: weights.T @ V):
        return None
    return WEIGHTS_T.format(shape=weights.shape, flipped=weights.shape[::-1])


def _error_hint(heads: tuple[np.ndarray, ...], weights: np.ndarray, message: str) -> str | None:
    """The hint for numpy's error message on these heads (Q, K) or (Q, K, V) and right weights, or None."""
    hint = transpose_hint(heads[0], heads[1], message)
    if hint is None and len(heads) > 2:
        hint = weights_transpose_hint(weights, heads[2], message)
    return hint


def _variant(
    case: Case,
    *,
    scale: str | int = "d_k",
    mask_mode: str = "-inf",
    axis: int = -1,
    split_transpose: bool = True,
    merge_transpose: bool = True,
    d_k_first: bool = False,
    merge_d_k_first: bool = False,
    weights_transposed: bool = False,
    w_o: bool = True,
    w_o_transposed: bool = False,
    kv_from_q: bool = False,
    v_from_k: bool = False,
    kv_swapped: bool = False,
    use_softmax: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """multi-head attention on case with one deliberate change; the defaults give the correct result."""
    p = case.params
    h, d_k = p.h, p.d_k
    k, v = (case.q, case.q) if kv_from_q else (case.k, case.k if v_from_k else case.v)
    w_k, w_v = (p.w_v, p.w_k) if kv_swapped else (p.w_k, p.w_v)  # the mistake: each other's projections

    def split(x: np.ndarray) -> np.ndarray:  # (..., n, d_model) -> (..., h, n, d_k)
        if d_k_first:  # the mistake: (..., n, d_k, h), so head i gets every h-th column
            return np.moveaxis(x.reshape(*x.shape[:-1], d_k, h), -1, -3)
        if split_transpose:
            return x.reshape(*x.shape[:-1], h, d_k).swapaxes(-3, -2)
        return x.reshape(*x.shape[:-2], h, x.shape[-2], d_k)  # the reshape-only mistake: heads of tokens

    Q, K, V = split(case.q @ p.w_q), split(k @ w_k), split(v @ w_v)
    heads, weights = _attend(  # (..., h, n_q, d_k) and (..., h, n_q, n_kv)
        Q, K, V, case.mask, _divisor(scale, d_k, p.d_model), mask_mode, axis, use_softmax, weights_transposed
    )
    if merge_d_k_first:  # the split's mirror image: (..., n, d_k, h), then the reshape
        concat = np.moveaxis(heads, -3, -1).reshape(*heads.shape[:-3], heads.shape[-2], h * d_k)
    elif merge_transpose:
        concat = heads.swapaxes(-3, -2).reshape(*heads.shape[:-3], heads.shape[-2], h * d_k)  # (..., n_q, d_model)
    else:
        concat = heads.reshape(*heads.shape[:-3], heads.shape[-2], h * d_k)  # the mirror image: tokens mixed
    if not w_o:
        return concat, weights
    return concat @ (p.w_o.T if w_o_transposed else p.w_o), weights


def _divisor(scale: str | int, d_k: int, d_model: int) -> float:
    """What the scores are divided by: "d_k" gives √d_k (right); "d_model", "none" and "d_k, no root" are mistakes, and
    so is a whole number, the length of another axis (n_q, n_kv, h, ...), whose square root it gives."""
    if isinstance(scale, int):
        return math.sqrt(scale)
    return {"d_k": math.sqrt(d_k), "d_model": math.sqrt(d_model), "none": 1.0, "d_k, no root": float(d_k)}[scale]


def _attend(
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    mask: np.ndarray | None,
    divisor: float,
    mask_mode: str,
    axis: int,
    use_softmax: bool,
    weights_transposed: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Attention, Q (..., n_q, d_k) against K, V (..., n_kv, d_k), with the given mistakes (both stages share it):
    the scores divided by divisor, the mask applied by mask_mode, the softmax over axis (or none), the weights
    transposed before V. -> (output (..., n_q, d_k), weights (..., n_q, n_kv))."""
    scores = Q @ K.swapaxes(-1, -2) / divisor
    if mask is not None and mask_mode not in ("ignored", "after"):
        scores = _masked(scores, mask, mask_mode)
    if not use_softmax:
        weights = scores
    else:
        weights = (plain_softmax if mask_mode in ("-1e9", "+-1e9") else softmax)(scores, axis=axis)
    if mask is not None and mask_mode == "after":  # the mistake: zero the masked weights of finished rows
        weights = np.where(mask, weights, 0.0)
    return (weights.swapaxes(-1, -2) if weights_transposed else weights) @ V, weights


MISTAKES: dict[str, tuple[dict, str]] = {
    "no scale": ({"scale": "none"}, NO_SCALE),
    "d_k, no root": ({"scale": "d_k, no root"}, BY_D_K),
    "√d_model": ({"scale": "d_model"}, BY_D_MODEL),
    "flipped mask": ({"mask_mode": "flipped"}, FLIPPED),
    "mask ignored": ({"mask_mode": "ignored"}, IGNORED),
    "mask with 0": ({"mask_mode": "zero"}, MASK_ZERO),
    "mask after softmax": ({"mask_mode": "after"}, MASK_AFTER),
    "mask with -1e9": ({"mask_mode": "-1e9"}, BIG_NEGATIVE),
    "mask added as -1e9": ({"mask_mode": "+-1e9"}, BIG_NEGATIVE_ADDED),
    "softmax axis": ({"axis": -2}, SOFTMAX_AXIS),
    "no softmax": ({"use_softmax": False}, NO_SOFTMAX),
    "reshape only": ({"split_transpose": False}, RESHAPE_ONLY),
    "reshape only, both ways": ({"split_transpose": False, "merge_transpose": False}, RESHAPE_ONLY_BOTH),
    "merge by reshape": ({"merge_transpose": False}, MERGE_RESHAPE_ONLY),
    "no W^O": ({"w_o": False}, NO_W_O),
    "W^O transposed": ({"w_o_transposed": True}, W_O_TRANSPOSED),
    "keys from q": ({"kv_from_q": True}, KEYS_FROM_Q),
    "values from k": ({"v_from_k": True}, VALUES_FROM_K),
    "keys and values swapped": ({"kv_swapped": True}, KV_SWAPPED),
    "weights transposed": ({"weights_transposed": True}, WEIGHTS_TRANSPOSED),
    "d_k before h": ({"d_k_first": True}, SPLIT_D_K_H),
    "d_k before h, both ways": ({"d_k_first": True, "merge_d_k_first": True}, D_K_H_BOTH),
}


def _matches(got: tuple[np.ndarray, np.ndarray], want: tuple[np.ndarray, np.ndarray]) -> bool:
    """True when output and weights agree in shape and value (NaN never agrees)."""
    return all(g.shape == w.shape and np.allclose(g, w, rtol=1e-6, atol=1e-9) for g, w in zip(got, want, strict=True))


def diagnose(case: Case, got: tuple[np.ndarray, np.ndarray]) -> str | None:
    """The explanation of the known mistake whose result on case equals got, or None."""
    for changes, explanation in MISTAKES.values():
        try:
            with np.errstate(all="ignore"):
                variant = _variant(case, **changes)
        except ValueError:  # a mistake that cannot run on this case's shapes (the weights transposed, n_q ≠ n_kv)
            continue
        if _matches(got, variant):
            return explanation
    p = case.params
    q_heads = (*case.q.shape[:-2], p.h, case.q.shape[-2], p.d_k)  # (..., h, n_q, d_k)
    k_heads = (*case.k.shape[:-2], p.h, case.k.shape[-2], p.d_k)
    hint = scale_length_diagnosis(got, q_heads, k_heads, lambda length: _variant(case, scale=length))
    return hint or _weights_diagnosis(case, got[1])


def scale_length_hint(q_shape: tuple[int, ...], k_shape: tuple[int, ...], length: int) -> str:
    """Why scores divided by √length, the length of another axis of the heads Q, K (..., n, d_k), are wrong."""
    d_k = q_shape[-1]
    names = []
    if q_shape[-2] == length and k_shape[-2] == length:
        names.append(f"the number of tokens (n_q = n_kv = {length})")
    elif q_shape[-2] == length:
        names.append("the number of queries n_q")
    elif k_shape[-2] == length:
        names.append("the number of keys n_kv")
    if len(q_shape) > 2 and q_shape[-3] == length:
        names.append("the number of heads h")
    if length in q_shape[:-3]:
        names.append("a batch size")
    text = (
        f"the scores are divided by √{length}, {' and '.join(names)}, not by √d_k = √{d_k}: each score is a dot "
        f"product of d_k = {d_k} terms."
    )
    front = next((i for i in range(len(q_shape) - 1) if q_shape[i] == length), None)  # a fixed axis giving length
    if front is not None:
        text += f" On these heads, Q of shape {q_shape}, {length} is also Q.shape[{front}]"
        text += f", and Q.shape[{front}] is d_k only on arrays of {front + 1} axes." if front else "."
    return text + " Fix: d_k = Q.shape[-1], counted from the end: divide by np.sqrt(Q.shape[-1])."


def scale_length_diagnosis(
    got: tuple[np.ndarray, np.ndarray],
    q_shape: tuple[int, ...],
    k_shape: tuple[int, ...],
    variant: Callable[[int], tuple[np.ndarray, np.ndarray]],
) -> str | None:
    """scale_length_hint when got equals variant(length), the scores divided by √length for the length of an axis of
    the heads other than d_k (n_q, n_kv, h, a batch: d_k read from a fixed axis, or n for d_k), else None."""
    for length in sorted({*q_shape[:-1], k_shape[-2]} - {1, q_shape[-1]}):  # 1 is no scale: its own cause
        with np.errstate(all="ignore"):
            if _matches(got, variant(length)):
                return scale_length_hint(q_shape, k_shape, length)
    return None


def _weights_diagnosis(case: Case, weights: np.ndarray) -> str | None:
    """ONE_HEAD or AVERAGED when the weights are one big head's, or the right weights averaged over the heads."""
    p = case.params
    with np.errstate(all="ignore"):
        for divisor in (math.sqrt(p.d_model), math.sqrt(p.d_k)):  # one big head, scaled either way
            scores = (case.q @ p.w_q) @ (case.k @ p.w_k).swapaxes(-1, -2) / divisor  # (..., n_q, n_kv)
            try:
                one = softmax(scores if case.mask is None else np.where(case.mask, scores, -np.inf), axis=-1)
            except ValueError:  # the mask does not broadcast to one big head's scores
                continue
            if _matches((weights,), (one,)):
                return ONE_HEAD
        right_weights = _variant(case)[1]  # (..., h, n_q, n_kv)
    return AVERAGED if _matches((weights,), (right_weights.mean(axis=-3),)) else None


# --- the check -------------------------------------------------------------------------------------------------
def _as_pair(result: object, reference: str = "mha.multi_head_attention") -> tuple[np.ndarray, np.ndarray] | str:
    """The function's result as (output, weights) float arrays, or what is wrong with it (reference: the library's
    function that the stage compares to)."""
    if not isinstance(result, tuple | list) or len(result) != 2:
        return f"returned {type(result).__name__}; return a pair (output, weights), as {reference} does"
    try:
        return tuple(np.asarray(a, dtype=float) for a in result)  # type: ignore[return-value]
    except (TypeError, ValueError):
        return "returned something that is not two arrays of numbers"


def _difference(name: str, got: np.ndarray, want: np.ndarray) -> str:
    """What came against what was expected, at the worst index: a shape, a NaN, or a value."""
    if got.shape != want.shape:
        return f"{name} have shape {got.shape}, expected {want.shape}"
    bad = ~np.isfinite(got)
    where = np.unravel_index(bad.argmax() if bad.any() else np.abs(got - want).argmax(), got.shape)
    index = ", ".join(str(int(i)) for i in where)
    return f"{name}[{index}] is {got[where]:.3g}, expected {want[where]:.3g}"


def check_case(fn: Callable, case: Case) -> str | None:
    """None when fn agrees with the library on case, else a sentence saying how it does not."""
    want = multi_head_attention(case.q, case.k, case.v, case.params, case.mask)
    args = (case.q, case.k, case.v, case.params, case.mask)
    p = case.params
    Q, K, V = (split_heads(x @ w, p.h) for x, w in ((case.q, p.w_q), (case.k, p.w_k), (case.v, p.w_v)))
    problem = _compare(fn, args, want, lambda got: diagnose(case, got), case.mask is not None, (Q, K, V))
    if problem is not None and "Cause:" not in problem and case.q.ndim > 2:
        # heads split with swapaxes(0, 1), or stacked on axis 0: recognised by a shape that only such a split makes
        # (the heads', or the scores' when the product works), in numpy's message
        def swapped(x: np.ndarray) -> np.ndarray:
            return x.reshape(*x.shape[:-1], p.h, p.d_k).swapaxes(0, 1)

        def stacked(x: np.ndarray) -> np.ndarray:
            return np.stack(np.split(x, p.h, axis=-1))

        for split, cause in ((swapped, SWAP_01), (stacked, STACK)):
            Qs, Ks = split(case.q @ p.w_q), split(case.k @ p.w_k)
            shapes = [Qs.shape, Ks.shape]
            if Qs.shape[:-2] == Ks.shape[:-2]:
                shapes.append((*Qs.shape[:-1], Ks.shape[-2]))  # the scores, when the product works
            if any(text in problem for shape in shapes for text in _shape_texts(shape)):
                problem += f" Cause: {cause}"
                break
    if problem is not None and "Cause:" not in problem:
        hint = _layer_shape_hint(case, problem) or leading_hint(case.q.shape)
        problem += f" Cause: {hint}" if hint else ""
    return problem


def _layer_shape_hint(case: Case, problem: str) -> str | None:
    """LAYER_SIZES, SPLIT_SIZES or CONCAT when numpy's error in problem answers a split or merge written for one shape.

    A reshape with sizes for another shape raises "cannot reshape array of size"; a split written for one sequence,
    x.reshape(x.shape[0], h, -1) then a swap, makes (h, batch, n·d_k) heads of a batch, whose shapes (or the scores')
    numpy's error then names; a merge by np.concatenate(list(heads), axis=-1) makes (h, n_q, batch·d_k), which meets
    W^O's d_model rows in matmul's error.
    """
    if "cannot reshape array of size" in problem:
        return LAYER_SIZES
    if case.q.ndim < 3:
        return None
    p = case.params

    def flat(x: np.ndarray) -> np.ndarray:  # the split written for a 2-d x, applied to a batch
        return x.reshape(x.shape[0], p.h, -1).swapaxes(0, 1)

    Qf, Kf = flat(case.q @ p.w_q), flat(case.k @ p.w_k)
    shapes = [Qf.shape, Kf.shape, (*Qf.shape[:-1], Kf.shape[-2])]
    if any(text in problem for shape in shapes for text in _shape_texts(shape)):
        return SPLIT_SIZES
    concat_width = case.q.shape[0] * p.d_k  # np.concatenate(list(heads), axis=-1): the batch side by side
    if concat_width != p.d_model and f"size {p.d_model} is different from {concat_width})" in problem:
        return CONCAT
    return None


def check_capstone(fn: object, split: object = None, merge: object = None) -> Feedback:
    """The capstone: fn(q, k, v, params, mask) must match mha.multi_head_attention on every case of CASES.

    split, merge: the learner's helpers, checked first (check_split_merge), so a wrong split is named as such.
    """
    if split is not None or merge is not None:
        helpers = check_split_merge(split, merge)
        if not helpers:
            return wrong(f"my_split and my_merge first: {helpers.message}")
    if fn is None:
        return wrong("Replace None with your function, e.g. my_multi_head_attention (the name, without calling it).")
    if not callable(fn):
        return wrong(f"Expected a function taking (q, k, v, params, mask), got {type(fn).__name__!r}.")
    for i, case in enumerate(CASES, start=1):
        problem = check_case(fn, case)
        if problem is not None:
            return wrong(f"case {i} of {len(CASES)}, {case.name}: {problem}")
    return right(
        f"all {len(CASES)} cases match mha.multi_head_attention: one head and many, causal and padding masks, "
        "batches, cross-attention and a query with nothing to see. That is the whole layer, from scratch."
    )


# --- stage 1: one head ----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class HeadCase:
    """One call of the learner's attention function: its name and the arguments (Q, K, V, mask)."""

    name: str
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    mask: np.ndarray | None = None


def _head_cases() -> list[HeadCase]:
    """Stage 1's cases, simplest first: (..., n_q, d_k) queries against (..., n_kv, d_k) keys and values."""
    rng = np.random.default_rng(20)
    q, k, v = rng.normal(size=(3, 5, 4))  # each (5, 4): 5 tokens, d_k = 4
    q2, k2, v2 = rng.normal(size=(4, 4)), rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    qh, kh, vh = rng.normal(size=(3, 2, 5, 4))  # each (2, 5, 4): a stack of 2 heads
    blind = causal_mask(5)
    blind[3] = False  # query 3 may see no key at all
    return [
        HeadCase("one head, 5 tokens, d_k = 4", q, k, v),
        HeadCase("4 queries, 6 keys and values", q2, k2, v2),
        HeadCase("a stack of 2 heads, (2, 5, 4), with a causal mask (5, 5)", qh, kh, vh, causal_mask(5)),
        HeadCase("a query that may see no key (row 3 of the mask all False)", q, k, v, blind),
    ]


HEAD_CASES = _head_cases()


def _head_variant(
    case: HeadCase,
    *,
    scale: str | int = "d_k",
    mask_mode: str = "-inf",
    axis: int = -1,
    use_softmax: bool = True,
    weights_transposed: bool = False,
) -> tuple:
    """One head's attention on case with one deliberate change; the defaults give the correct result."""
    d_k = case.q.shape[-1]
    divisor = _divisor(scale, d_k, d_k)
    return _attend(case.q, case.k, case.v, case.mask, divisor, mask_mode, axis, use_softmax, weights_transposed)


# Stage 1's known mistakes: the layer's that happen inside one head's attention (√d_model is √d_k for one head).
HEAD_MISTAKES: dict[str, tuple[dict, str]] = {
    name: MISTAKES[name]
    for name in (
        "no scale",
        "d_k, no root",
        "flipped mask",
        "mask ignored",
        "mask with 0",
        "mask after softmax",
        "mask with -1e9",
        "mask added as -1e9",
        "softmax axis",
        "no softmax",
        "weights transposed",
    )
}


def float_size_hint(exc: BaseException) -> str | None:
    """FLOAT_SIZE when exc is the TypeError numpy raises for a float size (reshape(n, h, d_model / h)), else None."""
    return FLOAT_SIZE if isinstance(exc, TypeError) and "'float' object cannot be interpreted" in str(exc) else None


def _compare(
    fn: Callable,
    args: tuple,
    want: tuple,
    diagnose_fn: Callable[[tuple], str | None],
    masked: bool = True,
    heads: tuple[np.ndarray, np.ndarray] | None = None,
    reference: str = "mha.multi_head_attention",
) -> str | None:
    """None when fn(*args) returns a pair equal to want, else a sentence saying how it differs.

    heads: this case's (Q, K) or (Q, K, V) heads, to recognise numpy's error for a wrong transpose of K (see
    transpose_hint) or of the weights before V (weights_transpose_hint).
    reference: the library's function the stage compares to, named when the result is not a pair in its order.
    """
    try:
        with np.errstate(all="ignore"):  # a NaN is reported as a difference, not printed as a warning
            result = fn(*(a.copy() if isinstance(a, np.ndarray) else a for a in args))
    except Exception as exc:  # a learner's function may fail in any way: report it, do not raise
        hint = unpack_hint(exc)
        if hint is None and heads is not None and isinstance(exc, ValueError):
            hint = _error_hint(heads, want[1], str(exc))
        hint = hint or float_size_hint(exc) or mask_axis_hint(args[-1], want[1].shape, str(exc))
        return f"it raised {type(exc).__name__}: {exc}." + (f" Cause: {hint}" if hint else "")
    got = _as_pair(result, reference)
    if isinstance(got, str):
        return got
    if _matches(got, want):
        return None
    back = (got[1], got[0])  # the pair the other way round
    shapes_swapped = got[0].shape != got[1].shape and [a.shape for a in back] == [a.shape for a in want]
    if shapes_swapped or _matches(back, want):
        shapes = f"the first array has the weights' shape {got[0].shape}, the second the output's {got[1].shape}"
        order = f"it returned (weights, output): {shapes}. Cause: {ORDER.format(reference=reference)}"
        if _matches(back, want):
            return order
        return f"{order} Swapped back, {_explain(back, want, diagnose_fn, args[-1], masked)}"
    return _explain(got, want, diagnose_fn, args[-1], masked)


def _explain(
    got: tuple[np.ndarray, np.ndarray],
    want: tuple[np.ndarray, np.ndarray],
    diagnose_fn: Callable[[tuple], str | None],
    mask: object,
    masked: bool,
) -> str:
    """How a pair (output, weights) that is not want differs from it: one entry, and the cause when one is known."""
    # the weights first: their index names the head, the query and the key
    name, g, w = next(
        (n, g, w)
        for n, g, w in zip(("weights", "output"), got[::-1], want[::-1], strict=True)
        if not _matches((g,), (w,))
    )
    explanation = diagnose_fn(got) or mask_axis_hint(mask, want[1].shape, "", got[1].shape)
    if explanation is None and got[1].shape == want[1].shape and (got[1] < 0).any():
        explanation = NEGATIVE_WEIGHTS  # no softmax gives a negative weight: these are scores, or worse
    if explanation is None and masked and not np.isfinite(got[1]).all():
        explanation = NAN_ROW
    return _difference(name, g, w) + (f". Cause: {explanation}" if explanation else ".")


def check_attention(fn: object) -> Feedback:
    """Stage 1: fn(Q, K, V, mask) must match mha.scaled_dot_product_attention on every case of HEAD_CASES."""
    if fn is None:
        return wrong("Replace None with your function, e.g. my_attention (the name, without calling it).")
    if not callable(fn):
        return wrong(f"Expected a function taking (Q, K, V, mask), got {type(fn).__name__!r}.")
    for i, case in enumerate(HEAD_CASES, start=1):
        want = scaled_dot_product_attention(case.q, case.k, case.v, case.mask)

        def diagnose_head(got: tuple, case: HeadCase = case) -> str | None:
            for changes, explanation in HEAD_MISTAKES.values():
                try:
                    with np.errstate(all="ignore"):
                        variant = _head_variant(case, **changes)
                except ValueError:  # a mistake that cannot run on this case's shapes (the weights transposed)
                    continue
                if _matches(got, variant):
                    return explanation
            return scale_length_diagnosis(
                got, case.q.shape, case.k.shape, lambda length: _head_variant(case, scale=length)
            )

        heads = (case.q, case.k, case.v)
        args = (case.q, case.k, case.v, case.mask)
        problem = _compare(fn, args, want, diagnose_head, True, heads, "mha.scaled_dot_product_attention")
        if problem is not None:
            return wrong(f"case {i} of {len(HEAD_CASES)}, {case.name}: {problem}")
    return right(
        f"all {len(HEAD_CASES)} cases match mha.scaled_dot_product_attention: one head, n_q ≠ n_kv, a stack of "
        "heads with a mask, and a query with nothing to see. That is step 3 of the layer's five; stage 2 puts them "
        "together."
    )


# --- stage 2's helpers: split and merge the heads ----------------------------------------------------------

SPLIT_CASES = (
    ("one sequence: (5, 8) into h = 2 heads", np.arange(40.0).reshape(5, 8), 2),
    ("a batch: (3, 5, 12) into h = 4 heads", np.arange(180.0).reshape(3, 5, 12), 4),
    ("two leading axes: (2, 3, 5, 12) into h = 4 heads", np.arange(360.0).reshape(2, 3, 5, 12), 4),
)


def _not_x(back: np.ndarray, x: np.ndarray) -> str:
    """How merge's result differs from x, the array it must give back: its shape, or its values at x's shape."""
    if back.shape != x.shape:
        return f"shape {back.shape}; it must give x back, shape {x.shape}"
    where = np.unravel_index(np.abs(back - x).argmax(), x.shape)
    index = ", ".join(str(int(i)) for i in where)
    return f"x's shape {x.shape} but not its values: entry [{index}] is {back[where]:.3g}, x has {x[where]:.3g}"


def _helper_error_hint(exc: BaseException, sizes: str, shape: tuple[int, ...]) -> str | None:
    """The cause of the error a split or merge raised on x of this shape, or None: FLOAT_SIZE, UNPACK, then LEADING
    when x has two leading axes (the cases with fewer passed); else sizes (SPLIT_SIZES or MERGE_SIZES) for numpy's
    error to a reshape whose sizes do not fit x, FIXED_AXES for its error to a transpose with another number of axes
    than x has."""
    hint = float_size_hint(exc) or unpack_hint(exc) or leading_hint(shape)
    if hint is not None or not isinstance(exc, ValueError):
        return hint
    if "cannot reshape array of size" in str(exc):
        return sizes
    return FIXED_AXES if str(exc) == "axes don't match array" else None


def _same(got: np.ndarray, other: np.ndarray) -> bool:
    """True when got is other, shape and values."""
    return got.shape == other.shape and np.array_equal(got, other)


def _permutation(got: np.ndarray, a: np.ndarray) -> tuple[int, ...] | None:
    """The order of a's axes that gives got (got == a.transpose(order)), or None when no order does."""
    if got.ndim != a.ndim or sorted(got.shape) != sorted(a.shape):
        return None
    return next((order for order in itertools.permutations(range(a.ndim)) if _same(got, a.transpose(order))), None)


def _split_cause(got: np.ndarray, x: np.ndarray, h: int) -> str | None:
    """The cause when split's wrong result got is a known mistake's on x: the heads stacked on axis 0, d_k before h,
    .T (on the heads or on x), or the heads' axes in another order; else None."""
    d_k = x.shape[-1] // h
    if x.ndim > 2 and _same(got, np.stack(np.split(x, h, axis=-1))):
        return STACK
    if _permutation(got, x.reshape(*x.shape[:-1], d_k, h)) is not None:
        return D_K_H
    if x.ndim > 2 and any(_same(got, y) for y in (x.T.reshape(h, d_k, -1), x.T.reshape(h, d_k, -1).swapaxes(-1, -2))):
        return X_T_SPLIT
    grouped = x.reshape(*x.shape[:-1], h, d_k)  # (..., n, h, d_k): each head's columns together
    order = _permutation(got, grouped)
    if order is None:
        return None
    names = [*(["batch"] if x.ndim == 3 else [f"batch axis {i}" for i in range(x.ndim - 2)]), "n", "h", "d_k"]
    axes = f"({', '.join(names[i] for i in order)}) = {got.shape}"
    return (T_SPLIT if order == tuple(range(grouped.ndim))[::-1] else AXES_ORDER).format(order=axes)


def _helper_failure(where: str, text: str, x: np.ndarray, cause: str | None = None) -> Feedback:
    """wrong(where: text), with its cause, or LEADING when there is none and x has two leading axes or more."""
    cause = cause or leading_hint(x.shape)
    return wrong(f"{where}: {text}" + (f" Cause: {cause}" if cause else ""))


def check_split_merge(split: object, merge: object) -> Feedback:
    """Stage 2's helpers alone: split(x, h) equals mha.split_heads(x, h), merge undoes it, on SPLIT_CASES."""
    if split is None or merge is None:
        return wrong(
            "Replace None with your two functions, e.g. my_split and my_merge (the names, without calling them)."
        )
    for fn, name in ((split, "split"), (merge, "merge")):
        if not callable(fn):
            return wrong(f"Expected {name} to be a function, got {type(fn).__name__!r}.")
    for i, (label, x, h) in enumerate(SPLIT_CASES, start=1):
        where = f"case {i} of {len(SPLIT_CASES)}, {label}"
        want = split_heads(x, h)  # (..., h, n, d_k)
        try:
            result = split(x.copy(), h)
            if result is None:
                return wrong("split returned None: replace its return None with your code.")
            got = np.asarray(result, dtype=float)
        except Exception as exc:  # the learner's code may fail in any way: report it
            hint = _helper_error_hint(exc, SPLIT_SIZES, x.shape)
            return wrong(f"{where}: split raised {type(exc).__name__}: {exc}." + (f" Cause: {hint}" if hint else ""))
        shape = f"split gave shape {got.shape}, expected (..., h, n, d_k) = {want.shape}."
        swapped = x.reshape(*x.shape[:-1], h, x.shape[-1] // h).swapaxes(0, 1)  # right for one sequence only
        if x.ndim > 2:  # a split written for one sequence, x.reshape(x.shape[0], h, -1): the batch read as the tokens
            flat = x.reshape(x.shape[0], h, -1).swapaxes(0, 1)
            if got.shape == flat.shape and np.array_equal(got, flat):
                return wrong(f"{where}: {shape} Cause: {SPLIT_SIZES}")
        if got.shape != want.shape and got.shape == swapped.shape and np.array_equal(got, swapped):
            return wrong(
                f"{where}: {shape} swapaxes(0, 1) swapped the batch (axis 0) and the tokens (axis 1) of (batch, n, h, "
                "d_k). Fix: swap the tokens and the heads, counted from the end: .swapaxes(-3, -2)."
            )
        if got.shape != want.shape:
            return _helper_failure(where, shape, x, _split_cause(got, x, h))
        if not np.array_equal(got, want):
            if np.array_equal(got, x.reshape(want.shape)):
                return wrong(
                    f"{where}: split reshapes alone, which cuts the tokens into heads (head 0 holds whole rows of the "
                    "first tokens). Fix: reshape to (..., n, h, d_k), then swap the n and h axes."
                )
            text = "split has the right shape, but head i must hold columns i·d_k to (i+1)·d_k."
            return _helper_failure(where, text, x, _split_cause(got, x, h))
        try:
            result = merge(want.copy())
            if result is None:
                return wrong("merge returned None: replace its return None with your code.")
            back = np.asarray(result, dtype=float)
        except Exception as exc:  # the learner's code may fail in any way: report it
            hint = _helper_error_hint(exc, MERGE_SIZES, x.shape)
            return wrong(f"{where}: merge raised {type(exc).__name__}: {exc}." + (f" Cause: {hint}" if hint else ""))
        if not np.array_equal(back, merge_heads(want)):
            if want.ndim > 3 and back.size == want.size and np.array_equal(back.ravel(), want.swapaxes(0, 1).ravel()):
                return wrong(
                    f"{where}: merge gave {_not_x(back, x)}. swapaxes(0, 1) "
                    "swapped the batch (axis 0) and the heads (axis 1) of (batch, h, n, d_k). Fix: swap the heads and "
                    "the tokens, counted from the end: .swapaxes(-3, -2), then reshape."
                )
            if back.shape == x.shape and np.array_equal(back, want.reshape(x.shape)):
                return wrong(f"{where}: merge reshapes alone and mixes tokens. Fix: swap the h and n axes back first.")
            concatenated = np.concatenate(list(want), axis=-1)  # right for one sequence's (h, n, d_k) only
            if want.ndim > 3 and back.shape == concatenated.shape and np.array_equal(back, concatenated):
                return wrong(f"{where}: merge gave {_not_x(back, x)}. Cause: {CONCAT}")
            interleaved = np.moveaxis(want, -3, -1).reshape(x.shape)  # (..., n, d_k, h) reshaped: d_k before h
            cause = MERGE_D_K_H if _same(back, interleaved) else None
            return _helper_failure(where, f"merge gave {_not_x(back, x)}.", x, cause)
    return right(
        "split gives head i columns i·d_k to (i+1)·d_k of every token, and merge lays them side by side again "
        "(steps 2 and 4). A round trip alone would not show it: a reshape-only split and merge undo each other."
    )
