"""Lesson 17 (Attention at scale: long sequences, the KV cache and grouped queries), on the core.

What the lesson computes, as plain numpy functions its cells, explorers (widgets/scale.py) and tests call:
the online softmax on two blocks by hand; peak memory (tracemalloc) and time of tiled against standard
attention; per-token cost of decoding with a KV cache; grouped-query attention made from a multi-head layer by
mean-pooling its key/value heads; RoPE's scores, its interleaved variant and a previous-token head built from
RoPE alone; and the stream norms and last-layer gradients of pre-LN and post-LN stacks.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
import time
from collections.abc import Sequence

import numpy as np

from .. import head_analysis, pretrained
from .._blas import one_blas_thread
from .._checks import as_float_array, check_kv_heads, check_positive_int
from ..attention import causal_mask, scaled_dot_product_attention, softmax
from ..cost import flop_count
from ..encoder import EncoderLayerParams, encoder_layer, gelu, init_encoder_layer, layer_norm
from ..kv_cache import KVCache, decode_step
from ..measure import peak_bytes
from ..multihead import multi_head_attention
from ..projections import MHAParams, init_params
from ..rope import rope, rope_angles
from ..tiled import rescale, tiled_attention
from .toy import TOKENS, WORD, token_part

# --- 1. the online softmax, by hand on two blocks ---------------------------------------------------------


def online_softmax_two_blocks(scores: np.ndarray, values: np.ndarray, split: int) -> dict[str, np.ndarray | float]:
    """One query row, scores (n,) and values (n, d_v), in two key blocks scores[:split] and scores[split:].

    Returns every running number: after block 1 its max m1, sum l1 and output o1 (shift m1); the new max m,
    the factor exp(m1 - m), the rescaled and completed sums l and o; the result o / l; the softmax computed in
    one go; and what forgetting the rescale would give.
    """
    scores = as_float_array("scores", scores)
    values = as_float_array("values", values, 2)
    if scores.ndim != 1 or values.shape[0] != scores.shape[0]:
        raise ValueError(f"values: expected shape ({scores.shape[0]}, d_v) to match scores, got {values.shape}")
    if not 0 < split < len(scores):
        raise ValueError(f"split: expected 1 to {len(scores) - 1} (both blocks non-empty), got {split!r}")
    s1, s2, v1, v2 = scores[:split], scores[split:], values[:split], values[split:]
    m1 = s1.max()
    e1 = np.exp(s1 - m1)  # block 1's terms, shifted by its own max
    sum1, o1 = e1.sum(), e1 @ v1  # () and (d_v,)
    m = max(m1, s2.max())
    e2 = np.exp(s2 - m)  # block 2's terms, shifted by the new max
    sum_rescaled, o_rescaled = rescale(np.array([[sum1]]), o1[None, :], np.array([[m1]]), np.array([[m]]))
    total, o = sum_rescaled[0, 0] + e2.sum(), o_rescaled[0] + e2 @ v2
    forgot = (o1 + e2 @ v2) / (sum1 + e2.sum())  # old sums kept on the old shift m1, added to terms on shift m
    return {"m1": m1, "l1": sum1, "o1": o1, "m": m, "factor": math.exp(m1 - m), "l": total, "o": o,
            "result": o / total, "direct": softmax(scores) @ values, "forgot_rescale": forgot}  # fmt: skip


# The step-through explorer's row: twelve keys in four blocks of three. The maximum rises in blocks 2 and 4 and
# not in block 3, so the rescale factor is below 1 twice and exactly 1 once. Value j is the number j + 1, so the
# output o / l is a weighted average of 1..12: it says which keys the query reads.
STEP_SCORES = np.array([1.0, 2.0, 0.5, 5.0, 3.0, 1.0, 0.0, 2.5, 4.0, 6.0, 1.0, 3.0])
STEP_VALUES = np.arange(1.0, 13.0)
STEP_BLOCK = 3


def online_softmax_steps(
    scores: np.ndarray = STEP_SCORES, values: np.ndarray = STEP_VALUES, block: int = STEP_BLOCK
) -> list[dict[str, float | int]]:
    """One query row, scores (n,) and scalar values (n,), read `block` keys at a time: the state after each block.

    Each step holds the keys read (start, stop), the block's largest score, the running max before (m_old, -inf
    at first) and after (m), the factor exp(m_old - m) that moves the old sums onto the new shift (1 at first),
    the sum l, the weighted sum o, and the output so far o / l.
    """
    scores, values = as_float_array("scores", scores), as_float_array("values", values)
    if scores.ndim != 1 or values.shape != scores.shape:
        raise ValueError(f"values: expected shape {scores.shape} like scores (one number per key), got {values.shape}")
    block = check_positive_int("block", block)
    m, total, o, steps = -math.inf, 0.0, 0.0, []
    for start in range(0, len(scores), block):
        s, v = scores[start : start + block], values[start : start + block]
        m_new = max(m, float(s.max()))
        factor = math.exp(m - m_new) if m > -math.inf else 1.0  # nothing summed yet: nothing to move
        e = np.exp(s - m_new)  # this block's terms on the new shift
        total, o = total * factor + float(e.sum()), o * factor + float(e @ v)
        steps.append({"start": start, "stop": start + len(s), "block_max": float(s.max()), "m_old": m, "m": m_new,
                      "factor": factor, "l": total, "o": o, "out": o / total})  # fmt: skip
        m = m_new
    return steps


# --- 1. peak memory and time of tiled against standard attention --------------------------------------------

D_K = 64  # one head of the width most models use
NS = (512, 1024, 2048, 4096, 8192, 16384, 32768)  # sequence lengths measured
BLOCKS = (64, 128, 256, 512)  # key-block sizes measured (512 is tiled_attention's default)
STANDARD_MAX = 4096  # longest sequence whose standard (n, n) weights the lesson allocates (64 MiB in float32)
MiB, GiB = 2**20, 2**30


def head_inputs(n: int, n_kv: int | None = None, d_k: int = D_K, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Random float32 q (n, d_k), k and v (n_kv, d_k); n_kv defaults to n. The first rows never depend on n."""
    n = check_positive_int("n", n)
    n_kv = n if n_kv is None else check_positive_int("n_kv", n_kv)
    q = np.random.default_rng(seed).standard_normal((n, d_k), dtype=np.float32)
    k, v = (np.random.default_rng(seed + i).standard_normal((n_kv, d_k), dtype=np.float32) for i in (1, 2))
    return q, k, v


