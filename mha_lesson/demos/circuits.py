"""Circuits and induction heads lesson: one- and two-layer models trained on repeated sequences, snapshots of
their heads while they learn, and MiniLM's circuits and head detectors.

Training runs once per process (functools.cache) and stays in memory: the lesson, its explorer and its tests
share the same two runs, and nothing is written to disk.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from .. import training
from .._blas import one_blas_thread
from ..circuits import (
    circuit_singular_values,
    detection_score,
    duplicate_token_pattern,
    duplicate_token_score,
    effective_rank,
    induction_pattern,
    induction_score,
    ov_circuit,
    participation_ratio,
    previous_token_pattern,
    previous_token_score,
    qk_circuit,
    repeated_sequence,
)
from ..pretrained import MiniLM
from ..projections import init_params

H, SEED, STEPS = 2, 0, 800  # the rest of the sizes are training.TASKS["induction"]
EVERY = 20  # a snapshot every this many steps (and at step 0)
DISPLAY_K = 8  # repeat length of the sequence whose maps the lesson shows


def display_tokens(seed: int = SEED) -> np.ndarray:
    """(n,) the sequence whose maps the lesson shows: DISPLAY_K distinct tokens, repeated, then random ones."""
    c = training.TASKS["induction"]
    return repeated_sequence(np.random.default_rng([seed, 99]), c["vocab"], DISPLAY_K, c["n"])


def repeat_lengths(batch: training.Batch) -> np.ndarray:
    """(batch,) the repeat length k of each induction sequence: its first scored position (t = k..2k-2 scored)."""
    return (batch.weights[..., 0] > 0).argmax(axis=1)


def head_scores(weights: np.ndarray, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Previous-token and induction scores (layers, h) from weights (batch, layers, h, n, n) of sequences with
    repeat lengths ks (batch,): each sequence scored on its own, then averaged, every sequence weighted equally.
    """
    induction = np.zeros(weights.shape[1:3])
    for k in np.unique(ks):  # sequences that share k share the pattern: score them together
        induction += induction_score(weights[ks == k], int(k)).sum(axis=0)
    return previous_token_score(weights).mean(axis=0), induction / len(ks)


def evaluate(trainer: training.Trainer) -> tuple[float, float, np.ndarray, np.ndarray]:
    """Held-out (copy loss, copy accuracy, previous-token scores, induction scores), from one forward pass.

    The loss and accuracy are Trainer.evaluate's; the scores (layers, h) are head_scores on the same sequences.
    """
    b = trainer.held_out
    logits, _, caches = training.forward(trainer.model, b.tokens)
    loss = training.cross_entropy(logits, b.targets, b.weights)[0]
    right = (logits.argmax(axis=-1) == b.targets).all(axis=-1)  # (batch, n), as Trainer.evaluate
    accuracy = float(right[(b.weights > 0).all(axis=-1)].mean())
    weights = np.stack([cache.weights for cache in caches], axis=1)  # (batch, layers, h, n, n)
    return (loss, accuracy, *head_scores(weights, repeat_lengths(b)))


@dataclasses.dataclass(frozen=True, eq=False)
class Run:
    """One training run of the induction task, with snapshots every EVERY steps."""

    layers: int
    result: training.TrainResult
    steps: np.ndarray  # (S,) snapshot steps, 0 included
    loss: np.ndarray  # (S,) held-out loss on the repeated copy
    accuracy: np.ndarray  # (S,) held-out next-token accuracy on the repeated copy
    attention: np.ndarray  # (S, layers, h, n, n) on display_tokens()
    previous: np.ndarray  # (S, layers, h) held-out previous-token scores (head_scores)
    induction: np.ndarray  # (S, layers, h) induction scores
    tokens: np.ndarray  # (n,) display_tokens()

    def at(self, step: int) -> int:
        """Index of the snapshot taken at step, or ValueError."""
        where = np.flatnonzero(self.steps == step)
        if not len(where):
            raise ValueError(f"step: expected a snapshot step (0 to {self.steps[-1]} every {EVERY}), got {step!r}")
        return int(where[0])


