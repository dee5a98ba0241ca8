"""Lessons 7 and 12 on the core: a cross-attention example and a padded batch (lesson 7); permutation
equivariance and a head that attends by position through the sinusoidal code (lesson 12).

Pure numpy, like the rest of the core: the lesson, its explorers (widgets/connections.py) and its tests call
these functions; nothing here knows about plots or widgets.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..multihead import multi_head_attention
from ..positional import sinusoidal_encoding
from ..projections import MHAParams
from .toy import D_MODEL, TOKENS, VOCAB, WORD, token_part, toy_embeddings

# --- cross-attention: a decoder-like sequence reads an encoder-like one -----------------------------------

ENGLISH = ("the", "cat", "ate", "fish", "has")  # the decoder's vocabulary
FRENCH = ("le", "chat", "mangé", "poisson", "a")  # the encoder's: FRENCH[i] means ENGLISH[i]
DECODER_TOKENS = ("the", "cat", "ate", "fish")
ENCODER_TOKENS = ("le", "chat", "a", "mangé", "le", "poisson")
X_DMODEL, X_H = 16, 2
X_SHARP = 8.0  # scaled score of a key with the query's meaning; other keys get 0


def translation_inputs() -> tuple[np.ndarray, np.ndarray]:
    """Decoder y (4, 16): English one-hots in columns 0-4; encoder x (6, 16): French one-hots in columns 8-12."""
    y = np.zeros((len(DECODER_TOKENS), X_DMODEL))
    y[np.arange(len(y)), [ENGLISH.index(t) for t in DECODER_TOKENS]] = 1.0
    x = np.zeros((len(ENCODER_TOKENS), X_DMODEL))
    x[np.arange(len(x)), [8 + FRENCH.index(t) for t in ENCODER_TOKENS]] = 1.0
    return y, x


def translation_params() -> MHAParams:
    """Two heads (d_k = 8): head 0 looks up the encoder word with the query's meaning, head 1 averages them all.

    The two vocabularies live in different columns, so no raw dot product relates them. W^Q (English
    column i -> head column i) and W^K (French column 8+i -> head column i) map both into one space where
    matching meanings score X_SHARP. Head 1 has W^Q = 0: equal scores, a uniform average. W^V passes each
    encoder token's French one-hot into its head's first 5 columns, and W^O = I keeps heads apart.
    """
    g = math.sqrt(X_DMODEL // X_H)  # undoes the 1/sqrt(d_k) of attention
    n = len(ENGLISH)
    w_q, w_k, w_v = (np.zeros((X_DMODEL, X_DMODEL)) for _ in range(3))
    w_q[0:n, 0:n] = g * X_SHARP * np.eye(n)
    w_k[8 : 8 + n, 0:n] = np.eye(n)
    w_v[8 : 8 + n, 0:n] = np.eye(n)  # head 0 reports which French word it read
    w_v[8 : 8 + n, 8 : 8 + n] = np.eye(n)  # head 1 too
    return MHAParams(w_q=w_q, w_k=w_k, w_v=w_v, w_o=np.eye(X_DMODEL), h=X_H)


# --- a batch of sentences of different lengths, padded to one length --------------------------------------

PAD = "<pad>"  # the label of a padding position in the lesson's figures
BATCH_SENTENCES = (TOKENS, ("the", "dog", "saw", "the", "cat"), ("the", "dog", "saw"))


def padded_batch(sentences: Sequence[Sequence[str]] = BATCH_SENTENCES) -> tuple[np.ndarray, np.ndarray]:
    """(batch, n, 64) toy embeddings, each sentence followed by zero rows up to the longest, and lengths (batch,)."""
    if isinstance(sentences, str) or not sentences:
        raise ValueError(f"sentences: expected a non-empty sequence of sentences, got {sentences!r}")
    rows = [toy_embeddings(s) for s in sentences]  # each (len, 64); toy_embeddings checks the words
    n = max(len(r) for r in rows)
    x = np.zeros((len(rows), n, D_MODEL))
    for b, r in enumerate(rows):
        x[b, : len(r)] = r  # the rest stays zero: the padding
    return x, np.array([len(r) for r in rows])


def padded_labels(sentence: Sequence[str], n: int) -> list[str]:
    """The sentence's words followed by PAD up to length n: axis labels for a padded row of the batch."""
    if len(sentence) > n:
        raise ValueError(f"n: expected at least len(sentence) = {len(sentence)}, got {n}")
    return [*sentence, *[PAD] * (n - len(sentence))]


# --- permutation equivariance -----------------------------------------------------------------------------


def random_word_table(seed: int = 1) -> np.ndarray:
    """(len(VOCAB), 64) random word embeddings, one row per vocabulary word, as an untrained model has."""
    return np.random.default_rng(seed).normal(size=(len(VOCAB), D_MODEL))


def embed_words(tokens: Sequence[str], table: np.ndarray) -> np.ndarray:
    """(n, 64): each token's row of the word table, no position in it."""
    return token_part(tokens)[:, WORD] @ table  # (n, len(VOCAB)) one-hots pick rows of the table