def tiled_peak(n: int, block: int, d_k: int = D_K, key_blocks: int | None = None) -> int:
    """tracemalloc peak bytes of tiled_attention on one float32 head of n queries.

    key_blocks=None runs against all n keys. Each block's scores are freed before the next block's exist, so
    every block allocates the same: key_blocks=1 (n queries against the first block of keys only) reaches the
    same peak in a fraction of the time (tests check it against full runs).
    """
    block = check_positive_int("block", block)
    n_kv = n if key_blocks is None else min(n, check_positive_int("key_blocks", key_blocks) * block)
    q, k, v = head_inputs(n, n_kv, d_k)
    return peak_bytes(tiled_attention, q, k, v, block=block)


def standard_peak(n: int, d_k: int = D_K) -> int:
    """tracemalloc peak bytes of scaled_dot_product_attention on one float32 head of length n."""
    return peak_bytes(scaled_dot_product_attention, *head_inputs(n, None, d_k))


def predicted_tiled_bytes(n: int | np.ndarray, block: int, itemsize: int = 4) -> int | np.ndarray:
    """One (n, block) block of scores: the only array of tiled attention that grows with n times the block."""
    return n * np.minimum(block, n) * itemsize


def predicted_standard_bytes(n: int | np.ndarray, itemsize: int = 4) -> int | np.ndarray:
    """The (n, n) attention weights of one head."""
    return n * n * itemsize


