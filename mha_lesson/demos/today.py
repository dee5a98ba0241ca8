"""Lesson 19 (Attention in today's models): sinks, gates, QK-norm, MLA, local/global layers, linear heads.

Plain numpy functions the lesson's cells, explorers (widgets/today.py) and tests call. Each variant is checked in
the lesson against an independent computation; the numbers that need MiniLM (seconds per setting) are precomputed
by tests/reference/make_minilm_mla.py into mha_lesson/data/minilm_mla.npz.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .. import head_analysis, pretrained
from .._blas import one_blas_thread
from .._checks import check_positive_int
from ..attention import causal_mask, sliding_window_mask, softmax
from ..linear_attention import linear_attention

DATA = Path(__file__).resolve().parents[1] / "data"
GiB = 2**30

# --- 1. sinks ------------------------------------------------------------------------------------------------


def sink_reference(scores: np.ndarray, v: np.ndarray, sink: float) -> tuple[np.ndarray, np.ndarray]:
    """Independent sink: softmax over [scores, sink] as one longer row, sink column dropped: (weights, out)."""
    column = np.broadcast_to(np.asarray(sink, dtype=float), (*scores.shape[:-1], 1))  # (..., n_q, 1)
    row = np.concatenate([scores, column], axis=-1)  # (..., n_q, n_kv + 1)
    e = np.exp(row - row.max(axis=-1, keepdims=True))
    weights = (e / e.sum(axis=-1, keepdims=True))[..., :-1]
    return weights, weights @ v


def sink_share(scores: np.ndarray, sink: float) -> np.ndarray:
    """The weight a sink logit takes from each row of scores (..., n): e^s / (e^s + sum_j e^score_j)."""
    m = np.maximum(scores.max(axis=-1), sink)
    return np.exp(sink - m) / (np.exp(sink - m) + np.exp(scores - m[..., None]).sum(axis=-1))


# --- 2. gates ------------------------------------------------------------------------------------------------


def head_map(w_v: np.ndarray, w_o: np.ndarray, head: int, h: int, gate: np.ndarray | None = None) -> np.ndarray:
    """Head `head` (of h)'s value-to-output map W_i^V diag(g_i) W_i^O = sum_k g_k (column k of W_i^V)(row k of
    W_i^O), (d_model, d_model); gate (d_model,) or None for no gate (every g_k = 1)."""
    d_k = w_v.shape[1] // h
    cols = slice(head * d_k, (head + 1) * d_k)
    g = np.ones(d_k) if gate is None else gate[cols]
    return (w_v[:, cols] * g) @ w_o[cols, :]


# --- 3. MLA --------------------------------------------------------------------------------------------------


def cache_per_token(
    kind: str, h: int, d_head: int, layers: int, *, h_kv: int = 1, d_c: int = 0, d_rope: int = 0
) -> int:
    """Numbers cached per token over all layers (DeepSeek-V2 Table 1): MHA 2·h·d_h·l, GQA 2·h_kv·d_h·l, MQA
    2·d_h·l, MLA (d_c + d_rope)·l."""
    if kind == "MHA":
        return 2 * h * d_head * layers
    if kind == "GQA":
        return 2 * h_kv * d_head * layers
    if kind == "MQA":
        return 2 * d_head * layers
    if kind == "MLA":
        return (d_c + d_rope) * layers
    raise ValueError(f"kind: expected one of 'MHA', 'GQA', 'MQA', 'MLA', got {kind!r}")


def rope_fold_gap(w_uk: np.ndarray, offsets: Sequence[int], base: float = 10000.0) -> list[float]:
    """How much the matrix folded into the query, R(offset) W^UKᵀ, changes with the key's offset (relative norm).

    w_uk (d_c, d_head). Without RoPE it is W^UKᵀ for every key; with RoPE between W^UK and the query the matrix
    depends on how far back the key lies, so no single matrix can be folded. Rotates pairs (j, j + d/2)."""
    from ..rope import rope

    d_c = w_uk.shape[0]
    # The key k = c W^UK turned by RoPE at offset t is c W^UK R_t; as a map of c that is W^UK R_t, (d_c, d_head).
    folded = [rope(np.eye(d_c) @ w_uk, np.full(d_c, t), base) for t in offsets]
    ref = folded[0]
    return [float(np.linalg.norm(f - ref) / np.linalg.norm(ref)) for f in folded]


def svd_latent(w_k: np.ndarray, w_v: np.ndarray, d_c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Best rank-d_c factorisation of [W^K | W^V] (d_model, 2·d_kv): (W^DKV (d_model, d_c), W^UK, W^UV (d_c, d_kv))."""
    check_positive_int("d_c", d_c)
    w = np.concatenate([w_k, w_v], axis=1)  # (d_model, 2 d_kv): both projections read the same x
    if d_c > min(w.shape):
        raise ValueError(f"d_c: expected at most {min(w.shape)} (the rank of [W^K | W^V]), got {d_c}")
    u, s, vt = np.linalg.svd(w, full_matrices=False)
    down = u[:, :d_c] * s[:d_c]  # (d_model, d_c)
    up = vt[:d_c]  # (d_c, 2 d_kv)
    return down, up[:, : w_k.shape[1]], up[:, w_k.shape[1] :]


