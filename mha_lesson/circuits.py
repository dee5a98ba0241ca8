"""A head as two circuits, a hand-built induction head, and head detectors (Elhage et al. 2021; Olsson et al. 2022).

Head i's scaled score between tokens a and b is x_a W_QK^i x_bᵀ / sqrt(d_k) with W_QK^i = W_i^Q W_i^Kᵀ, and what it
adds to the output is A_i X W_OV^i with W_OV^i = W_i^V W_i^O: two (d_model, d_model) matrices of rank at most d_k.
Without biases, multi-head self-attention is exactly the sum of these h independent paths, MHA(X) = sum_i A_i X W_OV^i.

Detector scores follow TransformerLens' head detector ("mul" measure): the fraction of a head's attention that
lands on a pattern of (query, key) cells. One difference, on purpose: the fraction is taken over the query rows
where the pattern has at least one cell (TransformerLens divides by every row's attention, which caps an induction
head's score at the fraction of rows that lie in the repeated copy). all_rows=True gives TransformerLens' number.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ._checks import (
    as_array,
    as_float_array,
    check_bool,
    check_finite,
    check_mask,
    check_nonnegative_int,
    check_number,
    check_positive_int,
    check_size,
    is_int,
)
from .attention import causal_mask, softmax
from .multihead import multi_head_attention
from .projections import MHAParams

# Rows of attention weights must sum to 1 (0 for a fully masked query) up to this much, float32 included.
ROW_SUM_TOLERANCE = 1e-3


def _check_params(params: object) -> MHAParams:
    if not isinstance(params, MHAParams):
        raise ValueError(f"params: expected an MHAParams, got {type(params).__name__}")
    return params


def qk_circuit(params: MHAParams, i: int) -> np.ndarray:
    """W_QK^i = W_i^Q W_i^Kᵀ, (d_model, d_model): head i's score for tokens a, b is x_a W_QK^i x_bᵀ / sqrt(d_k)."""
    p = _check_params(params)
    return p.w_q_head(i) @ p.w_k_head(i).T  # (d_model, d_k) @ (d_k, d_model)


def ov_circuit(params: MHAParams, i: int) -> np.ndarray:
    """W_OV^i = W_i^V W_i^O, (d_model, d_model): what head i writes to the output for each unit of attention."""
    p = _check_params(params)
    return p.w_v_head(i) @ p.w_o_head(i)  # (d_model, d_k) @ (d_k, d_model)


def _check_self_attention(x: object, params: MHAParams, mask: object) -> tuple[np.ndarray, np.ndarray | None]:
    """x (..., n, d_model) and an optional mask broadcast to (..., h, n, n); params must have no biases."""
    p = _check_params(params)
    if p.has_bias:
        raise ValueError(
            "params: expected weights without biases (MHA(X) = sum_i A_i X W_OV^i holds for the bias-free layer), "
            f"got biases {', '.join(n for n in ('b_q', 'b_k', 'b_v', 'b_o') if getattr(p, n) is not None)}"
        )
    x = as_float_array("x", x, 2)
    if x.shape[-1] != p.d_model:
        raise ValueError(f"x: expected shape (..., n, d_model={p.d_model}), got {x.shape}")
    check_finite("x", x)
    n = x.shape[-2]
    checked = None if mask is None else check_mask(mask, (*x.shape[:-2], p.h, n, n))
    return x, checked


def circuit_attention(x: np.ndarray, params: MHAParams, mask: np.ndarray | None = None) -> np.ndarray:
    """Self-attention weights (..., h, n, n) from the QK circuits alone: A_i = softmax(X W_QK^i Xᵀ / sqrt(d_k))."""
    x, mask = _check_self_attention(x, params, mask)
    scores = np.stack([x @ qk_circuit(params, i) @ x.swapaxes(-1, -2) for i in range(params.h)], axis=-3)
    scores /= math.sqrt(params.d_k)  # (..., h, n, n)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return softmax(scores, axis=-1)


