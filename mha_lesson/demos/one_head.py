"""Lesson 1: One head is not enough. A head is a soft lookup, one convex average per query; the binding problem
computed exactly; and the Transformer paper's own evidence (Table 3, rows A).

The binding task: a long random sequence of token vectors x_t (d numbers each, independent N(0, 1)), and at every
position the target y_t = x_{t-1} A + x_{t-2} B (row vectors, weights applied as x @ W as everywhere in the series)
with fixed random (d, d) matrices A and B. Two lookups, each followed by its own map.

One head with weight alpha on key t-1 and 1 - alpha on key t-2 (every other weight 0) outputs
z_t W = (alpha x_{t-1} + (1 - alpha) x_{t-2}) W, with one map W = W^V W^O for the values and the output. Its
best W is a least-squares fit, and for independent N(0, 1) inputs the fit has a closed form:

    W*(alpha) = (alpha A + (1 - alpha) B) / (alpha^2 + (1 - alpha)^2)
    R^2(alpha) = |alpha A + (1 - alpha) B|^2 / ((alpha^2 + (1 - alpha)^2) (|A|^2 + |B|^2))    (Frobenius norms)

R^2(alpha) moves from |B|^2 / (|A|^2 + |B|^2) at alpha = 0 to |A|^2 / (|A|^2 + |B|^2) at alpha = 1, bent in between by
the overlap <A, B>: R^2(1/2) = 1/2 + <A, B> / (|A|^2 + |B|^2). Averaged over independent random A and B it is exactly
1/2 at every alpha (swap A and B, or flip the sign of B); the best alpha always reaches at least 1/2, by about 1/d
more. Two heads, each with its own attention and its own map, fit exactly: attend to t-1 with W_0 = A and to t-2
with W_1 = B.

The trained preview (section 4) uses mha_lesson.training with fewer steps than its default.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from .._blas import one_blas_thread
from .._checks import check_positive_int
from ..attention import scaled_dot_product_attention, softmax
from ..training import Trainer, forward

# --- 1. a head is a soft lookup ---------------------------------------------------------------------------------

SENTENCE = ("The", "animal", "didn't", "cross", "the", "street", "because", "it", "was", "too", "tired")
LOOKUPS = {"it": "animal", "tired": "it"}  # query word -> the key word it has to find
TWO_NEEDS = ("tired", ("it", "too"))  # one query that needs two keys: what is tired, and how tired
SHARP = 6.0  # hand-set score of a wanted key; every other key scores 0
VALUE_WIDTH = 8  # width of the random value vectors in the sentence example


def sentence_weights(lookups: dict[str, str | Sequence[str]] = LOOKUPS, sharp: float = SHARP) -> np.ndarray:
    """(n, n) one head's hand-set weights on SENTENCE: softmax of scores `sharp` on each wanted key, else 0.

    A query without a lookup wants itself, so every row is a clear lookup. Rows are queries, columns keys.
    """
    n = len(SENTENCE)
    scores = np.zeros((n, n))
    for i, word in enumerate(SENTENCE):
        wanted = lookups.get(word, word)
        for key in (wanted,) if isinstance(wanted, str) else wanted:
            scores[i, SENTENCE.index(key)] = sharp
    return softmax(scores, axis=-1)  # each row: one convex combination of the keys


def two_needs_rows(sharp: float = SHARP) -> dict[str, np.ndarray]:
    """The query TWO_NEEDS[0]'s row of weights (n,): one head asked for both keys, and two heads one key each."""
    query, (first, second) = TWO_NEEDS
    row = SENTENCE.index(query)
    return {
        "one head": sentence_weights({query: (first, second)}, sharp)[row],
        "head 0": sentence_weights({query: first}, sharp)[row],
        "head 1": sentence_weights({query: second}, sharp)[row],
    }


def sentence_values(seed: int = 0) -> np.ndarray:
    """(n, VALUE_WIDTH) random value vectors, one per word of SENTENCE."""
    return np.random.default_rng(seed).standard_normal((len(SENTENCE), VALUE_WIDTH))


def cosine(u: np.ndarray, v: np.ndarray) -> float:
    """Cosine of the angle between two vectors: 1 = same direction, 0 = unrelated."""
    return float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)))


