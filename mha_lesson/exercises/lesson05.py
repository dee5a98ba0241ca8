"""Exercise checks for lesson 5 (concatenating the heads)."""

from __future__ import annotations

import numpy as np

from ..multihead import multi_head_attention_loop
from ..projections import init_params
from ._base import Feedback, as_shape, right, wrong

# Exercise 1: the sizes asked about.
N, D_MODEL, H = 7, 512, 8
# Exercise 3: two heads' outputs for one token, and their sum.
HEAD_A = np.array([1.0, 0.0, 0.0])
HEAD_B = np.array([0.0, 2.0, 0.0])


def check_concat_shape(answer: object) -> Feedback:
    """Exercise 1: shape of concat(head_1, ..., head_h) for n = 7 tokens, d_model = 512, h = 8."""
    shape = as_shape(answer, "a shape, as a tuple like (rows, columns)")
    if isinstance(shape, Feedback):
        return shape
    d_k = D_MODEL // H
    if shape == (N, D_MODEL):
        return right(
            f"{H} heads of width d_v = {d_k} side by side: {H} × {d_k} = {D_MODEL} columns, one row per token."
        )
    if shape == (N, d_k):
        return wrong("That is one head's output. The concatenation puts all h of them side by side.")
    if shape in ((H, N, d_k), (N, H, d_k)):
        return wrong("That is the heads stacked along a new axis. Concatenating joins them along the feature axis.")
    if shape == (N * H, d_k):
        return wrong("That stacks the heads below each other (more rows). Which axis grows when you concatenate?")
    return wrong(
        "Each head outputs one row of d_v = d_model / h numbers per token. What does putting h heads side by side give?"
    )


def check_recover_head(fn: object) -> Feedback:
    """Exercise 2: fn(concat, i, h) returns head i's output (n, d_k) from the concatenation (n, h*d_k)."""
    if fn is None:
        return wrong("Replace None with your function (without calling it), e.g. recover_head.")
    if not callable(fn):
        return wrong(f"Expected a function fn(concat, i, h), got a {type(fn).__name__}.")
    rng = np.random.default_rng(4)
    for d_model, h in ((8, 2), (15, 3), (24, 4)):  # d_k = 4, 5, 6: a fixed width cannot pass
        x = rng.normal(size=(5, d_model))
        _, _, trace = multi_head_attention_loop(x, x, x, init_params(d_model, h, seed=d_model), return_trace=True)
        for i in range(h):
            try:
                got = fn(trace["concat"].copy(), i, h)  # a copy: fn may write into it
            except Exception as exc:  # a learner's function may fail in any way: report it, do not raise
                return wrong(f"Your function raised {type(exc).__name__}: {exc}")
            if got is None:
                return wrong("Your function returned None: replace its `return None` line.")
            got = np.asarray(got)
            want = trace["head_i"][i]
            if got.shape != want.shape:
                return wrong(
                    f"For h={h}, head {i}: expected shape {want.shape}, got {got.shape}. How wide is one head?"
                )
            if not np.allclose(got, want, atol=1e-12):
                return wrong(f"For h={h}, head {i}: wrong columns. Head i starts at column i × d_k.")
    return right("every head came back exactly: concatenation loses nothing.")


def check_same_sum(answer: object) -> Feedback:
    """Exercise 3: a pair (a, b), different from (HEAD_A, HEAD_B), with the same sum a + b."""
    if answer is None:
        return wrong("Replace None with a pair of arrays (a, b), each with 3 numbers.")
    try:
        a, b = (np.asarray(v, dtype=float) for v in answer)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        return wrong(f"Expected a pair (a, b) of 3-number arrays, got {answer!r}.")
    if a.shape != (3,) or b.shape != (3,):
        return wrong(f"Each of a and b should hold 3 numbers, got shapes {a.shape} and {b.shape}.")
    total = HEAD_A + HEAD_B
    if not np.allclose(a + b, total):
        return wrong(f"a + b = {a + b}, but the sum to match is {total}.")
    if np.allclose(a, HEAD_A) and np.allclose(b, HEAD_B):
        return wrong("That is the original pair. Find a different one with the same sum.")
    return right(
        f"a - HEAD_A = {a - HEAD_A} and b - HEAD_B = {b - HEAD_B} cancel. Whoever reads only the sum cannot tell "
        "your pair from the original; the concatenation can."
    )