def head_terms(x: np.ndarray, params: MHAParams, mask: np.ndarray | None = None) -> np.ndarray:
    """Each head's additive path A_i X W_OV^i, (..., h, n, d_model), computed from the two circuits only."""
    x, _ = _check_self_attention(x, params, mask)
    weights = circuit_attention(x, params, mask)  # (..., h, n, n)
    return np.stack([weights[..., i, :, :] @ x @ ov_circuit(params, i) for i in range(params.h)], axis=-3)


def mha_from_circuits(x: np.ndarray, params: MHAParams, mask: np.ndarray | None = None) -> np.ndarray:
    """sum_i A_i X W_OV^i, (..., n, d_model): equals multi_head_attention(x, x, x, params, mask)[0] without biases."""
    return head_terms(x, params, mask).sum(axis=-3)


def _check_square(name: str, m: object, size: int) -> np.ndarray:
    m = as_float_array(name, m, 2)
    m = m.astype(np.result_type(m, np.float32), copy=False)  # numpy's linalg has no float16
    if m.shape != (size, size):
        raise ValueError(f"{name}: expected a square ({size}, {size}) matrix (d_k = {size}), got shape {m.shape}")
    check_finite(name, m)
    # An ill-conditioned M makes M^-1 numerically meaningless: the "same scores" would only hold to rounding noise.
    cond = np.linalg.cond(m)
    if not cond < 1e12:
        raise ValueError(f"{name}: expected an invertible matrix, got one with condition number {cond:.3g}")
    return m


def reparametrize(
    params: MHAParams, i: int, *, qk: np.ndarray | None = None, ov: np.ndarray | None = None
) -> MHAParams:
    """Params with head i's W^Q -> W^Q M, W^K -> W^K M^-ᵀ (qk=M) and W^V -> W^V N, W_i^O -> N^-1 W_i^O (ov=N).

    M, N are invertible (d_k, d_k). W_QK^i and W_OV^i, hence every score and every output, stay the same: the
    weights themselves are not identifiable, only the circuits are. With grouped-query attention the change applies
    to every query head sharing head i's key/value head, so that the shared keys and values still fit them all.
    """
    p = _check_params(params)
    p.w_q_head(i)  # raises for a bad head index before any work
    d_k, group = p.d_k, p.group_size
    j = i // group  # head i's key/value head
    queries = [slice(q * d_k, (q + 1) * d_k) for q in range(j * group, (j + 1) * group)]  # its group's columns
    kv = slice(j * d_k, (j + 1) * d_k)
    arrays = {name: a.copy() for name, a in p.arrays().items()}
    if qk is not None:
        m = _check_square("qk", qk, d_k)
        m_inv_t = np.linalg.inv(m).T
        for cols in queries:
            arrays["w_q"][:, cols] = p.w_q[:, cols] @ m
            if p.b_q is not None:
                arrays["b_q"][cols] = p.b_q[cols] @ m
        arrays["w_k"][:, kv] = p.w_k[:, kv] @ m_inv_t  # (x W^Q M)(x W^K M^-ᵀ)ᵀ = x W^Q M M^-1 W^Kᵀ xᵀ
        if p.b_k is not None:
            arrays["b_k"][kv] = p.b_k[kv] @ m_inv_t
    if ov is not None:
        basis = _check_square("ov", ov, d_k)  # N
        arrays["w_v"][:, kv] = p.w_v[:, kv] @ basis
        if p.b_v is not None:
            arrays["b_v"][kv] = p.b_v[kv] @ basis
        n_inv = np.linalg.inv(basis)
        for cols in queries:
            arrays["w_o"][cols, :] = n_inv @ p.w_o[cols, :]  # (A V N)(N^-1 W_i^O) = A V W_i^O
    return dataclasses.replace(p, **arrays)


# --- how many dimensions a circuit uses -------------------------------------------------------------------------