@functools.cache
def memory_table(ns: tuple[int, ...] = NS, blocks: tuple[int, ...] = BLOCKS, d_k: int = D_K) -> dict[str, np.ndarray]:
    """Measured peaks (bytes): 'tiled' (len(blocks), len(ns)) with one key block each; 'standard' (len(ns),),
    NaN beyond STANDARD_MAX. Measured once per process (about a second) and then read by the explorer."""
    tiled = np.empty((len(blocks), len(ns)))
    with one_blas_thread():  # the peak does not depend on threads; one thread is faster on a busy machine
        for col, n in enumerate(ns):
            q, k, v = head_inputs(n, max(blocks), d_k)  # made once per n; each block size reads a prefix (a view)
            for row, b in enumerate(blocks):
                tiled[row, col] = peak_bytes(tiled_attention, q, k[:b], v[:b], block=b)  # one key block
        standard = np.array([standard_peak(n, d_k) if n <= STANDARD_MAX else np.nan for n in ns])
    return {"ns": np.array(ns), "blocks": np.array(blocks), "tiled": tiled, "standard": standard}


def time_tiled_and_standard(
    ns: Sequence[int], block: int = 512, d_k: int = D_K, repeats: int = 3
) -> dict[str, np.ndarray]:
    """Median seconds of tiled and standard attention per n (one float32 head, one BLAS thread), interleaved."""
    tiled, standard = [], []
    with one_blas_thread():  # threads waiting for each other on a busy machine would swamp both
        for n in ns:
            q, k, v = head_inputs(n, None, d_k)
            runs: dict[str, list[float]] = {"tiled": [], "standard": []}
            calls = {"tiled": functools.partial(tiled_attention, q, k, v, block=block),
                     "standard": functools.partial(scaled_dot_product_attention, q, k, v)}  # fmt: skip
            for _ in range(repeats):  # alternating, so that the machine's load hits both alike
                for name, fn in calls.items():
                    start = time.perf_counter()
                    fn()
                    runs[name].append(time.perf_counter() - start)
            tiled.append(statistics.median(runs["tiled"]))
            standard.append(statistics.median(runs["standard"]))
    return {"ns": np.array(ns), "tiled": np.array(tiled), "standard": np.array(standard)}


def tiled_head(n: int, block: int = 512, d_k: int = D_K) -> dict[str, np.ndarray | float | int]:
    """One exact float32 head of length n by tiled_attention: its inputs, output, tracemalloc peak and seconds."""
    q, k, v = head_inputs(n, None, d_k)
    result: dict[str, np.ndarray] = {}
    start = time.perf_counter()
    with one_blas_thread():
        peak = peak_bytes(lambda: result.setdefault("out", tiled_attention(q, k, v, block=block)))
    return {"q": q, "k": k, "v": v, "out": result["out"], "peak": peak, "seconds": time.perf_counter() - start}


def rows_against_standard(q: np.ndarray, k: np.ndarray, v: np.ndarray, out: np.ndarray, rows: np.ndarray) -> float:
    """max |out[rows] - standard attention of q[rows]|: each query row is a softmax of its own, so a few rows
    of a sequence far too long for the standard version can still be checked against it."""
    ref, _ = scaled_dot_product_attention(q[rows].astype(np.float64), k.astype(np.float64), v.astype(np.float64))
    return float(np.abs(out[rows] - ref).max())


# --- 2. decoding with a KV cache ------------------------------------------------------------------------------


def decode_all(x: np.ndarray, params: MHAParams) -> np.ndarray:
    """Feed x (n, d_model) to decode_step one token at a time with one KVCache: (n, d_model) outputs."""
    cache = KVCache()
    return np.stack([decode_step(x_t, params, cache) for x_t in x])


def decode_timings(tokens: int = 256, d_model: int = 64, h: int = 4, seed: int = 0) -> dict[str, np.ndarray]:
    """Seconds for each new token t (one BLAS thread): decode_step with a cache, and causal MHA over tokens 0..t."""
    params = init_params(d_model, h, seed=seed, dtype=np.float32)
    x = np.random.default_rng(seed + 1).standard_normal((tokens, d_model), dtype=np.float32)
    cache = KVCache()
    cached, recomputed = np.empty(tokens), np.empty(tokens)
    with one_blas_thread():
        for t in range(tokens):  # alternating token by token, so that the machine's load hits both alike
            start = time.perf_counter()
            decode_step(x[t], params, cache)
            cached[t] = time.perf_counter() - start
            prefix = x[: t + 1]
            start = time.perf_counter()
            multi_head_attention(prefix, prefix, prefix, params, causal_mask(t + 1), need_weights=False)
            recomputed[t] = time.perf_counter() - start
    return {"position": np.arange(tokens), "cached": cached, "recomputed": recomputed}


