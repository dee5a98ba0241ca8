"""Linear attention: a fixed-size state S (d_v x d_k) instead of a cache that grows with every token.

Drop the softmax and causal attention's output o_t = sum_{j<=t} (q_t·k_j) v_j = (sum_{j<=t} v_j k_jᵀ) q_t: the
sum in brackets, S_t, is updated once per token and read by each query. That is a recurrent network whose state
is d_v x d_k numbers, whatever the length. The additive rule S_t = S_{t-1} + v_t k_tᵀ only ever adds, so old
associations blur into new ones; the delta rule (Schlag et al. 2021; DeltaNet) first erases what S stored under
k_t, S_t = S_{t-1}(I - β_t k_t k_tᵀ) + β_t v_t k_tᵀ. Gated DeltaNet (Yang et al., ICLR 2025; Qwen3-Next) also
decays the whole state by a scalar α_t, as `decay` does here; Kimi Linear's KDA uses a per-channel decay Diag(α_t)
instead (not implemented here).

Training wants parallel work, not n sequential steps: `chunk` runs the same recurrence a block of tokens at a time,
with every block's work in matrix products (the WY/UT form of DeltaNet's chunked algorithm).
"""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, check_positive_int
from .attention import check_qkv


def _check_rate(name: str, x: object, shape: tuple[int, ...]) -> np.ndarray | None:
    """None, or x broadcast to shape (..., n) with every value in [0, 1]."""
    if x is None:
        return None
    x = as_float_array(name, x, 0)
    outside = ~((x >= 0) & (x <= 1))  # NaN compares False, so it is outside too
    if outside.any():
        raise ValueError(
            f"{name}: expected values in [0, 1], got {x[outside].ravel()[0]} (and {outside.sum() - 1} more)"
        )
    try:
        return np.broadcast_to(x, shape)
    except ValueError:
        raise ValueError(f"{name}: expected a shape that broadcasts to (..., n) = {shape}, got {x.shape}") from None


Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]


def _check_inputs(q: object, k: object, v: object, beta: object, decay: object) -> Arrays:
    """Validate q, k (..., n, d_k), v (..., n, d_v), beta and decay (..., n); return them broadcast."""
    q, k = as_float_array("q", q, 2), as_float_array("k", k, 2)
    if k.shape[-2] != q.shape[-2]:  # before check_qkv, which would blame v for a short k
        raise ValueError(f"k: expected n={q.shape[-2]} rows like q (causal self-attention), got shape {k.shape}")
    q, k, v, lead = check_qkv(q, k, v)  # the shapes and values scaled_dot_product_attention checks
    n = q.shape[-2]
    beta = _check_rate("beta", beta, (*lead, n))
    decay = _check_rate("decay", decay, (*lead, n))
    q, k, v = (np.broadcast_to(a, (*lead, *a.shape[-2:])) for a in (q, k, v))  # views, no copies
    return q, k, v, beta, decay


def linear_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    beta: np.ndarray | None = None,
    decay: np.ndarray | None = None,
    chunk: int | None = None,
) -> np.ndarray:
    """Causal linear attention o_t = S_t q_t: q, k (..., n, d_k), v (..., n, d_v) -> (..., n, d_v); state S_0 = 0.

    beta=None: S_t = α_t S_{t-1} + v_t k_tᵀ, which without decay equals (Q Kᵀ ⊙ causal) V.
    beta (..., n) in [0, 1]: the delta rule, S_t = α_t S_{t-1}(I - β_t k_t k_tᵀ) + β_t v_t k_tᵀ.
    decay α (..., n) in [0, 1], None for 1: Gated DeltaNet's decay of the whole state.
    Nothing is normalised here: the delta rule expects unit-length keys, so normalise k first.
    chunk=None runs the recurrence token by token; chunk=c computes the same outputs c tokens at a time
    (chunk >= n: one fully parallel block).
    """
    q, k, v, beta, decay = _check_inputs(q, k, v, beta, decay)
    if chunk is None:
        return _recurrent(q, k, v, beta, decay)
    chunk = check_positive_int("chunk", chunk)
    return _chunked(q, k, v, beta, decay, chunk)