def circuit_singular_values(params: MHAParams, i: int, kind: str = "qk") -> np.ndarray:
    """The d_k largest singular values (d_k,), descending, of W_QK^i (kind "qk") or W_OV^i ("ov"); the rest are 0.

    W_QK = W_Q W_Kᵀ has rank <= d_k, so its d_model - d_k other singular values are exactly 0.
    """
    p = _check_params(params)
    if kind not in ("qk", "ov"):
        raise ValueError(f"kind: expected 'qk' or 'ov', got {kind!r}")
    left, right = (p.w_q_head(i), p.w_k_head(i)) if kind == "qk" else (p.w_v_head(i), p.w_o_head(i).T)
    # With A = Q_a R_a and B = Q_b R_b (QR, Q_* with orthonormal columns), A Bᵀ = Q_a (R_a R_bᵀ) Q_bᵀ has the
    # singular values of the small (d_k, d_k) R_a R_bᵀ: a d_k-sized SVD instead of a d_model-sized one.
    r_left = np.linalg.qr(left.astype(np.float64), mode="r")  # (d_k, d_k)
    r_right = np.linalg.qr(right.astype(np.float64), mode="r")
    return np.linalg.svd(r_left @ r_right.T, compute_uv=False)


def _check_spectrum(s: object) -> np.ndarray:
    """s divided by its largest value per spectrum (both measures are scale-free): 1e-200 squared would be 0."""
    s = as_float_array("s", s, 1)
    check_finite("s", s)
    if (s < 0).any():
        raise ValueError("s: expected singular values (>= 0), got negative entries")
    if s.shape[-1] == 0 or not (s.sum(axis=-1) > 0).all():
        raise ValueError(f"s: expected at least one non-zero singular value per spectrum, got shape {s.shape}")
    return s / s.max(axis=-1, keepdims=True)


def effective_rank(s: np.ndarray, fraction: float = 0.9) -> np.ndarray:
    """Singular values (..., r) -> the fewest k whose k largest squared singular values hold `fraction` of the sum.

    The sum of squared singular values is the squared Frobenius norm ("energy") of the matrix, so this is the
    number of directions that carry that fraction of it. An int array of shape (...).
    """
    s = _check_spectrum(s)
    if not 0 < check_number("fraction", fraction) <= 1:
        raise ValueError(f"fraction: expected a number in (0, 1], got {fraction!r}")
    energy = np.sort(s, axis=-1)[..., ::-1] ** 2  # descending
    held = np.cumsum(energy, axis=-1) / energy.sum(axis=-1, keepdims=True)  # (..., r)
    # The first k with held >= fraction; the small slack absorbs rounding in the cumulative sum.
    return (held < fraction - 1e-12).sum(axis=-1) + 1


def participation_ratio(s: np.ndarray) -> np.ndarray:
    """Singular values (..., r) -> (sum s²)² / sum s⁴, shape (...): k for k equal values, 1 for a single one."""
    s2 = _check_spectrum(s) ** 2
    return s2.sum(axis=-1) ** 2 / (s2**2).sum(axis=-1)