def decode_flops(position: np.ndarray, d_model: int, h: int) -> dict[str, np.ndarray]:
    """FLOPs to produce the output of the token at each position (it sees position + 1 keys).

    cached: project the one new token (q, k, v and the output: 4 products of (1, d) by (d, d)), then one query
    row per head against the cache; recomputed: the whole causal forward pass over the prefix (cost.flop_count;
    our numpy code computes the masked scores too).
    """
    seen = np.asarray(position) + 1  # keys the new token attends to
    d_k = d_model // h
    cached = 4 * 2 * d_model * d_model + h * seen * (2 * d_k + 5 + 2 * d_k)  # projections + scores, softmax, sum
    recomputed = np.array([flop_count(int(t), int(t), d_model, h)["total"] for t in seen])
    return {"cached": cached, "recomputed": recomputed}


# Sizes of a 7B-class decoder (those of Mistral 7B: 32 layers, d_model 4096, 32 query heads of d_k 128,
# and 8 key/value heads), at a 4096-token context in float16.
MODEL_7B = {"layers": 32, "d_model": 4096, "h": 32, "n": 4096}


# --- 3. grouped-query attention from a multi-head layer -----------------------------------------------------


def pool_kv_heads(params: MHAParams, h_kv: int) -> MHAParams:
    """A plain MHA layer (h_kv = h) turned into h_kv key/value heads: each group's K and V columns averaged.

    Query head i keeps its own W_i^Q and reads key/value head i // (h / h_kv), whose W^K and W^V are the
    mean of the group's original heads: the conversion Ainslie et al. (2023) start from before uptraining.
    """
    if params.h_kv != params.h:
        raise ValueError(f"params: expected a plain multi-head layer (h_kv = h = {params.h}), got h_kv={params.h_kv}")
    h_kv = check_kv_heads(params.h, h_kv)
    g, d_k = params.h // h_kv, params.d_k

    def pool(a: np.ndarray | None) -> np.ndarray | None:
        # Columns are head-major, head i = j*g + r, so (..., h*d_k) -> (..., h_kv, g, d_k) puts group j together.
        return None if a is None else a.reshape(*a.shape[:-1], h_kv, g, d_k).mean(axis=-2).reshape(*a.shape[:-1], -1)

    return dataclasses.replace(params, h_kv=h_kv, w_k=pool(params.w_k), w_v=pool(params.w_v),
                               b_k=pool(params.b_k), b_v=pool(params.b_v))  # fmt: skip


def queries_shared(params: MHAParams) -> MHAParams:
    """A copy whose every query head uses head 0's W^Q columns (lesson 11's 'same projection for every head')."""
    w_q = np.tile(params.w_q_head(0), (1, params.h))  # (d_model, h*d_k): head 0's block h times
    b_q = None if params.b_q is None else np.tile(params.b_head("b_q", 0), params.h)
    return dataclasses.replace(params, w_q=w_q, b_q=b_q)


def group_differences(weights: np.ndarray, group_size: int) -> np.ndarray:
    """For each pair of query heads in one group, max |A_i - A_j|: (pairs,); weights (h, n_q, n_kv)."""
    diffs = [np.abs(weights[i] - weights[j]).max()
             for g0 in range(0, len(weights), group_size)
             for i in range(g0, g0 + group_size) for j in range(i + 1, g0 + group_size)]  # fmt: skip
    return np.array(diffs)


def aligned_causal_mask(n_q: int, n_kv: int, corner: str) -> np.ndarray:
    """(n_q, n_kv) causal mask when queries and keys differ in number: 'top-left' or 'bottom-right' alignment.

    top-left (PyTorch's is_causal, tiled_attention's causal=True): query i sees keys 0..i, as if the queries were
    the first n_q tokens. bottom-right (FlashAttention 2.1 on, a KV cache): query i sees keys 0..i + n_kv - n_q,
    as if the queries were the last n_q tokens, which is what a chunk of new tokens after a cached prefix is.
    """
    n_q, n_kv = check_positive_int("n_q", n_q), check_positive_int("n_kv", n_kv)
    shift = {"top-left": 0, "bottom-right": n_kv - n_q}
    if corner not in shift:
        raise ValueError(f"corner: expected 'top-left' or 'bottom-right', got {corner!r}")
    return np.arange(n_kv)[None, :] <= np.arange(n_q)[:, None] + shift[corner]