def latent_minilm(model: pretrained.MiniLM, d_c: int) -> pretrained.MiniLM:
    """MiniLM whose every layer computes keys and values from a d_c-wide latent c = x W^DKV (SVD of [W^K | W^V])."""
    layers = []
    for layer in model.layers:
        a = layer.attn
        down, up_k, up_v = svd_latent(a.w_k.astype(np.float64), a.w_v.astype(np.float64), d_c)
        attn = dataclasses.replace(a, w_k=(down @ up_k).astype(a.w_k.dtype), w_v=(down @ up_v).astype(a.w_v.dtype))
        layers.append(dataclasses.replace(layer, attn=attn))
    return dataclasses.replace(model, layers=tuple(layers))


MLA_D_CS = (384, 256, 192, 128, 96, 64, 48, 32, 16)


def latent_retrieval(model: pretrained.MiniLM, d_cs: Sequence[int] = MLA_D_CS, pairs: Sequence | None = None) -> dict:
    """Lesson 16's paraphrase retrieval of latent_minilm(model, d_c) for each d_c: accuracy, margin, cosine."""
    pairs = head_analysis.load_paraphrases() if pairs is None else list(pairs)
    sentences = [p[-2] for p in pairs] + [p[-1] for p in pairs]
    partner = np.concatenate([np.arange(len(pairs), 2 * len(pairs)), np.arange(len(pairs))])
    out: dict[str, list[float]] = {"accuracy": [], "margin": [], "cosine": []}
    with one_blas_thread():
        intact = model.encode(sentences)
        for d_c in d_cs:
            emb = latent_minilm(model, d_c).encode(sentences)
            sims = emb @ emb.T  # unit vectors: cosine similarities
            out["accuracy"].append(float(head_analysis.retrieval_accuracy(sims, partner)))
            out["margin"].append(float(head_analysis.retrieval_margin(sims, partner)))
            out["cosine"].append(float(np.mean(np.sum(emb * intact, axis=-1))))
    return {"d_c": np.array(d_cs), **{key: np.array(v) for key, v in out.items()}}


def mla_reference() -> dict[str, np.ndarray]:
    """latent_retrieval(load_minilm()) as tests/reference/make_minilm_mla.py saved it (it takes about a minute)."""
    with np.load(DATA / "minilm_mla.npz") as data:
        return {key: data[key] for key in data.files}


# --- 4. local and global layers ------------------------------------------------------------------------------


def layer_pattern(layers: int, local_per_global: int) -> list[str]:
    """'local' / 'global' for each layer: local_per_global local layers, then one global, repeated (Gemma 3: 5)."""
    check_positive_int("layers", layers)
    if isinstance(local_per_global, bool) or not isinstance(local_per_global, int) or local_per_global < 0:
        raise ValueError(f"local_per_global: expected a non-negative integer, got {local_per_global!r}")
    return ["global" if (i + 1) % (local_per_global + 1) == 0 else "local" for i in range(layers)]


def stack_reach(n: int, window: int, pattern: Sequence[str]) -> np.ndarray:
    """(layers,) how far back the last of n positions reaches after each layer of the pattern (boolean products)."""
    local, full = sliding_window_mask(n, window), causal_mask(n)
    reach = np.eye(n, dtype=bool)
    back = []
    for kind in pattern:
        reach = (full if kind == "global" else local) @ reach
        back.append(n - 1 - int(np.argmax(reach[-1])))
    return np.array(back)


def stack_kv_bytes(
    n: int, window: int, pattern: Sequence[str], h_kv: int, d_k: int, itemsize: int = 2, *, windowed_cache: bool = True
) -> int:
    """KV cache bytes of one sequence of n tokens: global layers keep n tokens, local ones min(n, window) if their
    cache is windowed (else n: a window in the mask only)."""
    kept = [n if kind == "global" or not windowed_cache else min(n, window) for kind in pattern]
    return 2 * sum(kept) * h_kv * d_k * itemsize


# Gemma 3 27B (google/gemma_pytorch, gemma/config.py, get_config_for_27b_v3): 62 layers, 32 query heads, 16 KV
# heads of head_dim 128, sliding window 1024, attn_types 5 x LOCAL_SLIDING then GLOBAL; query_pre_attn_scalar
# 5376 // 32 = 168, so its scores are scaled by 1/sqrt(168), not 1/sqrt(128).
GEMMA3_27B = {
    "layers": 62,
    "h": 32,
    "h_kv": 16,
    "d_k": 128,
    "window": 1024,
    "local_per_global": 5,
    "query_pre_attn_scalar": 168,
}


# --- 5. linear heads -----------------------------------------------------------------------------------------


