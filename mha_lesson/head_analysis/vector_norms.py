"""Value-norm weighting and attention sinks, after Kobayashi et al. (2020).

Kobayashi et al. (2020), "Attention is Not Only a Weight: Analyzing Transformers with Vector Norms" (EMNLP):
what token j adds through head i is A_ij (x_j W_i^V + b_i^V) W_i^O, so its size is A_ij times the norm of the
transformed value. Heads that park attention on [CLS] or [SEP] (a sink) turn out to add little there, because
those tokens' value vectors are small. Lesson 15 draws the sink plot both ways with sink_scores.
"""

from __future__ import annotations

import numpy as np

from .. import pretrained
from .._blas import one_blas_thread
from .._checks import as_finite_array
from ..projections import MHAParams
from ._common import check_model, check_weights, trace_layers
from .token_scores import corpus_scores


def value_norms(x: np.ndarray, params: MHAParams) -> np.ndarray:
    """x (..., n, d_model) -> (..., h, n): ||(x_j W_i^V + b_i^V) W_i^O||, the size of what token j adds via head i."""
    x = as_finite_array("x", x, 2)
    if not isinstance(params, MHAParams):
        raise ValueError(f"params: expected an MHAParams, got {type(params).__name__}")
    if x.shape[-1] != params.d_model:
        raise ValueError(f"x: expected shape (..., n, d_model={params.d_model}) to match params, got {x.shape}")
    rows, d_k = x.reshape(-1, params.d_model) @ params.w_v, params.d_k  # (tokens, d_model): all tokens, one product
    if params.b_v is not None:
        rows += params.b_v
    # One (tokens, d_k) @ (d_k, d_model) product per head: far faster than numpy's batches of tiny products.
    norms = np.stack(
        [np.linalg.norm(rows[:, i * d_k : (i + 1) * d_k] @ params.w_o_head(i), axis=-1) for i in range(params.h)]
    )
    return np.moveaxis(norms.reshape(params.h, *x.shape[:-1]), 0, -2)  # (h, ..., n) -> (..., h, n)


def norm_weighted(weights: np.ndarray, norms: np.ndarray) -> np.ndarray:
    """||A_ij v_j W_i^O|| = A_ij ||v_j W_i^O||: weights (..., h, n, n) and value_norms (..., h, n) -> (..., h, n, n)."""
    w = check_weights(weights, "weights")
    norms = as_finite_array("norms", norms)
    if norms.shape != w.shape[:-1]:
        raise ValueError(f"norms: expected shape {w.shape[:-1]} (..., h, n) to match weights, got {norms.shape}")
    return w * norms[..., None, :]  # weights are >= 0, so the norm of A_ij f(x_j) is A_ij ||f(x_j)||


def sink_scores(model: pretrained.MiniLM, sentences: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
    """The sink plot both ways: corpus_scores of the attention weights and of the value-norm-weighted maps.

    Returns {"attention": corpus_scores(A), "value-norm": corpus_scores(A_ij ||v_j W_i^O|| with every row rescaled
    to sum to 1), "norms": {"[CLS]", "[SEP]", "other"}: mean ||v_j W_i^O|| per (layer, head) of those tokens}.
    sentences default to pretrained.corpus(); all run in one padded batch.
    """
    check_model(model, "tokenize", "embed")
    sentences = pretrained.corpus() if sentences is None else pretrained._check_sentences(sentences)
    if not sentences:
        raise ValueError("sentences: expected at least one sentence, got none")
    ids, lengths, _ = model.tokenize(sentences)
    # Small products, as in MiniLM.attentions_many: one BLAS thread (see mha_lesson._blas).
    with one_blas_thread():
        inputs, weights = trace_layers(model, ids, lengths)
        norms = np.stack(
            [value_norms(x, layer.attn) for x, layer in zip(inputs[:-1], model.layers, strict=True)], axis=1
        )  # (N, L, h, n)
    attention = np.stack(weights, axis=1)  # (N, L, h, n, n)
    weighted = norm_weighted(attention, norms)
    total = weighted.sum(axis=-1, keepdims=True)
    weighted = np.divide(weighted, total, out=np.zeros_like(weighted), where=total > 0)
    cut = [slice(None, int(n)) for n in lengths]  # each sentence's own tokens: padded queries and keys go
    other = np.concatenate([norms[b, ..., 1 : c.stop - 1] for b, c in enumerate(cut)], axis=-1)  # (L, h, tokens)
    return {
        "attention": corpus_scores([attention[b][..., c, c] for b, c in enumerate(cut)]),
        "value-norm": corpus_scores([weighted[b][..., c, c] for b, c in enumerate(cut)]),
        "norms": {
            "[CLS]": norms[..., 0].mean(axis=0),
            "[SEP]": np.mean([norms[b, ..., c.stop - 1] for b, c in enumerate(cut)], axis=0),
            "other": other.mean(axis=-1),
        },
    }