def decode_chunk(prefix: np.ndarray, chunk: np.ndarray, params: MHAParams) -> np.ndarray:
    """Cache prefix (n_p, d_model) token by token, then decode chunk (n_c, d_model): its (n_c, d_model) outputs."""
    cache = KVCache()
    for x_t in prefix:
        decode_step(x_t, params, cache)
    return np.stack([decode_step(x_t, params, cache) for x_t in chunk])


# What GQA costs a trained model: MiniLM (12 heads per layer, 6 layers) with its key/value heads mean-pooled
# as in section 3, on lesson 16's paraphrase retrieval (mha_lesson/data/paraphrases.tsv, 212 sentences).
GQA_H_KV = (12, 6, 4, 3, 2, 1)


def pooled_minilm(model: pretrained.MiniLM, h_kv: int) -> pretrained.MiniLM:
    """A copy of MiniLM whose every layer has h_kv key/value heads, each the mean of its group (pool_kv_heads)."""
    layers = tuple(dataclasses.replace(layer, attn=pool_kv_heads(layer.attn, h_kv)) for layer in model.layers)
    return dataclasses.replace(model, layers=layers)


def gqa_retrieval(
    model: pretrained.MiniLM, h_kvs: Sequence[int] = GQA_H_KV, pairs: Sequence | None = None
) -> dict[str, np.ndarray]:
    """Paraphrase retrieval of MiniLM pooled to each h_kv, with no further training: arrays over h_kvs.

    accuracy and margin are head_analysis.retrieval_accuracy and retrieval_margin (lesson 16's metric) on every
    shipped pair (or `pairs`); cosine is the mean cosine between each sentence's embedding and the intact model's.
    """
    pairs = head_analysis.load_paraphrases() if pairs is None else list(pairs)
    sentences = [p[-2] for p in pairs] + [p[-1] for p in pairs]
    partner = np.concatenate([np.arange(len(pairs), 2 * len(pairs)), np.arange(len(pairs))])
    with one_blas_thread():  # faster than two threads on a busy machine, as head_analysis does
        intact = model.encode(sentences)
        out: dict[str, list[float]] = {"accuracy": [], "margin": [], "cosine": []}
        for h_kv in h_kvs:
            emb = intact if h_kv == model.h else pooled_minilm(model, h_kv).encode(sentences)
            sims = emb @ emb.T  # unit vectors: cosine similarities
            out["accuracy"].append(float(head_analysis.retrieval_accuracy(sims, partner)))
            out["margin"].append(float(head_analysis.retrieval_margin(sims, partner)))
            out["cosine"].append(float(np.mean(np.sum(emb * intact, axis=-1))))
    return {"h_kv": np.array(h_kvs), **{key: np.array(v) for key, v in out.items()}}


# gqa_retrieval(load_minilm()) on the 106 shipped pairs: it takes 10-30 s on two busy cores, too long for the
# lesson's run, so the lesson reads these; tests/test_lesson17_scale.py recomputes them.
GQA_RETRIEVAL = {
    "h_kv": np.array(GQA_H_KV),
    "accuracy": np.array([211, 209, 209, 206, 208, 204]) / 212,  # sentences whose paraphrase is the nearest
    "margin": np.array([0.373468, 0.258800, 0.221729, 0.206164, 0.180059, 0.162025]),
    "cosine": np.array([1.0, 0.720684, 0.625726, 0.607233, 0.568560, 0.555543]),
}


# --- 4. RoPE ---------------------------------------------------------------------------------------------------


def rope_score_table(q: np.ndarray, k: np.ndarray, n: int, base: float = 10000.0) -> np.ndarray:
    """(n, n): entry (m, j) = rope(q at position m) . rope(k at position j), the same q and k (d_k,) everywhere."""
    q, k = (np.broadcast_to(as_float_array(name, a), (n, len(a))) for name, a in (("q", q), ("k", k)))
    return rope(q, base=base) @ rope(k, base=base).T