# --- 2. the binding problem ---------------------------------------------------------------------------------------

D = 8  # width of a token vector
SAMPLES = 4000  # positions in the sequence the maps are fitted on


@dataclasses.dataclass(frozen=True)
class BindingTask:
    """A random sequence x (samples + 2, d) and the maps a, b (d, d) of y_t = x_{t-1} a + x_{t-2} b."""

    x: np.ndarray
    a: np.ndarray
    b: np.ndarray

    @property
    def back1(self) -> np.ndarray:
        """(samples, d): x_{t-1} for t = 2, 3, ..."""
        return self.x[1:-1]

    @property
    def back2(self) -> np.ndarray:
        """(samples, d): x_{t-2} for t = 2, 3, ..."""
        return self.x[:-2]

    @property
    def target(self) -> np.ndarray:
        """(samples, d): y_t = x_{t-1} a + x_{t-2} b."""
        return self.back1 @ self.a + self.back2 @ self.b


def binding_task(d: int = D, samples: int = SAMPLES, seed: int = 0) -> BindingTask:
    """A BindingTask with N(0, 1) tokens and N(0, 1/d) entries in a and b (so each lookup adds about unit variance)."""
    d, samples = check_positive_int("d", d), check_positive_int("samples", samples)
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((2, d, d)) / math.sqrt(d)  # each (d, d)
    x = rng.standard_normal((samples + 2, d))
    return BindingTask(x, a, b)


def _check_alpha(alpha: float) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha: expected a number in [0, 1] (the weight on key t-1), got {alpha!r}")
    return float(alpha)


def head_mix(task: BindingTask, alpha: float) -> np.ndarray:
    """(samples, d): what a head with weight alpha on key t-1 and 1 - alpha on key t-2 reads, before its map."""
    alpha = _check_alpha(alpha)
    return alpha * task.back1 + (1 - alpha) * task.back2


def heads_output(task: BindingTask, alphas: Sequence[float], maps: Sequence[np.ndarray]) -> np.ndarray:
    """(samples, d): sum over heads i of head_mix(task, alphas[i]) @ maps[i], each map (d, d)."""
    if len(alphas) != len(maps) or len(alphas) < 1:
        raise ValueError(f"maps: expected one (d, d) map per head ({len(alphas)} alphas), got {len(maps)}")
    return sum(head_mix(task, alpha) @ w for alpha, w in zip(alphas, maps, strict=True))


def r_squared(target: np.ndarray, fitted: np.ndarray) -> float:
    """1 - (residual sum of squares) / (sum of squares of the target): the share of the target's variance explained.

    The target has mean zero by construction and the heads have no bias, so the sums are taken around zero.
    """
    return 1.0 - float(np.sum((target - fitted) ** 2) / np.sum(target**2))


@dataclasses.dataclass(frozen=True)
class HeadsFit:
    """The least-squares maps of heads with fixed attention: maps[i] (d, d) is head i's W_i; fitted (samples, d)."""

    alphas: tuple[float, ...]
    maps: tuple[np.ndarray, ...]
    fitted: np.ndarray
    r2: float


def fit_heads(task: BindingTask, alphas: Sequence[float]) -> HeadsFit:
    """Head i attends with weight alphas[i] on key t-1 (1 - alphas[i] on t-2); solve every W_i by least squares.

    The heads sit side by side, as the concatenation does, and one map W stacks their W_i as W^O's rows:
    Concat(z_0, ..., z_{h-1}) W = sum_i z_i W_i.
    """
    if len(alphas) < 1:
        raise ValueError(f"alphas: expected one weight per head, got {alphas!r}")
    z = np.concatenate([head_mix(task, alpha) for alpha in alphas], axis=1)  # (samples, h*d): heads side by side
    with one_blas_thread():  # a small problem: more BLAS threads only wait for each other
        w, *_ = np.linalg.lstsq(z, task.target, rcond=None)  # (h*d, d)
    fitted = z @ w
    maps = tuple(np.split(w, len(alphas)))  # rows i*d:(i+1)*d belong to head i
    return HeadsFit(tuple(float(a) for a in alphas), maps, fitted, r_squared(task.target, fitted))