def recall_accuracy(pairs: int, d_k: int, rule: str, seed: int = 0, trials: int = 4) -> float:
    """Write `pairs` random (unit key, value) pairs into one linear-attention state, then write every key again with
    a new value (a variable reassigned), then query each key: the share of reads closest to the key's *new* value
    among all old and new values."""
    check_positive_int("pairs", pairs)
    check_positive_int("d_k", d_k)
    if rule not in ("additive", "delta"):
        raise ValueError(f"rule: expected 'additive' or 'delta', got {rule!r}")
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(trials):
        k = rng.normal(size=(pairs, d_k))
        k /= np.linalg.norm(k, axis=-1, keepdims=True)  # the delta rule expects unit keys
        v_old, v_new = rng.normal(size=(2, pairs, d_k))
        zeros = np.zeros_like(k)
        # One sequence of 3·pairs tokens: old pairs, new pairs, then reads (zero key and value: they write nothing).
        keys, vals = np.concatenate([k, k, zeros]), np.concatenate([v_old, v_new, zeros])
        q = np.concatenate([zeros, zeros, k])
        beta = None if rule == "additive" else np.concatenate([np.ones(2 * pairs), np.zeros(pairs)])
        read = linear_attention(q, keys, vals, beta=beta, chunk=64)[2 * pairs :]  # (pairs, d_k)
        candidates = np.concatenate([v_new, v_old])  # the right answer for read i is row i
        nearest = np.argmin(((read[:, None, :] - candidates[None]) ** 2).sum(-1), axis=1)
        hits += int((nearest == np.arange(pairs)).sum())
    return hits / (pairs * trials)


def linear_parallel_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Causal linear attention (no softmax), parallel form (Q Kᵀ ⊙ causal) V: q, k (n, d_k), v (n, d_v) -> (n, d_v)."""
    return (np.tril(q @ k.T)) @ v


# --- 6. differential attention -------------------------------------------------------------------------------


def noisy_scores(n: int = 12, target: int = 7, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two score rows sharing the same 'noise' (random scores) and differing in one key: (scores1, scores2), (n,)."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(0, 1.0, size=n)
    s1 = noise.copy()
    s1[target] += 2.0  # map 1: the signal on top of the common noise
    return s1, noise


def cancelling_lambda(s1: np.ndarray, s2: np.ndarray) -> float:
    """The λ at which noise shared by two score rows (n,) cancels exactly: Z2 / Z1, the ratio of their softmax
    denominators. Where s1 and s2 agree, softmax(s1)_j - λ softmax(s2)_j = e^{s_j} (1/Z1 - λ/Z2), zero at λ = Z2/Z1."""
    return float(np.exp(s2 - s1.max()).sum() / np.exp(s1 - s1.max()).sum())


def differential_row(s1: np.ndarray, s2: np.ndarray, lam: float) -> np.ndarray:
    """softmax(s1) - λ softmax(s2) for one row."""
    return softmax(s1) - lam * softmax(s2)


def signal_to_noise(weights: np.ndarray, target: int) -> float:
    """Weight on the target key over the largest absolute weight elsewhere."""
    others = np.delete(weights, target)
    return float(weights[target] / np.abs(others).max())


def kib(nbytes: float) -> str:
    """A byte count as KiB text."""
    return f"{nbytes / 1024:,.1f} KiB"


def ceil_div(a: int, b: int) -> int:
    """⌈a / b⌉ for positive integers."""
    return -(-a // b)


def reach_by_layer(n: int, window: int, pattern: Sequence[str]) -> np.ndarray:
    """(layers,) the same as stack_reach without the (n, n) matrices: a local layer adds window - 1 tokens of
    reach, a global layer reaches the first token; capped at n - 1. Works at n = 128K."""
    back, out = 0, []
    for kind in pattern:
        back = n - 1 if kind == "global" else min(n - 1, back + window - 1)
        out.append(back)
    return np.array(out)


# The sink demo: 6 queries over 8 keys. Queries 0-2 each match one key strongly; queries 3-5 find nothing
# (every score low and alike), the case where plain softmax must still hand out a total weight of 1.
SINK_KEYS = 8


def sink_demo_inputs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(scores (6, 8), values (8, 4)): three queries with a match, three with nothing to find."""
    rng = np.random.default_rng(seed)
    scores = rng.normal(-2.0, 0.3, size=(6, SINK_KEYS))  # low, similar scores: nothing stands out
    for i, j in enumerate((1, 4, 6)):
        scores[i, j] = 6.0  # a clear match
    values = rng.normal(size=(SINK_KEYS, 4))
    return scores, values


def sink_demo(sink: float, seed: int = 0) -> dict[str, np.ndarray]:
    """Weights (6, 8), row sums (6,) and output norms (6,) with a sink logit (compared with the scaled scores)."""
    scores, values = sink_demo_inputs(seed)
    weights, out = sink_reference(scores, values, sink)
    return {"weights": weights, "row_sums": weights.sum(-1), "norms": np.linalg.norm(out, axis=-1)}