def offset_spread(table: np.ndarray) -> float:
    """Largest range (max - min) of a square table along any of its diagonals: 0 when only j - m matters."""
    n = len(table)
    return float(max(np.ptp(np.diagonal(table, offset)) for offset in range(-n + 1, n)))


def rope_interleaved(x: np.ndarray, base: float = 10000.0) -> np.ndarray:
    """RoPE with the RoFormer paper's pairing: features (2j, 2j+1) turn together; x (..., n, d_k), positions 0..n-1."""
    x = as_float_array("x", x, 2)
    angles = rope_angles(np.arange(x.shape[-2]), x.shape[-1], base)  # (n, d_k/2)
    cos, sin = np.cos(angles), np.sin(angles)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty(x.shape, dtype=np.result_type(x, cos))
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = odd * cos + even * sin
    return out


def half_split_order(d_k: int) -> np.ndarray:
    """The permutation that puts feature 2j at j and 2j+1 at j + d_k/2: interleaved pairs -> half-split pairs."""
    return np.concatenate([np.arange(0, d_k, 2), np.arange(1, d_k, 2)])


ROPE_D_K = 16
ROPE_PAIRS = 2  # the key puts its weight on the two fastest pairs: slow ones barely tell neighbours apart
ROPE_GAIN = 16.0  # scaled score of the wanted key (the lesson prints how much less a neighbour scores)


def rope_previous_token_head(
    tokens: Sequence[str] = TOKENS, *, gain: float = ROPE_GAIN, start: int = 0, use_rope: bool = True
) -> np.ndarray:
    """A head that looks one token back using RoPE alone: (n, n) causal weights on the toy sentence's words.

    The input holds the word one-hots only, no positions. Every word writes the same key k = c and the same
    query q = R(-1) c, where R(p) turns pair j by p * theta_j. RoPE turns the query at m by R(m) and the key
    at j by R(j), so the score is c . R(j - m + 1) c = sum_j |c_j|^2 cos((j - m + 1) theta_j): largest at
    j = m - 1, for every m, whatever `start` (the position of the first token) is. Without RoPE all scores
    are equal and the weights uniform.
    """
    x = token_part(tokens)  # (n, d_model): which word, nothing about where
    n = len(x)
    c = np.zeros(ROPE_D_K)
    c[:ROPE_PAIRS] = 1.0 / math.sqrt(ROPE_PAIRS)  # first feature of each fast pair; |c| = 1
    back_one = rope(c[None, :], positions=np.array([-1.0]))[0]  # R(-1) c, (d_k,)
    w_k, w_q = np.zeros((x.shape[1], ROPE_D_K)), np.zeros((x.shape[1], ROPE_D_K))
    w_k[WORD] = c  # every word row: the same key
    w_q[WORD] = (
        gain * math.sqrt(ROPE_D_K) * back_one
    )  # sqrt(d_k) undoes attention's scaling: the score is gain * cos-sum
    q, k = x @ w_q, x @ w_k  # (n, d_k) each, the same row for every token
    if use_rope:
        positions = start + np.arange(n)
        q, k = rope(q, positions), rope(k, positions)
    _, weights = scaled_dot_product_attention(q, k, k, causal_mask(n))
    return weights


# --- 6. pre-LN against post-LN ----------------------------------------------------------------------------------

LN_D_MODEL, LN_H, LN_TOKENS = 64, 4, 16