def _recurrent(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, beta: np.ndarray | None, decay: np.ndarray | None
) -> np.ndarray:
    """The definition: one state update per token."""
    n, d_k, d_v = q.shape[-2], q.shape[-1], v.shape[-1]
    dtype = np.result_type(q, k, v)
    S = np.zeros((*q.shape[:-2], d_v, d_k), dtype)  # (..., d_v, d_k)
    out = np.empty((*q.shape[:-2], n, d_v), dtype)  # (..., n, d_v)
    for t in range(n):
        q_t, k_t, v_t = q[..., t, :, None], k[..., t, :, None], v[..., t, :, None]  # columns (..., d, 1)
        if decay is not None:
            S = decay[..., t, None, None] * S
        if beta is None:
            S = S + v_t @ k_t.swapaxes(-1, -2)  # + v_t k_tᵀ
        else:
            # S(I - β k kᵀ) + β v kᵀ = S + β (v - S k) kᵀ: replace what S returns for k_t by v_t, a fraction β.
            S = S + beta[..., t, None, None] * (v_t - S @ k_t) @ k_t.swapaxes(-1, -2)
        out[..., t, :] = (S @ q_t)[..., 0]
    return out


def _segment_sums(log_a: np.ndarray) -> np.ndarray:
    """(..., c) -> (..., c, c): entry [t, s] = sum of log_a[s+1..t] for s <= t, -inf above the diagonal.

    Summing each segment directly (not as a difference of prefix sums) keeps a decay of exactly 0 (log -inf)
    from giving -inf - -inf = NaN.
    """
    c = log_a.shape[-1]
    below = np.tril(np.ones((c, c), dtype=bool), -1)  # s < t
    x = np.where(below, log_a[..., :, None], 0.0)  # (..., c, c): [r, s] = log_a[r] where s < r
    sums = np.cumsum(x, axis=-2)  # [t, s] = sum over r <= t with s < r of log_a[r]
    return np.where(np.tril(np.ones((c, c), dtype=bool)), sums, -np.inf)


def _chunked(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, beta: np.ndarray | None, decay: np.ndarray | None, chunk: int
) -> np.ndarray:
    """The recurrence c tokens at a time: within a block everything is matrix products and one triangular solve.

    Rows are tokens and M = Sᵀ (d_k x d_v). Writing the delta update as M_t = α_t M_{t-1} + k_t u_tᵀ with
    u_t = β_t (v_t - α_t M_{t-1}ᵀ k_t), the block's u's solve (I + diag(β) A) U = diag(β)(V - diag(γ) K M_0),
    where γ_t is the decay since the block began, Γ[t, s] = γ_t/γ_s and A = strictly lower (K Kᵀ ⊙ Γ).
    Then O = diag(γ) Q M_0 + (Q Kᵀ ⊙ Γ) U and the state leaving the block is γ_c M_0 + (Γ[c-1] ⊙ K)ᵀ U.
    """
    n, d_k, d_v = q.shape[-2], q.shape[-1], v.shape[-1]
    dtype = np.result_type(q, k, v)
    M = np.zeros((*q.shape[:-2], d_k, d_v), dtype)  # (..., d_k, d_v), the state transposed
    out = np.empty((*q.shape[:-2], n, d_v), dtype)
    for start in range(0, n, chunk):
        rows = slice(start, min(start + chunk, n))
        Q, K, V = q[..., rows, :], k[..., rows, :], v[..., rows, :]  # (..., c, d)
        c = Q.shape[-2]
        if decay is None:
            gamma = np.ones(Q.shape[:-1], dtype)  # (..., c)
            Gamma = np.tril(np.ones((c, c), dtype))  # (c, c)
        else:
            with np.errstate(divide="ignore"):  # a decay of 0 is log 0 = -inf: it wipes the state, exactly
                log_a = np.log(decay[..., rows])  # (..., c)
            gamma = np.exp(np.cumsum(log_a, axis=-1))  # (..., c): decay from the block's start to t
            Gamma = np.exp(_segment_sums(log_a))  # (..., c, c): decay from s to t, 0 above the diagonal
        if beta is None:
            U = V  # additive rule: nothing is erased, u_t = v_t
        else:
            b = beta[..., rows, None]  # (..., c, 1)
            A = np.tril(K @ K.swapaxes(-1, -2) * Gamma, -1)  # (..., c, c), strictly lower
            lhs = np.eye(c) + b * A  # unit lower triangular
            # U = T diag(β) V - T diag(βγ) K M_0 with T = (I + diag(β) A)⁻¹: the UT transform.
            U = np.linalg.solve(lhs, b * V) - np.linalg.solve(lhs, b * gamma[..., None] * K) @ M  # (..., c, d_v)
        scores = Q @ K.swapaxes(-1, -2) * Gamma  # (..., c, c), causal and decayed
        out[..., rows, :] = gamma[..., None] * (Q @ M) + scores @ U
        M = gamma[..., -1, None, None] * M + (Gamma[..., -1, :, None] * K).swapaxes(-1, -2) @ U
    return out
