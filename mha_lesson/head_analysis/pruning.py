"""Pruning heads on a task, after Michel et al. (2019): which heads a paraphrase-retrieval task needs.

Michel, Levy and Neubig (2019), "Are Sixteen Heads Really Better than One?" (NeurIPS): remove heads one at a
time or in order of an importance score and watch the task's metric. Lesson 16 (what real heads matter for)
prunes all-MiniLM-L6-v2's heads on mha_lesson/data/paraphrases.tsv (retrieval_accuracy, retrieval_margin,
ablate_heads by zero or by mean, head_importance, prune_curve); pruning_reference() ships the results, which
take minutes to compute. Lesson 17 reuses them.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .. import pretrained
from .._blas import one_blas_thread
from .._checks import as_array, as_finite_array, as_float_array
from ..attention import padding_mask
from ..encoder import encoder_layer
from ..heads import split_heads
from ..multihead import multi_head_attention
from ..projections import MHAParams
from ._common import DATA, read_data, trace_layers


class Paraphrase(NamedTuple):
    """One row of paraphrases.tsv."""

    topic: str
    sentence: str
    paraphrase: str


def load_paraphrases(path: str | Path | None = None) -> list[Paraphrase]:
    """Rows of a tab-separated file (default: the shipped paraphrases.tsv): topic, sentence, paraphrase; # = comment."""
    path, text = read_data(path, "paraphrases.tsv")
    lines = [line for line in text.splitlines() if line.strip() and line[0] != "#"]
    if not lines or lines[0].split("\t") != list(Paraphrase._fields):
        raise ValueError(f"{path.name}: expected the header {'<tab>'.join(Paraphrase._fields)}, got {lines[:1]}")
    rows = [line.split("\t") for line in lines[1:]]
    bad = [i for i, r in enumerate(rows, start=2) if len(r) != 3 or not all(f.strip() for f in r)]
    if bad:
        raise ValueError(f"{path.name}: expected 3 non-empty tab-separated fields on every row, not on rows {bad}")
    return [Paraphrase(*r) for r in rows]