def permutation_errors(
    fn: Callable[[np.ndarray], np.ndarray], words: np.ndarray, perm: np.ndarray, positions: np.ndarray | None = None
) -> np.ndarray:
    """(n,) max |f(P w + pos) - P f(w + pos)| per output row: the tokens move, the positions stay in their slots."""
    perm = np.asarray(perm)
    if not np.array_equal(np.sort(perm), np.arange(len(words))):
        raise ValueError(f"perm: expected a permutation of 0..{len(words) - 1}, got {perm.tolist()}")
    pos = 0.0 if positions is None else positions
    out = fn(words + pos)  # (n, d_model)
    out_perm = fn(words[perm] + pos)
    return np.abs(out_perm - out[perm]).max(axis=-1)


# --- the sinusoidal code in the toy embedding, and a head that attends by position -----------------------

PE_COLS = slice(16, D_MODEL)  # the toy embedding's free columns 16-63 (toy.py) carry the sinusoidal code
PE_WIDTH = PE_COLS.stop - PE_COLS.start  # 48: 24 (sin, cos) pairs


def sinusoidal_part(n: int) -> np.ndarray:
    """(n, 64): sinusoidal_encoding(n, 48) in columns 16-63, zeros elsewhere (like toy.positional_part)."""
    x = np.zeros((n, D_MODEL))
    x[:, PE_COLS] = sinusoidal_encoding(n, PE_WIDTH)
    return x


def with_sinusoidal(tokens: Sequence[str] = TOKENS) -> np.ndarray:
    """(n, 64): the toy sentence's word one-hots (columns 0-4) plus sinusoidal_part(n) in columns 16-63."""
    return token_part(tokens) + sinusoidal_part(len(tokens))


def shift_matrix(pe: np.ndarray, k: int) -> np.ndarray:
    """(d, d) matrix M with PE[p] @ M = PE[p - k] for every p, read off row |k| of the encoding pe (n, d).

    Each (sin, cos) pair of PE[p] is a point on a circle at angle p * w_i. Turning it back by k * w_i is a
    2 x 2 rotation whose cos and sin are exactly the pair in row k, since PE[k] = (sin k w_i, cos k w_i).
    A negative k turns forward: the inverse rotation, the transpose.
    """
    if not abs(k) < len(pe):
        raise ValueError(f"k: expected |k| < {len(pe)} (the rows of pe), got {k}")
    s, c = pe[abs(k), 0::2], pe[abs(k), 1::2]  # sin(|k| w_i), cos(|k| w_i), each (d/2,)
    m = np.zeros((pe.shape[1], pe.shape[1]))
    m[0::2, 0::2] = np.diag(c)  # new sin = sin(a) cos(kw) - cos(a) sin(kw) = sin(a - kw)
    m[1::2, 0::2] = np.diag(-s)
    m[0::2, 1::2] = np.diag(s)  # new cos = cos(a) cos(kw) + sin(a) sin(kw) = cos(a - kw)
    m[1::2, 1::2] = np.diag(c)
    return m if k >= 0 else m.T


def position_head_params(offset: int = 1, gain: float = 9.0) -> MHAParams:
    """One head (h = 1, d_model = 64) on with_sinusoidal(): query i looks for position i - offset.

    W^Q turns the query's code back by offset (shift_matrix) and scales it; W^K passes the key's code
    unchanged. So the scaled score is gain * PE[i - offset] . PE[j], largest at j = i - offset. W^V
    passes the word one-hots, W^O = I: the output row is the word found there.
    """
    pe = sinusoidal_encoding(abs(offset) + 1, PE_WIDTH)  # row |offset| holds the rotation's cos and sin
    w_q, w_k, w_v = (np.zeros((D_MODEL, D_MODEL)) for _ in range(3))
    w_q[PE_COLS, PE_COLS] = gain * math.sqrt(D_MODEL) * shift_matrix(pe, offset)  # sqrt(d_k) undoes the scale
    w_k[PE_COLS, PE_COLS] = np.eye(PE_WIDTH)
    w_v[WORD, WORD] = np.eye(len(VOCAB))
    return MHAParams(w_q=w_q, w_k=w_k, w_v=w_v, w_o=np.eye(D_MODEL), h=1)


ENCODINGS = ("sinusoidal", "none")


def position_head(
    offset: int = 1, encoding: str = "sinusoidal", gain: float = 9.0, tokens: Sequence[str] = TOKENS
) -> dict[str, Any]:
    """Weights (n, n) of position_head_params on the toy sentence, with or without its positional code.

    Also returns on_target: the mean weight that queries with a key at i - offset give to it.
    """
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding: expected one of {ENCODINGS}, got {encoding!r}")
    if not -3 <= offset <= 3:
        raise ValueError(f"offset: expected -3 to 3 tokens, got {offset}")
    if not (math.isfinite(gain) and gain >= 0):
        raise ValueError(f"gain: expected a finite number >= 0, got {gain!r}")
    x = with_sinusoidal(tokens) if encoding == "sinusoidal" else token_part(tokens)
    w = multi_head_attention(x, x, x, position_head_params(offset, gain))[1][0]  # (n, n)
    rows = [i for i in range(len(x)) if 0 <= i - offset < len(x)]
    on_target = float(np.mean([w[i, i - offset] for i in rows])) if rows else math.nan
    return {
        "weights": w,
        "tokens": tuple(tokens),
        "offset": offset,
        "encoding": encoding,
        "gain": gain,
        "on_target": on_target,
        "uniform": 1 / len(x),
    }
