"""Exercise checks for lesson 5 (concatenating the heads)."""

from __future__ import annotations

import numpy as np

from ..multihead import multi_head_attention_loop
from ..projections import init_params
from ._base import Feedback, as_shape, right, wrong

# Exercise 1: the sizes asked about.
N, D_MODEL, H = 7, 512, 8
# Exercise 3: a layer that averages AVG_H heads of width AVG_D_V, then multiplies by AVG_P (d_v, d_model).
AVG_H, AVG_D_V = 3, 2
AVG_P = np.array([[1.0, 0.0, 2.0, -1.0], [0.0, 3.0, 1.0, 0.5]])


def check_concat_shape(answer: object) -> Feedback:
    """Exercise 1: shape of concat(head_1, ..., head_h) for n = 7 tokens, d_model = 512, h = 8."""
    shape = as_shape(answer, "a shape, as a tuple like (rows, columns)")
    if isinstance(shape, Feedback):
        return shape
    d_v = D_MODEL // H
    if shape == (N, D_MODEL):
        return right(
            f"{H} heads of width d_v = {d_v} side by side: {H} × {d_v} = {D_MODEL} columns, one row per token."
        )
    if shape == (N, d_v):
        return wrong("That is one head's output. The concatenation puts all h of them side by side.")
    if shape in ((H, N, d_v), (N, H, d_v)):
        return wrong("That is the heads stacked along a new axis. Concatenating joins them along the feature axis.")
    if shape == (N * H, d_v):
        return wrong("That stacks the heads below each other (more rows). Which axis grows when you concatenate?")
    return wrong(
        "Each head outputs one row of d_v = d_model / h numbers per token. What does putting h heads side by side give?"
    )


# numpy's only words when np.hsplit or np.split(..., axis=1) cuts a batch's second axis, the tokens, into h pieces
SPLIT_AXIS = (
    " On a batch, np.hsplit and np.split(..., axis=1) cut the second axis, the tokens; the features are the last "
    "axis: axis=-1, as in np.split(concat, h, axis=-1)[i]."
)
# ... and when np.split(concat, h), whose axis is 0 unless told, cuts one sequence's rows, the tokens
SPLIT_ROWS = (
    " np.split cuts axis 0 unless told otherwise: the rows, which are tokens. The features are the last axis: "
    "axis=-1, as in np.split(concat, h, axis=-1)[i]."
)
UNEQUAL = "does not result in an equal division"


