"""Scaled dot-product attention lesson: why scores are divided by sqrt(d_k), the statistics it measures.

For q and k with d_k independent components of mean 0 and variance 1, q.k is a sum of d_k products of
variance 1 each, so Var(q.k) = d_k: scores spread out as sqrt(d_k). Fed unscaled to a softmax, wide scores
put almost all of a row's weight on its largest score (the softmax saturates, and its gradient,
diag(p) - p p^T, goes to 0). Dividing by sqrt(d_k) brings the variance back to 1 for every d_k.
"""

from __future__ import annotations

import math

import numpy as np

from .._checks import check_positive_int
from ..attention import softmax


def score_variance(d_ks: tuple[int, ...] | list[int], samples: int = 2000, seed: int = 0) -> dict[str, np.ndarray]:
    """Measured Var(q.k) over `samples` independent pairs with N(0, 1) components, for each d_k.

    Returns arrays over d_ks: d_k, measured (sample variance), stderr (its standard error, estimated
    from the samples' fourth moment) and closed_form (= d_k, the claim being checked).
    """
    samples = check_positive_int("samples", samples)
    if samples < 4:
        raise ValueError(f"samples: expected at least 4 to estimate a standard error, got {samples}")
    d_ks = [check_positive_int("d_k", d) for d in d_ks]
    rng = np.random.default_rng(seed)
    measured, stderr = [], []
    for d_k in d_ks:
        q = rng.standard_normal((samples, d_k))
        k = rng.standard_normal((samples, d_k))
        s = np.einsum("sd,sd->s", q, k)  # (samples,) one dot product per independent pair
        var = s.var(ddof=1)
        m4 = np.mean((s - s.mean()) ** 4)
        # Standard error of a sample variance: sqrt((m4 - (N-3)/(N-1) var^2) / N).
        stderr.append(math.sqrt(max(m4 - (samples - 3) / (samples - 1) * var**2, 0.0) / samples))
        measured.append(var)
    d = np.array(d_ks, dtype=float)
    return {"d_k": d, "measured": np.array(measured), "stderr": np.array(stderr), "closed_form": d.copy()}


def row_stats(scores: np.ndarray) -> tuple[float, float]:
    """Mean entropy (nats) and mean max weight of softmax rows of scores (m, n)."""
    p = softmax(scores, axis=-1)
    # 0 * log 0 counts as 0: where p underflows to 0 the term vanishes instead of giving NaN.
    entropy = -np.sum(p * np.log(np.where(p > 0, p, 1.0)), axis=-1)
    return float(entropy.mean()), float(p.max(axis=-1).mean())


def jacobian_norm(scores: np.ndarray) -> float:
    """Mean Frobenius norm of the softmax's Jacobian diag(p) - p p^T over the rows of scores (m, n).

    It measures how much the weights move when the scores move: 0 for a one-hot (saturated) row.
    """
    p = softmax(scores, axis=-1)  # (m, n)
    jac = np.einsum("mi,ij->mij", p, np.eye(p.shape[-1])) - p[:, :, None] * p[:, None, :]  # (m, n, n)
    return float(np.linalg.norm(jac, axis=(1, 2)).mean())
