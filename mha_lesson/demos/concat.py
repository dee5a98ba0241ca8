"""Why heads are concatenated, not summed (concatenation lesson): can each head's output be read back from the result?

A slice of the concatenation returns head i exactly. The sum of the heads has only d_k columns for h heads'
worth of numbers, so no linear read-out recovers every head from it (unless the heads happen to be redundant).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def recovery_errors(heads: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Relative error of recovering each head (m, d_k) from the concatenation and from the sum, arrays (h,).

    concat: head i is read back as columns i*d_k:(i+1)*d_k of the concatenation.
    sum: the best possible linear read-out, B_i = argmin ||S B - head_i|| with S = sum of the heads,
    fitted by least squares on these very rows (so the error is a lower bound for any linear decoder).
    Relative error = ||recovered - head_i|| / ||head_i|| (Frobenius norms).
    """
    heads = [np.asarray(x, dtype=float) for x in heads]
    if len(heads) < 2 or any(x.ndim != 2 or x.shape != heads[0].shape for x in heads):
        raise ValueError(f"heads: expected at least two (m, d_k) arrays of one shape, got {[x.shape for x in heads]}")
    d_k = heads[0].shape[1]
    concat = np.concatenate(heads, axis=1)  # (m, h*d_k)
    total = np.sum(heads, axis=0)  # (m, d_k)
    err_concat, err_sum = [], []
    for i, head in enumerate(heads):
        norm = np.linalg.norm(head)
        err_concat.append(np.linalg.norm(concat[:, i * d_k : (i + 1) * d_k] - head) / norm)
        b, *_ = np.linalg.lstsq(total, head, rcond=None)  # (d_k, d_k)
        err_sum.append(np.linalg.norm(total @ b - head) / norm)
    return {"concat": np.array(err_concat), "sum": np.array(err_sum)}