def train_run(layers: int, *, seed: int = SEED, steps: int = STEPS, every: int = EVERY) -> Run:
    """Train an attention-only model with `layers` layers of H heads on the induction task, snapshotting as it goes."""
    tokens = display_tokens(seed)
    rows: dict[str, list] = {"steps": [], "loss": [], "accuracy": [], "attention": [], "previous": [], "induction": []}

    def snapshot(step: int, trainer: training.Trainer) -> None:
        loss, accuracy, previous, induction = evaluate(trainer)
        for name, value in zip(
            rows, (step, loss, accuracy, trainer.attention(tokens), previous, induction), strict=True
        ):
            rows[name].append(value)

    def on_step(step: int, loss: float, trainer: training.Trainer) -> None:
        if step % every == 0:
            snapshot(step, trainer)

    # The callback sees every step after the first; step 0 (the random start) is taken from a second, untrained
    # trainer built from the same seed, which starts from the same weights.
    with one_blas_thread():  # train() runs its steps on one thread; the first snapshot too
        snapshot(0, training.Trainer("induction", h=H, seed=seed, layers=layers, steps=steps))
    result = training.train("induction", h=H, seed=seed, layers=layers, steps=steps, callback=on_step)
    arrays = {name: np.array(values) for name, values in rows.items()}
    return Run(layers=layers, result=result, tokens=tokens, **arrays)


@functools.cache
def trained_runs() -> dict[int, Run]:
    """The lesson's two runs, trained once per process: {1: one layer, 2: two layers}."""
    return {layers: train_run(layers) for layers in (1, 2)}


def phase_change(run: Run) -> dict[str, float]:
    """Where the best last-layer induction score rises fastest, and the snapshots 100 steps either side.

    'step' ends the EVERY-step interval with the steepest rise of the highest induction score among the last
    layer's heads (Olsson et al. 2022 date the phase change by the induction heads forming); 'before' and 'after'
    are the snapshots 100 steps earlier and later (clipped to the run), the ones the lesson shows.
    """
    best = run.induction[:, -1].max(axis=-1)  # (S,) the last layer's best induction score at each snapshot
    i = int(np.diff(best).argmax()) + 1
    span = 100 // EVERY
    before, after = max(i - span, 0), min(i + span, len(run.steps) - 1)
    return {
        "step": int(run.steps[i]),
        "before": int(run.steps[before]),
        "after": int(run.steps[after]),
        "loss_before": float(run.loss[before]),
        "loss_at": float(run.loss[i]),
        "loss_after": float(run.loss[after]),
        "induction_before": float(best[before]),
        "induction_after": float(best[after]),
    }


def uniform_induction_score(ks: np.ndarray, n: int) -> float:
    """The induction score of a causal head that spreads each query evenly over keys 0..t, for sequences of
    length n with repeat lengths ks (batch,): the chance level the trained heads are compared with."""
    uniform = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]  # (n, n): row t is 1/(t+1) on keys 0..t
    return float(np.mean([induction_score(uniform, int(k)) for k in ks]))


def relative_key_position(run: Run) -> np.ndarray:
    """(layers, h) where the trained heads look from the second copy, at the end of training: the attention-weighted
    mean key position divided by the query position, over every held-out query t in k..2k-1 (1: itself, 0.5: half-way).
    """
    b = run.result.trainer.held_out
    _, _, caches = training.forward(run.result.trainer.model, b.tokens)
    weights = np.stack([cache.weights for cache in caches], axis=1)  # (batch, layers, h, n, n)
    n = weights.shape[-1]
    mean_key = weights @ np.arange(n, dtype=float)  # (batch, layers, h, n): mean key position of each query
    ks = repeat_lengths(b)
    pos = np.arange(n)
    rows = (pos >= ks[:, None]) & (pos < 2 * ks[:, None]) & (pos > 0)  # (batch, n): the second copy
    ratio = mean_key / np.maximum(pos, 1)  # (batch, layers, h, n)
    return (ratio * rows[:, None, None, :]).sum(axis=(0, 3)) / rows.sum()


def relative_target_position(run: Run) -> float:
    """The same ratio for the induction target: key t - k + 1 over query t, averaged over the same queries."""
    ks = repeat_lengths(run.result.trainer.held_out)
    return float(np.mean(np.concatenate([(np.arange(k, 2 * k) - k + 1) / np.arange(k, 2 * k) for k in ks])))


def previous_token_where_used(run: Run) -> np.ndarray:
    """(layers, h) held-out previous-token scores over the queries 1..k-1 only, at the end of training: the first
    copy, whose previous tokens layer 2 looks up (its induction target t - k + 1 lies in 1..k-1)."""
    b = run.result.trainer.held_out
    _, _, caches = training.forward(run.result.trainer.model, b.tokens)
    weights = np.stack([cache.weights for cache in caches], axis=1)  # (batch, layers, h, n, n)
    n, ks = weights.shape[-1], repeat_lengths(b)
    total = np.zeros(weights.shape[1:3])
    for k in np.unique(ks):  # sequences that share k share the pattern: score them together
        pattern = previous_token_pattern(n) & (np.arange(n) < k)[:, None]  # (n, n): query i in 1..k-1 -> i - 1
        total += detection_score(weights[ks == k], pattern).sum(axis=0)
    return total / len(ks)