def heads_alphas(alpha: float, h: int) -> tuple[float, ...]:
    """The explorer's heads: h = 1 attends with alpha; h = 2 adds a second head with the mirror weight 1 - alpha."""
    alpha = _check_alpha(alpha)
    if h not in (1, 2):
        raise ValueError(f"h: expected 1 or 2 heads, got {h!r}")
    return (alpha,) if h == 1 else (alpha, 1 - alpha)


def r2_scan(task: BindingTask, alphas: Sequence[float], h: int = 1) -> np.ndarray:
    """(len(alphas),) least-squares R^2 of heads_alphas(alpha, h) at every alpha."""
    return np.array([fit_heads(task, heads_alphas(alpha, h)).r2 for alpha in alphas])


def closed_form_r2(a: np.ndarray, b: np.ndarray, alphas: Sequence[float] | np.ndarray) -> np.ndarray:
    """(len(alphas),) R^2 of the best single head for N(0, 1) tokens (infinitely many samples), from a and b alone."""
    alphas = np.asarray(alphas, dtype=float)
    if np.any((alphas < 0) | (alphas > 1)):
        raise ValueError(f"alphas: expected weights in [0, 1], got {alphas!r}")
    aa, bb, ab = np.sum(a * a), np.sum(b * b), np.sum(a * b)  # |A|^2, |B|^2, <A, B> (Frobenius)
    beta = 1 - alphas
    explained = alphas**2 * aa + 2 * alphas * beta * ab + beta**2 * bb  # |alpha A + beta B|^2
    return explained / ((alphas**2 + beta**2) * (aa + bb))