def check_recover_head(fn: object) -> Feedback:
    """Exercise 1: fn(concat, i, h) returns head i's output (..., n, d_v) from the concatenation (..., n, h*d_v),
    for one sequence and for a batch of sequences."""
    if fn is None:
        return wrong("Replace None with your function (without calling it), e.g. recover_head.")
    if not callable(fn):
        return wrong(f"Expected a function fn(concat, i, h), got a {type(fn).__name__}.")
    rng = np.random.default_rng(4)
    # d_v = 4, 5, 6: a fixed width cannot pass; the last case is a batch of 3 sequences, (3, 5, 24)
    for d_model, h, lead in ((8, 2, ()), (15, 3, ()), (24, 4, (3,))):
        x = rng.normal(size=(*lead, 5, d_model))
        _, _, trace = multi_head_attention_loop(x, x, x, init_params(d_model, h, seed=d_model), return_trace=True)
        where = f"For a batch {x.shape}, h={h}" if lead else f"For h={h}"
        concat, d_v = trace["concat"], d_model // h
        for i in range(h):
            try:
                got = fn(concat.copy(), i, h)  # a copy: fn may write into it
            except Exception as exc:  # a learner's function may fail in any way: report it, do not raise
                hint = (SPLIT_AXIS if lead else SPLIT_ROWS) if UNEQUAL in str(exc) else ""
                return wrong(f"{where}, head {i}: your function raised {type(exc).__name__}: {exc}.{hint}")
            if got is None:
                return wrong("Your function returned None: replace its `return None` line.")
            got, want = np.asarray(got), trace["head_i"][i]
            cut = slice(i * d_v, (i + 1) * d_v)
            if not lead and got.shape == concat[cut].shape and np.array_equal(got, concat[cut]):
                return wrong(
                    f"{where}, head {i}: you sliced rows, which are tokens. Keep every row (token) and take head "
                    f"{i}'s block of columns (features), the last axis: concat[..., start:stop], {d_v} columns wide."
                )
            if lead and got.shape == concat[:, cut].shape and np.array_equal(got, concat[:, cut]):
                return wrong(
                    f"{where}, head {i}: concat[:, start:stop] cuts the second axis, here the tokens. The features "
                    "are the last axis whatever comes before it: count from the end, concat[..., start:stop]."
                )
            if got.ndim == concat.ndim and got.shape[-1] == concat.shape[-1] and got.shape[:-1] != concat.shape[:-1]:
                # every column kept: an axis before the features was cut (the tokens, or a batch's sequences)
                names = ("the sequences of the batch", "the tokens") if lead else ("the rows, which are tokens",)
                cut = " and ".join(
                    f"{names[k]} (axis {k})" for k in range(got.ndim - 1) if got.shape[k] != concat.shape[k]
                )
                return wrong(
                    f"{where}, head {i}: expected shape {want.shape}, got {got.shape}. All {concat.shape[-1]} "
                    f"columns are still there: you cut {cut}. Keep every token and cut the last axis, the features: "
                    f"head {i}'s {d_v} columns, concat[..., start:stop]."
                )
            if got.shape != want.shape:
                return wrong(
                    f"{where}, head {i}: expected shape {want.shape}, got {got.shape}. The last axis holds the "
                    f"features, the one before it the tokens (keep all {want.shape[-2]}): how many columns does one "
                    "head own?"
                )
            strided = concat[..., i::h]  # every h-th column, starting at column i
            if got.shape == strided.shape and np.array_equal(got, strided):
                return wrong(
                    f"{where}, head {i}: these are every h-th column (what concat[..., i::h] or a reshape to "
                    f"(..., d_v, h) gives). Head {i}'s columns are one contiguous block of d_v = {d_v} columns, "
                    f"starting at column i × d_v = {i * d_v}: concat[..., start:stop]."
                )
            if not np.allclose(got, want, atol=1e-12):
                return wrong(f"{where}, head {i}: wrong columns. Head i starts at column i × d_v.")
    return right("every head came back exactly, from one sequence and from a batch: concatenation loses nothing.")


def check_average_map(answer: object) -> Feedback:
    """Exercise 3: the (AVG_H * AVG_D_V, d_model) matrix w_o with concat @ w_o = mean of the heads @ AVG_P."""
    if answer is None:
        return wrong(f"Replace None with a matrix of shape ({AVG_H * AVG_D_V}, {AVG_P.shape[1]}).")
    try:
        w_o = np.asarray(answer, dtype=float)
    except (TypeError, ValueError):
        return wrong(f"Expected a matrix of numbers, got {type(answer).__name__}.")
    want_shape = (AVG_H * AVG_D_V, AVG_P.shape[1])
    if w_o.shape != want_shape:
        return wrong(
            f"Expected shape {want_shape}: one row per column of the concatenation (h · d_v = {AVG_H} · {AVG_D_V}), "
            f"one column per output feature; got {w_o.shape}."
        )
    # Judge by what it computes: random head outputs through both layers.
    heads = np.random.default_rng(7).normal(size=(AVG_H, 5, AVG_D_V))  # (h, n, d_v)
    want = heads.mean(axis=0) @ AVG_P  # (n, d_model): the colleague's layer
    got = np.concatenate(list(heads), axis=-1) @ w_o  # (n, h*d_v) @ (h*d_v, d_model)
    if np.allclose(got, want, atol=1e-9):
        return right(
            "every head's block of rows is P / h: the same block for every head, so the heads are merged before any "
            "per-head map. A learned W^O may choose a different block for each head."
        )
    if np.allclose(got, AVG_H * want, atol=1e-9):
        return wrong("That computes the sum of the heads times P. The average divides by how many heads?")
    if np.allclose(w_o[:AVG_D_V], AVG_P) and not np.allclose(w_o[AVG_D_V:], 0):
        return wrong("The first block is P, but not every block. An average treats every head alike.")
    if np.allclose(w_o[:AVG_D_V], AVG_P / AVG_H) or np.allclose(w_o[:AVG_D_V], AVG_P):
        return wrong("Head 0's block looks right. Rows i·d_v to (i+1)·d_v meet head i: what must the other blocks be?")
    return wrong(
        "Rows i·d_v to (i+1)·d_v of w_o meet only head i. Write mean(heads) @ P as a sum over heads: "
        "which block does each head need?"
    )