# --- an induction head by hand -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class InductionModel:
    """A two-layer attention-only model (one head per layer) from explicit weights, on one-hot residual blocks.

    Residual stream columns: [token one-hot (V) | position one-hot (L) | previous token (V) | output (V)].
    Layer 1 is a previous-token head: query position i looks for key position i - 1 and copies that key's token
    into the "previous token" block. Layer 2 is the induction head: its query (the current token) matches keys
    whose "previous token" block holds the same token, so it attends to the token after the last time the
    current token appeared, and copies that token into the "output" block, which the read-out turns into logits.
    """

    vocab_size: int
    max_len: int
    embed: np.ndarray  # (vocab_size, d_model)
    positions: np.ndarray  # (max_len, d_model)
    layers: tuple[MHAParams, MHAParams]
    unembed: np.ndarray  # (d_model, vocab_size)

    @property
    def d_model(self) -> int:
        """Width of the residual stream: 3 * vocab_size + max_len."""
        return self.embed.shape[1]

    @property
    def blocks(self) -> dict[str, slice]:
        """The residual stream's column blocks by name: token, position, previous, output."""
        v, length = self.vocab_size, self.max_len
        return {
            "token": slice(0, v),
            "position": slice(v, v + length),
            "previous": slice(v + length, 2 * v + length),
            "output": slice(2 * v + length, 3 * v + length),
        }

    def _tokens(self, tokens: object) -> np.ndarray:
        t = as_array("tokens", tokens)
        if t.ndim != 1 or not np.issubdtype(t.dtype, np.integer) or not 1 <= len(t) <= self.max_len:
            raise ValueError(
                f"tokens: expected a 1-D integer array of 1 to max_len={self.max_len} token ids, "
                f"got {t.dtype} array of shape {t.shape}"
            )
        if t.min() < 0 or t.max() >= self.vocab_size:
            raise ValueError(f"tokens: expected ids in [0, {self.vocab_size}), got {t.min()}..{t.max()}")
        return t

    def residuals(self, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Residual stream after each layer (2, n, d_model) and each layer's weights (2, h, n, n)."""
        t = self._tokens(tokens)
        x = self.embed[t] + self.positions[: len(t)]  # (n, d_model)
        mask = causal_mask(len(t))
        streams, weights = [], []
        for params in self.layers:
            out, w = multi_head_attention(x, x, x, params, mask)
            x = x + out  # each layer adds what its head read to the residual stream
            streams.append(x)
            weights.append(w)
        return np.stack(streams), np.stack(weights)

    def logits(self, tokens: np.ndarray) -> np.ndarray:
        """(n, vocab_size): the read-out of the output block at every position."""
        return self.residuals(tokens)[0][-1] @ self.unembed

    def predict(self, tokens: np.ndarray) -> np.ndarray:
        """(n,) ints: the predicted next token at every position."""
        return self.logits(tokens).argmax(axis=-1)

    def attention(self, tokens: np.ndarray) -> np.ndarray:
        """(2, h, n, n): both layers' attention weights (h = 1), queries on rows."""
        return self.residuals(tokens)[1]


def sharp_gain(max_len: int) -> float:
    """A scaled score large enough that one wanted key out of max_len gets over 99.7 % of the weight: e^6 ≈ 400."""
    return math.log(check_positive_int("max_len", max_len)) + 6.0


def hand_built_induction(vocab_size: int, max_len: int) -> InductionModel:
    """A previous-token head (layer 1) and an induction head (layer 2) from explicit weights; see InductionModel.

    On a sequence whose first k tokens are distinct and then repeat, it predicts every token of the second copy
    after the first one (the first cannot be known: nothing says where the repeat starts).
    """
    v = check_positive_int("vocab_size", vocab_size)
    length = check_positive_int("max_len", max_len)
    if length < 2:
        raise ValueError(f"max_len: expected at least 2 positions (a token and the one after it), got {max_len}")
    d = 3 * v + length
    # Eight (d_model, d_model) matrices, d_model = 3 * vocab_size + max_len: refuse before building any.
    check_size("vocab_size" if 3 * v >= length else "max_len", "the weights", (8, d, d), np.float64)
    tok, pos, prev, out = (slice(a, a + w) for a, w in ((0, v), (v, length), (v + length, v), (2 * v + length, v)))
    embed = np.zeros((v, d))
    embed[:, tok] = np.eye(v)
    positions = np.zeros((length, d))
    positions[:, pos] = np.eye(length)
    # One head per layer, so d_k = d_model; multiplying W^Q by sqrt(d_k) cancels attention's 1/sqrt(d_k) and the
    # scaled scores are exactly the gains below.
    root_dk = math.sqrt(d)
    gain = sharp_gain(length)

    # Layer 1, previous token (lesson 4's head 0 on V tokens and L positions): query position i asks for the
    # one-hot of i - 1, key j offers its own position. V copies the key's token into the "previous" block.
    w_q, w_k, w_v = np.zeros((d, d)), np.zeros((d, d)), np.zeros((d, d))
    w_q[pos, pos] = root_dk * gain * np.eye(length, k=-1)  # row i of the position block -> column i - 1
    w_k[pos, pos] = np.eye(length)
    w_v[tok, prev] = np.eye(v)
    layer1 = MHAParams(w_q=w_q, w_k=w_k, w_v=w_v, w_o=np.eye(d), h=1)

    # Layer 2, induction: the query offers the current token, the key offers the previous token that layer 1
    # wrote (K-composition), so the score is high where "the token before key j" equals "my token".
    # Position 0 has no previous token: its layer-1 query is zero and, under the causal mask, it attends to
    # itself, writing its own token into "previous". One extra column marks key 0 down by the same gain: every
    # query has exactly one token, so summing the token rows into that column gives every query the same 1.
    w_q, w_k, w_v = np.zeros((d, d)), np.zeros((d, d)), np.zeros((d, d))
    second = gain / 0.99  # layer 1 puts a little less than 1 on the previous token: keep the match as sharp
    w_q[tok, prev] = root_dk * second * np.eye(v)
    w_k[prev, prev] = np.eye(v)
    w_q[tok, out.start] = root_dk * second  # the "every query" column (any column outside prev would do)
    w_k[pos.start, out.start] = -1.0  # key position 0
    w_v[tok, out] = np.eye(v)  # copy the attended token into the output block
    layer2 = MHAParams(w_q=w_q, w_k=w_k, w_v=w_v, w_o=np.eye(d), h=1)

    unembed = np.zeros((d, v))
    unembed[out, :] = np.eye(v)
    return InductionModel(v, length, embed, positions, (layer1, layer2), unembed)


def repeated_sequence(rng: np.random.Generator, vocab_size: int, k: int, n: int) -> np.ndarray:
    """(n,) ints: k distinct random tokens, the same k again, then random tokens up to length n (>= 2k)."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng: expected a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
    check_positive_int("vocab_size", vocab_size)
    check_positive_int("k", k)
    check_positive_int("n", n)
    check_size("vocab_size" if vocab_size >= n else "n", "the tokens drawn", (vocab_size + n,), np.int64)
    if k > vocab_size:
        raise ValueError(f"k: expected at most vocab_size={vocab_size} distinct tokens, got {k}")
    if n < 2 * k:
        raise ValueError(f"n: expected at least 2k = {2 * k} positions for two copies, got {n}")
    first = rng.permutation(vocab_size)[:k]
    return np.concatenate([first, first, rng.integers(vocab_size, size=n - 2 * k)])


# --- head detectors --------------------------------------------------------------------------------------------


def _check_attention(attention: object) -> np.ndarray:
    a = as_float_array("attention", attention, 2)
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"attention: expected self-attention weights of shape (..., n, n), got {a.shape}")
    check_finite("attention", a)
    if (a < 0).any():
        raise ValueError("attention: expected weights >= 0, got negative entries")
    sums = a.sum(axis=-1)
    if not (np.isclose(sums, 1.0, atol=ROW_SUM_TOLERANCE) | (sums == 0)).all():
        raise ValueError(f"attention: expected rows that sum to 1 (softmax weights), got row sums {sums.min():.4g}..")
    return a


def detection_score(attention: np.ndarray, pattern: np.ndarray, *, all_rows: bool = False) -> np.ndarray:
    """Fraction of attention (..., n, n) on the True cells of pattern (broadcastable), one number per map (...).

    The sum of attention on the pattern's cells, divided by the attention in the rows that have at least one
    pattern cell: with rows summing to 1, the mean over those query rows of the weight each puts on its cells.
    all_rows=True divides by every row's attention instead, as TransformerLens' detect_head ("mul") does.
    """
    a = _check_attention(attention)
    all_rows = check_bool("all_rows", all_rows)
    p = as_array("pattern", pattern)
    if p.dtype != np.bool_:
        raise ValueError(f"pattern: expected a boolean array (True = the cells to score), got dtype {p.dtype}")
    try:
        p = np.broadcast_to(p, a.shape)
    except ValueError:
        raise ValueError(f"pattern: expected a shape that broadcasts to attention's {a.shape}, got {p.shape}") from None
    rows = p.any(axis=-1, keepdims=True)  # (..., n, 1): the queries the pattern says something about
    if not rows.any():
        raise ValueError("pattern: expected at least one True cell, got none")
    on_pattern = (a * p).sum(axis=(-2, -1))
    total = a.sum(axis=(-2, -1)) if all_rows else (a * rows).sum(axis=(-2, -1))
    if (total == 0).any():
        raise ValueError("attention: the rows the pattern scores hold no attention (fully masked queries)")
    return on_pattern / total


def previous_token_pattern(n: int) -> np.ndarray:
    """(n, n) boolean: query i -> key i - 1 (row 0 has no cell)."""
    n = check_positive_int("n", n)
    check_size("n", "the pattern", (n, n), bool)
    return np.eye(n, k=-1, dtype=bool)


def _check_tokens_1d(tokens: object) -> np.ndarray:
    """tokens as a non-empty 1-D array of token ids (integers or strings) whose (n, n) pattern fits in memory."""
    t = as_array("tokens", tokens)
    if t.ndim != 1 or len(t) == 0:
        raise ValueError(f"tokens: expected a non-empty 1-D sequence of token ids, got shape {t.shape}")
    # Floats are refused: NaN != NaN would silently make a token differ from itself.
    if not (np.issubdtype(t.dtype, np.integer) or np.issubdtype(t.dtype, np.str_)):
        raise ValueError(f"tokens: expected token ids (integers or strings), got dtype {t.dtype}")
    check_size("tokens", "the pattern", (len(t), len(t)), np.int64)  # a few (n, n) boolean temporaries
    return t


def duplicate_token_pattern(tokens: np.ndarray, *, causal: bool = True) -> np.ndarray:
    """(n, n) boolean: query i -> every earlier key j < i holding the same token (causal=False: any j != i)."""
    t = _check_tokens_1d(tokens)
    causal = check_bool("causal", causal)
    same = (t[:, None] == t[None, :]) & ~np.eye(len(t), dtype=bool)  # (n, n)
    return np.tril(same) if causal else same


def induction_pattern(tokens: np.ndarray, *, causal: bool = True) -> np.ndarray:
    """(n, n) boolean: query i -> key j whose previous token j - 1 (j - 1 < i) equals token i: TransformerLens'.

    causal=False: any j - 1 != i, also later in the sequence (for bidirectional models such as BERT).
    """
    t = _check_tokens_1d(tokens)
    causal = check_bool("causal", causal)
    pattern = np.zeros((len(t), len(t)), dtype=bool)
    pattern[:, 1:] = duplicate_token_pattern(t, causal=causal)[:, :-1]  # cell (i, j) = duplicate (i, j - 1)
    return np.tril(pattern) if causal else pattern


def repeat_pattern(n: int, k: int, back: int, *, start: int = 0) -> np.ndarray:
    """(n, n) boolean: each query t of the second copy -> key t - back; the copies start at start and start + k.

    back = k marks the earlier occurrence (duplicate token), back = k - 1 the token after it (induction).
    """
    for name, value in (("n", n), ("k", k)):
        check_positive_int(name, value)
    if not is_int(back) or not 0 <= back <= k:
        raise ValueError(f"back: expected an integer from 0 to k = {k}, got {back!r}")
    check_nonnegative_int("start", start)
    check_size("n", "the pattern", (n, n), bool)
    if start + k >= n:
        raise ValueError(f"k: expected the second copy to start inside the sequence, start + k < n = {n}; got {k}")
    rows = np.arange(start + k, min(start + 2 * k, n))  # the second copy
    pattern = np.zeros((n, n), dtype=bool)
    pattern[rows, rows - back] = True
    return pattern


def previous_token_score(attention: np.ndarray, *, all_rows: bool = False) -> np.ndarray:
    """(..., n, n) -> (...): mean weight query i puts on key i - 1, over queries 1..n-1."""
    a = _check_attention(attention)
    return detection_score(a, previous_token_pattern(a.shape[-1]), all_rows=all_rows)


def duplicate_token_score(attention: np.ndarray, k: int, *, start: int = 0, all_rows: bool = False) -> np.ndarray:
    """(..., n, n) -> (...): mean weight each query t of the second copy puts on t - k, its earlier occurrence.

    The sequence holds k tokens at start..start+k-1, repeated at start+k..start+2k-1.
    """
    a = _check_attention(attention)
    return detection_score(a, repeat_pattern(a.shape[-1], k, k, start=start), all_rows=all_rows)


def induction_score(attention: np.ndarray, k: int, *, start: int = 0, all_rows: bool = False) -> np.ndarray:
    """(..., n, n) -> (...): mean weight each query t of the second copy puts on t - k + 1, the token after its
    earlier occurrence. The sequence holds k tokens at start..start+k-1, repeated at start+k..start+2k-1.
    """
    a = _check_attention(attention)
    back = check_positive_int("k", k) - 1
    return detection_score(a, repeat_pattern(a.shape[-1], k, back, start=start), all_rows=all_rows)