def best_single_head(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(alpha*, R^2*) maximising closed_form_r2 over alpha in [0, 1], from the 2 x 2 Gram matrix of a and b.

    R^2(alpha) is a Rayleigh quotient u^T G u / (u^T u trace G) with u = (alpha, 1 - alpha): its largest value is
    the top eigenvalue of G over trace G, reached at the top eigenvector when that points into u's quadrant
    (<A, B> >= 0); otherwise the best head attends to one key only.
    """
    gram = np.array([[np.sum(a * a), np.sum(a * b)], [np.sum(a * b), np.sum(b * b)]])
    values, vectors = np.linalg.eigh(gram)  # ascending eigenvalues
    top = vectors[:, 1] * np.sign(vectors[:, 1].sum() or 1.0)
    if np.all(top >= 0):
        return float(top[0] / top.sum()), float(values[1] / np.trace(gram))
    ends = closed_form_r2(a, b, [0.0, 1.0])
    return float(ends.argmax()), float(ends.max())


def pair_curves(d: int, count: int, alphas: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Closed-form one-head R^2 curves (count, len(alphas)) and cos(A, B) (count,) of the (A, B) of seeds 0 .. count-1.

    Seed 0 at d = D is the lesson's own pair.
    """
    tasks = [binding_task(d=d, samples=1, seed=s) for s in range(check_positive_int("count", count))]
    curves = np.stack([closed_form_r2(t.a, t.b, alphas) for t in tasks])  # (count, len(alphas))
    return curves, np.array([cosine(t.a.ravel(), t.b.ravel()) for t in tasks])


def lookup_head(x: np.ndarray, alpha: float, w: np.ndarray) -> np.ndarray:
    """(n, d) the same head run by scaled_dot_product_attention: query t scores key t-1 at logit(alpha), key t-2 at 0.

    Positions are one-hot keys; a mask allows only keys t-1 and t-2, so the softmax over those two gives exactly
    alpha and 1 - alpha. Rows 0 and 1 lack a key to look at (row 0 attends to nothing and outputs 0).
    """
    alpha = _check_alpha(alpha)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha: expected a weight strictly between 0 and 1 (a finite score gap), got {alpha!r}")
    n = len(x)
    offset = np.arange(n)[:, None] - np.arange(n)  # (n, n): how far key j lies behind query i
    keys = np.eye(n)  # (n, n): key j is the one-hot of position j
    # Query t points at position t-1 with the score gap logit(alpha), times sqrt(d_k) which attention divides out.
    queries = math.log(alpha / (1 - alpha)) * math.sqrt(n) * (offset == 1)  # (n, n)
    mask = (offset == 1) | (offset == 2)  # True = may attend: keys t-1 and t-2 only
    out, _ = scaled_dot_product_attention(queries, keys, x @ w, mask)
    return out


# --- 3. the paper's evidence ------------------------------------------------------------------------------------

TABLE3_CITATION = (
    "Vaswani et al. (2017), Attention Is All You Need, NeurIPS, Table 3 (section 6.2 'Model Variations'): "
    "the base row and rows (A). English-to-German, development set newstest2013; per-wordpiece perplexity; "
    "beam search without checkpoint averaging; base model (N = 6, d_model = 512, 100K training steps)."
)


@dataclasses.dataclass(frozen=True)
class Table3Row:
    """One configuration of Table 3 (A): h heads of width d_k = d_v, its dev perplexity and BLEU."""

    h: int
    d_k: int
    ppl: float
    bleu: float


# d_model = 512 throughout, so h * d_k = 512: the same computation for every row (section 3.2.2).
TABLE3_A = (
    Table3Row(1, 512, 5.29, 24.9),
    Table3Row(4, 128, 5.00, 25.5),
    Table3Row(8, 64, 4.92, 25.8),  # the base model
    Table3Row(16, 32, 4.91, 25.8),
    Table3Row(32, 16, 5.01, 25.4),
)
TABLE3_BASE_H = 8


def table3_markdown(rows: Sequence[Table3Row] = TABLE3_A) -> str:
    """Table 3 (A) as a Markdown table, with the gap to the best BLEU."""
    best = max(r.bleu for r in rows)
    lines = ["| h | d_k = d_v | h · d_k | dev PPL | dev BLEU | BLEU below the best |", "|---|---|---|---|---|---|"]
    for r in rows:
        base = " (base)" if r.h == TABLE3_BASE_H else ""
        lines.append(f"| {r.h}{base} | {r.d_k} | {r.h * r.d_k} | {r.ppl:.2f} | {r.bleu:.1f} | {best - r.bleu:.1f} |")
    return "\n".join(lines)


# --- 4. the trained preview ------------------------------------------------------------------------------------

# About half of mha_lesson.training's default 1,500 steps: for seed 0, two heads have left their plateau by step
# ~500, and one head's loss is flat long before. The rest of the default run only polishes the two-head model.
PREVIEW_STEPS = 800


# The plateau, watched: checkpoints every TRACE_EVERY steps, and the attention maps drawn at PLATEAU_STEPS (for seed
# 0: deep in the plateau, as the heads start to part, half-way down the loss, and the end of the preview).
TRACE_EVERY = 20
PLATEAU_STEPS = (300, 440, 480, PREVIEW_STEPS)


def offset_weights(attention: np.ndarray) -> np.ndarray:
    """(h, 2): each head's mean weight on the key 1 back and the key 2 back, over queries 2 .. n-1 of (h, n, n) maps."""
    attention = np.asarray(attention)
    if attention.ndim != 3 or attention.shape[1] != attention.shape[2] or attention.shape[1] < 3:
        raise ValueError(f"attention: expected (h, n, n) weights with n >= 3, got shape {attention.shape}")
    q = np.arange(2, attention.shape[1])  # queries with both keys behind them
    return np.stack([attention[:, q, q - 1].mean(axis=1), attention[:, q, q - 2].mean(axis=1)], axis=-1)


def swapped_lookups(trainer: Trainer) -> float:
    """Share of held-out positions (tokens 1 and 2 back differ) where the "2 back" read-out outputs the token 1 back."""
    held = trainer.held_out
    predicted = forward(trainer.model, held.tokens)[0].argmax(axis=-1)  # (batch, n, 2): read-outs "1 back", "2 back"
    back1, back2 = held.targets[..., 0], held.targets[..., 1]  # (batch, n) each
    scored = (held.weights > 0).all(axis=-1) & (back1 != back2)  # (batch, n)
    return float((predicted[..., 1] == back1)[scored].mean())