def one_layer_shortcut(run: Run) -> dict[str, np.ndarray | float]:
    """What a trained one-layer model does instead of induction, read from its circuits and its predictions.

    'copies' (h,): the fraction of tokens a whose largest logit raised by the OV circuit E W_OV W_U is a itself;
    'own_token' (h,): the scaled score a key gets for holding the query's own token, the diagonal of
    E W_QK Eᵀ / sqrt(d_k) minus its off-diagonal mean (negative: the head avoids its own token);
    'in_first_copy': the fraction of held-out predictions on the repeated copy that are a token of the first copy.
    The token-to-token parts only (Elhage et al. 2021): positions and the read-out's bias left out.
    """
    model = run.result.trainer.model
    embed = model.arrays["embed"].astype(np.float64)  # (vocab, d_model)
    readout = model.arrays["readout.w"].astype(np.float64)  # (d_model, vocab)
    params = model.layers[0].astype(np.float64)
    vocab = len(embed)
    off = ~np.eye(vocab, dtype=bool)
    copies, own = [], []
    for i in range(params.h):
        ov = embed @ ov_circuit(params, i) @ readout  # (vocab, vocab): attending to token a raises logit b
        qk = embed @ qk_circuit(params, i) @ embed.T / math.sqrt(params.d_k)  # (vocab, vocab): query a, key b
        copies.append(float(np.mean(ov.argmax(axis=1) == np.arange(vocab))))
        own.append(float(np.diag(qk).mean() - qk[off].mean()))
    b = run.result.trainer.held_out
    predicted = training.forward(model, b.tokens)[0][..., 0, :].argmax(axis=-1)  # (batch, n)
    ks = repeat_lengths(b)
    hits = [predicted[s, t] in b.tokens[s, :k] for s, k in enumerate(ks) for t in range(k, 2 * k - 1)]
    return {"copies": np.array(copies), "own_token": np.array(own), "in_first_copy": float(np.mean(hits))}


# --- MiniLM: its circuits' spectra, and the detectors on repeated word pieces --------------------------------------


def spectra(layers: list) -> dict[str, np.ndarray]:
    """Singular values (layers, h, d_k) of every head's W_QK ('qk') and W_OV ('ov') for a list of MHAParams."""
    with one_blas_thread():  # many small QRs and SVDs: on a busy machine extra BLAS threads only wait for each other
        return {
            kind: np.array([[circuit_singular_values(p, i, kind) for i in range(p.h)] for p in layers])
            for kind in ("qk", "ov")
        }


def rank_table(s: dict[str, np.ndarray], fraction: float = 0.9) -> dict[str, dict[str, np.ndarray]]:
    """For each circuit kind: 90 %-energy effective ranks and participation ratios, each (layers, h)."""
    return {
        kind: {"effective_rank": effective_rank(v, fraction), "participation_ratio": participation_ratio(v)}
        for kind, v in s.items()
    }


def random_layer_spectra(d_model: int, h: int, count: int, seed: int = 0) -> dict[str, np.ndarray]:
    """spectra() of `count` Glorot-random layers of MiniLM's shape: what the ranks look like before training."""
    return spectra([init_params(d_model, h, seed=seed + i) for i in range(count)])


def whole_word_ids(model: MiniLM) -> np.ndarray:
    """Sorted ids of the vocabulary's whole words: ASCII letters only, at least 3 of them, not a ## continuation."""
    vocab = model.tokenizer.get_vocab()
    return np.array(sorted(i for t, i in vocab.items() if t.isascii() and t.isalpha() and len(t) >= 3))


def repeated_word_pieces(model: MiniLM, k: int = 20, count: int = 4, seed: int = 0) -> np.ndarray:
    """(count, 2k + 2) ids: [CLS], k distinct random whole words, the same k again, [SEP]."""
    words = whole_word_ids(model)
    rng = np.random.default_rng(seed)
    cls, sep = model.tokenizer.token_to_id("[CLS]"), model.tokenizer.token_to_id("[SEP]")
    return np.array([[cls, *w, *w, sep] for w in (rng.choice(words, k, replace=False) for _ in range(count))])