def _retrieval_inputs(similarity: np.ndarray, partner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate (..., m, m) similarities and (m,) partners; return the similarities with the diagonal at -inf."""
    s = as_finite_array("similarity", similarity, 2)
    m = s.shape[-1]
    if s.shape[-2] != m:
        raise ValueError(f"similarity: expected square (..., m, m) matrices between all sentences, got {s.shape}")
    partner = as_array("partner", partner)
    if (
        partner.shape != (m,)
        or not np.issubdtype(partner.dtype, np.integer)
        or ((partner < 0) | (partner >= m) | (partner == np.arange(m))).any()
    ):
        raise ValueError(f"partner: expected ({m},) indices of another sentence, got {partner!r}")
    # A sentence is never its own neighbour.
    return np.where(np.eye(m, dtype=bool), -np.inf, s), partner


def retrieval_accuracy(similarity: np.ndarray, partner: np.ndarray) -> np.ndarray:
    """Fraction of sentences whose most similar other sentence is their paraphrase: (..., m, m), (m,) -> (...)."""
    others, partner = _retrieval_inputs(similarity, partner)
    return (others.argmax(axis=-1) == partner).mean(axis=-1)


def retrieval_margin(similarity: np.ndarray, partner: np.ndarray) -> np.ndarray:
    """Mean of (similarity to the paraphrase - the highest to any other sentence): (..., m, m), (m,) -> (...).

    Positive for a sentence that retrieves its paraphrase, and graded where accuracy only counts.
    """
    others, partner = _retrieval_inputs(similarity, partner)
    rows = np.arange(len(partner))
    to_partner = others[..., rows, partner].copy()  # (..., m)
    others[..., rows, partner] = -np.inf
    return (to_partner - others.max(axis=-1)).mean(axis=-1)


def head_outputs(x: np.ndarray, params: MHAParams, mask: np.ndarray | None = None) -> np.ndarray:
    """x (..., n, d_model) -> (..., h, n, d_k): every head's output A_i V_i, before W^O mixes the heads."""
    if not isinstance(params, MHAParams):
        raise ValueError(f"params: expected an MHAParams, got {type(params).__name__}")
    # Checked here, so that a bad x is blamed on x and not on the attention's q.
    x = as_finite_array("x", x, 2)
    if x.shape[-1] != params.d_model:
        raise ValueError(f"x: expected shape (..., n, d_model={params.d_model}) to match params, got {x.shape}")
    _, weights = multi_head_attention(x, x, x, params, mask)  # (..., h, n, n)
    v = (x.reshape(-1, params.d_model) @ params.w_v).reshape(x.shape)  # (..., n, d_model): one product
    if params.b_v is not None:
        v += params.b_v
    return weights @ split_heads(v, params.h)


def ablate_heads(params: MHAParams, heads: Iterable[int], means: np.ndarray | None = None) -> MHAParams:
    """A copy with the listed heads switched off: by zero, or with means (h, d_k) by each head's mean output.

    Zero-ablation zeroes head i's rows of W^O, so it adds nothing. Mean-ablation replaces head i's output by
    means[i] for every token; a constant output adds the constant means[i] @ W_i^O to every token, which is a
    bias: it goes into b^O. So mean-ablation keeps what a head adds on average and removes only what it adds
    differently for different tokens.
    """
    if not isinstance(params, MHAParams):
        raise ValueError(f"params: expected an MHAParams, got {type(params).__name__}")
    heads = params.head_indices(heads)
    out = params.without_heads(heads)
    if means is None:
        return out
    means = as_finite_array("means", means, 2)
    if means.shape != (params.h, params.d_k):
        raise ValueError(f"means: expected shape ({params.h}, {params.d_k}), (h, d_k) of params, got {means.shape}")
    shift = sum((means[i] @ params.w_o_head(i) for i in heads), start=np.zeros(params.d_model))  # (d_model,)
    b_o = shift if params.b_o is None else params.b_o + shift
    return dataclasses.replace(out, b_o=b_o.astype(params.dtype))


def ablated_model(
    model: pretrained.MiniLM, heads: Iterable[tuple[int, int]], means: np.ndarray | None = None
) -> pretrained.MiniLM:
    """A copy with the listed (layer, head) pairs switched off, by zero or, given means (n_layers, h, d_k), by mean."""
    by_layer: dict[int, list[int]] = {}
    for layer, head in pretrained._check_model(model).layer_heads(heads):
        by_layer.setdefault(layer, []).append(head)
    if means is not None:
        means = as_finite_array("means", means, 3)
        if means.shape != (model.n_layers, model.h, model.layers[0].attn.d_k):
            raise ValueError(f"means: expected shape (n_layers, h, d_k) of this model, got {means.shape}")
    layers = tuple(
        dataclasses.replace(p, attn=ablate_heads(p.attn, by_layer[i], None if means is None else means[i]))
        if i in by_layer
        else p
        for i, p in enumerate(model.layers)
    )
    return dataclasses.replace(model, layers=layers)


@dataclasses.dataclass(frozen=True, eq=False)
class _Retrieval:
    """The paraphrase task as one padded batch: sentences, then all paraphrases; intact layer inputs kept."""

    ids: np.ndarray  # (N, n)
    lengths: np.ndarray  # (N,)
    mask: np.ndarray  # (N, 1, 1, n)
    partner: np.ndarray  # (N,): index of each sentence's paraphrase
    inputs: tuple[np.ndarray, ...]  # n_layers + 1 arrays (N, n, d_model): each layer's input, then the output
    means: np.ndarray  # (n_layers, h, d_k): each head's mean output over all real tokens, intact model

    def score(self, hidden: np.ndarray) -> tuple[float, float]:
        """Retrieval accuracy and mean margin of the sentence embeddings of the last layer's output (N, n, d)."""
        emb = pretrained.l2_normalize(pretrained.mean_pool(hidden, self.lengths))  # (N, d_model)
        sims = emb @ emb.T  # unit vectors: cosine
        return float(retrieval_accuracy(sims, self.partner)), float(retrieval_margin(sims, self.partner))

    def run(self, layers: Sequence, x: np.ndarray) -> list[np.ndarray]:
        """The outputs of layers applied in turn to x (N, n, d_model)."""
        out = []
        for layer in layers:
            x = encoder_layer(x, layer, self.mask)[0]
            out.append(x)
        return out


def _pairs_key(pairs: Sequence | None) -> tuple[tuple[str, str], ...]:
    """(sentence, paraphrase) pairs as a hashable tuple; None means every shipped pair."""
    if pairs is None:
        return tuple((p.sentence, p.paraphrase) for p in load_paraphrases())
    if isinstance(pairs, str) or not isinstance(pairs, Sequence) or len(pairs) < 2:
        raise ValueError(f"pairs: expected at least 2 (sentence, paraphrase) pairs, got {pairs!r}")
    # A string is a sequence too: 'ab' would silently read as the pair ('a', 'b').
    if not all(isinstance(p, Sequence) and not isinstance(p, str) and len(p) >= 2 for p in pairs):
        raise ValueError("pairs: expected every pair to be a tuple (sentence, paraphrase), not a string")
    key = tuple((p[-2], p[-1]) for p in pairs)  # a Paraphrase row ends with its two sentences too
    if not all(isinstance(s, str) for pair in key for s in pair):
        raise ValueError("pairs: expected every pair to end with two strings (sentence, paraphrase)")
    return key


@functools.lru_cache(maxsize=2)
def _retrieval(model: pretrained.MiniLM, pairs: tuple[tuple[str, str], ...]) -> _Retrieval:
    """The task for model and pairs, run once intact and kept: importance and the curves start from it."""
    sentences = [a for a, _ in pairs] + [b for _, b in pairs]
    p = len(pairs)
    ids, lengths, _ = model.tokenize(sentences)
    mask = padding_mask(lengths, ids.shape[-1])
    keep = (np.arange(ids.shape[1]) < lengths[:, None])[:, None, :, None]  # (N, 1, n, 1): real tokens
    with one_blas_thread():
        inputs, _ = trace_layers(model, ids, lengths)
        means = np.stack(
            [
                (head_outputs(x, layer.attn, mask) * keep).sum(axis=(0, 2)) / keep.sum()
                for x, layer in zip(inputs[:-1], model.layers, strict=True)
            ]
        )  # (n_layers, h, d_k)
    partner = np.concatenate([np.arange(p, 2 * p), np.arange(p)])
    return _Retrieval(ids=ids, lengths=lengths, mask=mask, partner=partner, inputs=tuple(inputs), means=means)


MODES = ("zero", "mean")


def _means(task: _Retrieval, mode: str) -> np.ndarray | None:
    """The head means mean-ablation needs, or None for zero-ablation."""
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"mode: expected one of {MODES}, got {mode!r}")
    return task.means if mode == "mean" else None