def layer_norm_backward(x: np.ndarray, gamma: np.ndarray, grad_out: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """Gradient through layer_norm: x (..., d), grad_out (..., d) of the output -> (..., d) of the input.

    With x_hat = (x - mean) / sigma and g = gamma * grad_out: grad_x = (g - mean(g) - x_hat * mean(g * x_hat)) / sigma.
    The two means remove what a layer norm cannot pass on: a shift of every feature, and a rescaling of the row.
    """
    xc = x - x.mean(axis=-1, keepdims=True)
    sigma = np.sqrt(np.mean(xc * xc, axis=-1, keepdims=True) + eps)  # (..., 1)
    x_hat = xc / sigma
    g = gamma * grad_out
    return (g - g.mean(axis=-1, keepdims=True) - x_hat * np.mean(g * x_hat, axis=-1, keepdims=True)) / sigma


def init_stack(layers: int, seed: int = 0) -> list[EncoderLayerParams]:
    """`layers` random encoder layers (d_model 64, h 4; init_encoder_layer: Glorot attention, BERT's N(0, 0.02)
    feed-forward weights), each from its own seed."""
    check_positive_int("layers", layers)
    return [init_encoder_layer(LN_D_MODEL, LN_H, seed=seed + 2 * i) for i in range(layers)]


def stack_inputs(seed: int = 0) -> np.ndarray:
    """(16, 64) random tokens, layer-normalised as an embedding layer's output would be."""
    x = np.random.default_rng(seed).standard_normal((LN_TOKENS, LN_D_MODEL))
    return layer_norm(x, np.ones(LN_D_MODEL), np.zeros(LN_D_MODEL))


def stream_norms(x: np.ndarray, stack: Sequence[EncoderLayerParams], norm: str) -> np.ndarray:
    """Mean norm of a token's vector in the residual stream: at the input, then after each layer; (layers + 1,)."""
    norms = [np.linalg.norm(x, axis=-1).mean()]
    for params in stack:
        x, _ = encoder_layer(x, params, norm=norm)
        norms.append(np.linalg.norm(x, axis=-1).mean())
    return np.array(norms)


def last_layer_ffn(x: np.ndarray, params: EncoderLayerParams, norm: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The last layer, step by step: (its output, the GELU activations feeding w_2, the sum s before the last LN).

    pre-LN: s = x1 + FFN(LN2(x1)) with x1 = x + MHA(LN1(x)), then the model's final layer norm: out = LN(s).
    post-LN: s = x1 + FFN(x1) with x1 = LN1(x + MHA(x)), then out = LN2(s). Either way out = LN(s) (the final
    one has gamma = 1, beta = 0), and s depends on w_2 through hidden @ w_2.
    """
    ln1 = functools.partial(layer_norm, gamma=params.ln1_gamma, beta=params.ln1_beta, eps=params.eps)
    if norm == "pre":
        y = ln1(x)
        x1 = x + multi_head_attention(y, y, y, params.attn, need_weights=False)[0]
        u = layer_norm(x1, params.ln2_gamma, params.ln2_beta, params.eps)
    else:
        x1 = ln1(x + multi_head_attention(x, x, x, params.attn, need_weights=False)[0])
        u = x1
    hidden = gelu(u @ params.ffn.w_1 + params.ffn.b_1)  # (n, d_ff)
    s = x1 + hidden @ params.ffn.w_2 + params.ffn.b_2
    d = s.shape[-1]
    gamma, beta = (np.ones(d), np.zeros(d)) if norm == "pre" else (params.ln2_gamma, params.ln2_beta)
    return layer_norm(s, gamma, beta, params.eps), hidden, s


def last_ffn_gradient(layers: int, norm: str, seed: int = 0) -> np.ndarray:
    """d(loss)/d(w_2) of the last layer's feed-forward network, (d_ff, d_model), for a stack of `layers` layers.

    loss = sum(r * output) for a fixed random r (a random linear read-out of the model's output); the output
    is the final layer norm of the stream for pre-LN (as in GPT-2), the last layer's own output for post-LN.
    """
    if norm not in ("pre", "post"):
        raise ValueError(f"norm: expected 'pre' or 'post', got {norm!r}")
    stack = init_stack(layers, seed)
    x = stack_inputs(seed)
    for params in stack[:-1]:
        x, _ = encoder_layer(x, params, norm=norm)
    last = stack[-1]
    _, hidden, s = last_layer_ffn(x, last, norm)
    r = np.random.default_rng(seed + 1).standard_normal(s.shape)  # (n, d_model): the read-out
    gamma = np.ones(s.shape[-1]) if norm == "pre" else last.ln2_gamma
    grad_s = layer_norm_backward(s, gamma, r, last.eps)  # (n, d_model)
    return hidden.T @ grad_s  # s = ... + hidden @ w_2: the gradient of w_2 is hidden^T grad_s