def minilm_detectors(model: MiniLM, k: int = 20, count: int = 4, seed: int = 0) -> dict[str, np.ndarray]:
    """Detector scores (layers, h) of MiniLM's heads on repeated_word_pieces, each the mean over the sequences.

    MiniLM attends both ways, so besides the causal patterns (TransformerLens') it gets the next-token pattern
    and the bidirectional duplicate and induction patterns (any other occurrence, earlier or later).
    """
    ids = repeated_word_pieces(model, k, count, seed)
    with one_blas_thread():  # a few short sequences: small products (see mha_lesson._blas)
        _, weights = model.hidden_states(ids, np.full(len(ids), ids.shape[1]), need_weights=True)
    a = np.stack(weights, axis=1).astype(np.float64)  # (count, layers, h, n, n)
    n = ids.shape[1]

    def by_tokens(pattern_of) -> np.ndarray:
        return np.mean([detection_score(a[s], pattern_of(ids[s])) for s in range(len(ids))], axis=0)

    return {
        "previous token": previous_token_score(a).mean(axis=0),
        "next token": detection_score(a, previous_token_pattern(n).T).mean(axis=0),
        "duplicate (earlier copy)": duplicate_token_score(a, k, start=1).mean(axis=0),
        "duplicate (either copy)": by_tokens(lambda t: duplicate_token_pattern(t, causal=False)),
        "induction (earlier copy)": induction_score(a, k, start=1).mean(axis=0),
        "induction (either copy)": by_tokens(lambda t: induction_pattern(t, causal=False)),
        "uniform": np.full(a.shape[1:3], 1.0 / n),  # what a head spreading evenly over all n keys would score
    }


def best_heads(scores: dict[str, np.ndarray]) -> list[tuple[str, tuple[int, int], float]]:
    """(detector, (layer, head), score) of the highest-scoring head for every detector but 'uniform'."""
    rows = []
    for name, s in scores.items():
        if name != "uniform":
            where = np.unravel_index(int(s.argmax()), s.shape)
            rows.append((name, (int(where[0]), int(where[1])), float(s.max())))
    return rows


# --- the repeated copy is drawn with replacement -------------------------------------------------------------------


def copy_ambiguity(batch: training.Batch, predicted: np.ndarray | None = None) -> dict[str, float]:
    """How often training.make_batch's induction copies repeat a token, and what that does to "the token after the
    last time my token appeared".

    The first k tokens are drawn with replacement, so a token can occur twice in one copy; a query holding it then
    has earlier occurrences followed by different tokens, and the rule is ambiguous. Returns the fraction of
    sequences whose copy repeats a token, the fraction of scored queries whose earlier occurrences have two or more
    different followers, and how often the rule (copy the follower of the most recent earlier occurrence) is right.
    With predicted (batch, n) next-token ids: the model's accuracy on the unambiguous and the ambiguous queries.
    """
    ks = repeat_lengths(batch)
    if predicted is not None and np.shape(predicted) != batch.tokens.shape:
        raise ValueError(f"predicted: expected shape {batch.tokens.shape}, got {np.shape(predicted)}")
    repeats, ambiguous, rule, model = 0, [], [], []
    for s, (tokens, k) in enumerate(zip(batch.tokens, ks, strict=True)):
        repeats += len(set(tokens[:k].tolist())) < k
        for t in range(k, 2 * k - 1):  # the scored queries: their next token is known
            earlier = [j for j in range(t) if tokens[j] == tokens[t]]  # never empty: tokens[t - k] is one
            ambiguous.append(len({int(tokens[j + 1]) for j in earlier}) > 1)
            rule.append(tokens[earlier[-1] + 1] == tokens[t + 1])
            if predicted is not None:
                model.append(predicted[s, t] == tokens[t + 1])
    ambiguous, rule = np.array(ambiguous), np.array(rule)
    out = {
        "sequences_with_repeat": float(repeats / len(ks)),
        "ambiguous_queries": float(ambiguous.mean()),
        "last_occurrence_rule": float(rule.mean()),
    }
    if predicted is not None:
        model = np.array(model)
        out["model_unambiguous"] = float(model[~ambiguous].mean()) if (~ambiguous).any() else math.nan
        out["model_ambiguous"] = float(model[ambiguous].mean()) if ambiguous.any() else math.nan
    return out


def copying_scores(run: Run, layer: int) -> np.ndarray:
    """(h,) Olsson et al.'s second property, copying: for each head of `layer` (0-based), the fraction of tokens a
    whose largest logit raised by the head's direct OV path E W_OV W_U is a itself (1: it copies what it attends to).

    That path only: the token embedding straight into the head and its output straight to the read-out (Elhage et
    al. reserve "direct path" for E W_U, with no head).
    """
    model = run.result.trainer.model
    if not 0 <= layer < len(model.layers):
        raise ValueError(f"layer: expected 0 to {len(model.layers) - 1}, got {layer!r}")
    embed = model.arrays["embed"].astype(np.float64)  # (vocab, d_model)
    readout = model.arrays["readout.w"].astype(np.float64)  # (d_model, vocab)
    params = model.layers[layer].astype(np.float64)
    tokens = np.arange(len(embed))
    return np.array(
        [np.mean((embed @ ov_circuit(params, i) @ readout).argmax(axis=1) == tokens) for i in range(params.h)]
    )