def head_importance(
    model: pretrained.MiniLM,
    pairs: Sequence | None = None,
    *,
    mode: str = "zero",
    heads: Iterable[tuple[int, int]] | None = None,
) -> dict[str, np.ndarray | float]:
    """How much paraphrase retrieval drops when one head alone is switched off, by zero or by its mean.

    Returns accuracy_drop and margin_drop, (n_layers, h) arrays (intact minus ablated; NaN for heads not in
    `heads`, default all), and intact_accuracy and intact_margin. pairs default to every shipped pair; each
    ablation reruns only the layers from the head's own layer on, starting from the kept intact inputs. This is
    Michel et al.'s one-head-at-a-time ablation measured on a task; their pruning ranks heads by a gradient
    estimate of the same effect instead, which needs backpropagation that this numpy model does not have.
    """
    task = _retrieval(pretrained._check_model(model), _pairs_key(pairs))
    means = _means(task, mode)
    heads = None if heads is None else model.layer_heads(heads)
    if heads is not None and not heads:  # every entry would be NaN
        raise ValueError("heads: expected at least one (layer, head) pair, or None for every head, got none")
    intact_accuracy, intact_margin = task.score(task.inputs[-1])
    wanted = [(li, hi) for li in range(model.n_layers) for hi in range(model.h)] if heads is None else list(heads)
    accuracy, margin = np.full((model.n_layers, model.h), np.nan), np.full((model.n_layers, model.h), np.nan)
    for li, hi in wanted:
        layers = ablated_model(model, [(li, hi)], None if means is None else means).layers
        with one_blas_thread():  # as head_ablation: on two busy cores one BLAS thread is the faster
            hidden = task.run(layers[li:], task.inputs[li])[-1]
        accuracy[li, hi], margin[li, hi] = task.score(hidden)
    return {
        "accuracy_drop": intact_accuracy - accuracy,
        "margin_drop": intact_margin - margin,
        "intact_accuracy": intact_accuracy,
        "intact_margin": intact_margin,
    }


def prune_order(importance: dict[str, np.ndarray | float]) -> list[tuple[int, int]]:
    """Every (layer, head), least important first: by accuracy drop, ties broken by margin drop, then position."""
    if not isinstance(importance, dict) or not {"accuracy_drop", "margin_drop"} <= importance.keys():
        raise ValueError(
            f"importance: expected head_importance's dict with accuracy_drop and margin_drop, got {importance!r}"
        )
    accuracy = as_float_array("importance", importance["accuracy_drop"], 0)
    margin = as_float_array("importance", importance["margin_drop"], 0)
    finite = np.isfinite(accuracy).all() and np.isfinite(margin).all()
    if not finite or accuracy.shape != margin.shape or accuracy.ndim != 2:
        raise ValueError("importance: expected head_importance of every head (finite), as (n_layers, h) arrays")
    flat = np.lexsort((margin.ravel(), accuracy.ravel()))  # last key sorts first
    return [(int(i) // accuracy.shape[1], int(i) % accuracy.shape[1]) for i in flat]


def prune_curve(
    model: pretrained.MiniLM,
    pairs: Sequence | None = None,
    *,
    mode: str = "zero",
    order: Sequence[tuple[int, int]] | None = None,
    counts: Sequence[int] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Retrieval accuracy as heads are switched off together, least important first: (fractions, accuracies).

    Like Michel et al. (2019), heads go in order of increasing importance; here the order is ranked once, from
    each head's importance on its own (default: prune_order(head_importance(model, pairs, mode=mode))), since
    re-ranking after every removal would cost a full importance run per step. counts (increasing; default 0, 1,
    ..., n_heads - 1) are how many heads are off at each point, so fractions run from 0 (intact) to all heads
    but one removed. Each point reruns only the layers from the first one where it removes a head that the
    previous point kept.
    """
    task = _retrieval(pretrained._check_model(model), _pairs_key(pairs))
    means = _means(task, mode)
    n_heads = model.n_layers * model.h
    order = (
        prune_order(head_importance(model, pairs, mode=mode)) if order is None else model.layer_heads(order, "order")
    )
    if len(set(order)) != len(order):
        raise ValueError(f"order: expected distinct (layer, head) pairs of this model, got {order}")
    counts = np.arange(n_heads) if counts is None else as_array("counts", counts)
    if counts.ndim != 1 or not np.issubdtype(counts.dtype, np.integer) or (np.diff(counts) <= 0).any():
        raise ValueError(f"counts: expected increasing whole numbers, got {counts!r}")
    if counts.size and (counts[0] < 0 or counts[-1] > len(order)):
        raise ValueError(f"counts: expected values in [0, {len(order)}] (the length of order), got {counts.tolist()}")
    inputs, done, accuracies = list(task.inputs), 0, []
    for c in counts:
        if c > done:
            # Layers before the first newly removed head are the same as at the previous point: keep their inputs.
            start = min(li for li, _ in order[done:c])
            layers = ablated_model(model, order[:c], means).layers
            with one_blas_thread():
                inputs[start + 1 :] = task.run(layers[start:], inputs[start])
            done = int(c)
        accuracies.append(task.score(inputs[-1])[0])
    return counts / n_heads, np.array(accuracies)


def pruning_results(model: pretrained.MiniLM, pairs: Sequence | None = None) -> dict[str, np.ndarray]:
    """Importance, order and pruning curve for both ablations, as arrays: what pruning_reference() ships.

    Keys: intact_accuracy, intact_margin, fractions, and for mode in MODES accuracy_drop_<mode> and
    margin_drop_<mode> (n_layers, h), order_<mode> (n_heads, 2), curve_<mode> (n_heads,) and
    no_heads_accuracy_<mode> (every head off). Two controls say how much of the task needs attention at all:
    embedding_accuracy (the mean of the input embeddings, before any layer) and no_heads_accuracy_<mode>.
    """
    out: dict[str, np.ndarray] = {}
    for mode in MODES:
        importance = head_importance(model, pairs, mode=mode)
        order = prune_order(importance)
        fractions, curve = prune_curve(model, pairs, mode=mode, order=order)
        _, no_heads = prune_curve(model, pairs, mode=mode, order=order, counts=[len(order)])
        out |= {
            f"accuracy_drop_{mode}": importance["accuracy_drop"],
            f"margin_drop_{mode}": importance["margin_drop"],
            f"order_{mode}": np.array(order),
            f"curve_{mode}": curve,
            f"no_heads_accuracy_{mode}": no_heads[0],
        }
    task = _retrieval(model, _pairs_key(pairs))
    out |= {
        "intact_accuracy": np.array(importance["intact_accuracy"]),
        "intact_margin": np.array(importance["intact_margin"]),
        "embedding_accuracy": np.array(task.score(task.inputs[0])[0]),
        "fractions": fractions,
    }
    return out


def pruning_reference() -> dict[str, np.ndarray]:
    """pruning_results(load_minilm()) on every shipped pair, as tests/reference/make_minilm_pruning.py saved it.

    Computing it takes minutes (144 single-head ablations and 144 pruned models over 212 sentences), so the
    package ships it; paraphrases_sha256 and model_sha256 record which data and weights it came from.
    """
    with np.load(DATA / "minilm_pruning.npz") as data:
        return {key: data[key] for key in data.files}
