"""Scaled dot-product attention lesson: a toy sentence and four hand-made heads, each attending elsewhere.

Embedding of token i: x_i = token part + positional part, both (d_model,) with d_model = 64:
- token part: a one-hot over the 5-word vocabulary in columns 0-4 (which word is this?);
- positional part: a one-hot over the 11 positions in columns 5-15 (where is it?);
- columns 16-63 are zero: room a trained model would fill with meaning; these heads need none of it.
The two parts sit in separate columns, so adding them equals placing them side by side, and a projection
can read the word and the position exactly. Why one-hot positions rather than `sinusoidal_encoding`
(positional.py, lesson 12): with a one-hot code "position i - 1" is a single direction that a query can
point at, so every score below is an exact small number. Sinusoidal codes pack positions into fewer
columns, but neighbouring positions then overlap, and hand-made heads would need large gains.

Each head owns 16 columns of W^Q, W^K, W^V (d_k = 16). A head attends where q_i . k_j is largest, so
each construction below chooses q_i (what query i looks for) and k_j (what key j offers). Gains are
multiplied by sqrt(d_k), so after attention divides by sqrt(d_k) the scaled score is exactly the planned
value: SHARP = 8 for the key a head wants, 0 for the others. With 11 keys that gives the wanted key
e^8 / (e^8 + 10) = 0.997 of the weight.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .._checks import check_heads
from ..attention import causal_mask
from ..multihead import multi_head_attention
from ..projections import MHAParams, init_params

VOCAB = ("the", "cat", "saw", "dog", "and")
# Every word but "and" occurs at least twice, so the duplicate-token head has somewhere to look.
TOKENS = ("the", "cat", "saw", "the", "dog", "and", "the", "dog", "saw", "the", "cat")
MAX_LEN = 11
D_MODEL, H = 64, 4
D_K = D_MODEL // H  # 16 = 5 word features + 11 positions: the duplicate-token head needs both
WORD = slice(0, len(VOCAB))  # columns of x holding the word one-hot
POS = slice(len(VOCAB), len(VOCAB) + MAX_LEN)  # columns of x holding the position one-hot
HEAD_NAMES = ("previous token", "duplicate token", "first token", "broad")

SHARP = 8.0  # scaled score of the key a head looks for (the others get 0)
SELF = 4.0  # how much the duplicate-token head marks down a token's own position
# Row i says which key positions query i looks for: PREVIOUS[i, i - 1] = 1 (row 0 is empty).
PREVIOUS = np.eye(MAX_LEN, k=-1)


def _check_tokens(tokens: Sequence[str]) -> tuple[str, ...]:
    if isinstance(tokens, str) or not isinstance(tokens, Sequence) or not 1 <= len(tokens) <= MAX_LEN:
        raise ValueError(f"tokens: expected a sequence of 1 to {MAX_LEN} words, got {tokens!r}")
    unknown = [t for t in tokens if t not in VOCAB]
    if unknown:
        raise ValueError(f"tokens: expected words from {VOCAB}, got {unknown}")
    return tuple(tokens)


def token_part(tokens: Sequence[str] = TOKENS) -> np.ndarray:
    """(n, d_model): a one-hot of each token's word in columns 0-4, zeros elsewhere."""
    tokens = _check_tokens(tokens)
    x = np.zeros((len(tokens), D_MODEL))
    x[np.arange(len(tokens)), [VOCAB.index(t) for t in tokens]] = 1.0
    return x


def positional_part(n: int) -> np.ndarray:
    """(n, d_model): a one-hot of each position in columns 5-15, zeros elsewhere."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= MAX_LEN:
        raise ValueError(f"n: expected an integer from 1 to {MAX_LEN}, got {n!r}")
    x = np.zeros((n, D_MODEL))
    x[:, POS][:, :n] = np.eye(n)  # x[:, POS] is a view: this writes into x
    return x


def toy_embeddings(tokens: Sequence[str] = TOKENS) -> np.ndarray:
    """(n, d_model) = token_part + positional_part: each row holds two ones, its word and its position."""
    tokens = _check_tokens(tokens)
    return token_part(tokens) + positional_part(len(tokens))


def _cols(head: int, start: int, stop: int) -> slice:
    """Columns start:stop inside head's block of d_k columns."""
    return slice(head * D_K + start, head * D_K + stop)


def toy_params(shift: np.ndarray | None = None) -> MHAParams:
    """MHAParams (d_model=64, h=4, d_k=16, float64) with four hand-made heads, in the order of HEAD_NAMES.

    shift replaces PREVIOUS in head 0 (row i = the key positions query i looks for); default PREVIOUS.
    """
    shift = PREVIOUS if shift is None else np.asarray(shift, dtype=np.float64)
    if shift.shape != (MAX_LEN, MAX_LEN) or not np.isfinite(shift).all():
        raise ValueError(f"shift: expected a finite ({MAX_LEN}, {MAX_LEN}) matrix, got shape {shift.shape}")
    g = math.sqrt(D_K)  # undoes attention's 1/sqrt(d_k), so scaled scores are exactly SHARP, SELF, 0
    V = len(VOCAB)
    w_q, w_k, w_v = (np.zeros((D_MODEL, D_MODEL)) for _ in range(3))

    # Head 0, previous token: its 11 columns mean "position 0..10". Key j offers its own position
    # (k_j = one-hot of j); query i asks for row i of shift, the one-hot of i - 1. So q_i . k_j is
    # SHARP exactly when j = i - 1 and 0 otherwise. Query 0 has no previous token: q_0 = 0, and a
    # zero query scores every key 0, so row 0 spreads its weight evenly.
    w_q[POS, _cols(0, 0, MAX_LEN)] = g * SHARP * shift
    w_k[POS, _cols(0, 0, MAX_LEN)] = np.eye(MAX_LEN)

    # Head 1, duplicate token: it matches identical words, not meanings (co-reference would link a pronoun
    # to a differently spelled noun, and this vocabulary has no pronouns). 5 columns compare words, 11 positions.
    # Query and key both offer their word, so the word columns score SHARP when the words are equal;
    # the position columns score -SELF when i = j. Scaled score: SHARP * [same word] - SELF * [j = i].
    # The other occurrences of the word get 8, the token itself 8 - 4 = 4, other words 0: a repeated
    # word looks at its other occurrences, a word that occurs once ("and") falls back on itself.
    w_q[WORD, _cols(1, 0, V)] = g * SHARP * np.eye(V)
    w_k[WORD, _cols(1, 0, V)] = np.eye(V)
    w_q[POS, _cols(1, V, V + MAX_LEN)] = -g * SELF * np.eye(MAX_LEN)
    w_k[POS, _cols(1, V, V + MAX_LEN)] = np.eye(MAX_LEN)

    # Head 2, first token: one column. Every word's row of W^Q writes g * SHARP into it, and each
    # token has exactly one word, so every query is the same vector: "I look for position 0". Only
    # key 0 offers position 0 (its row of W^K is the only non-zero one), so all rows attend to key 0.
    w_q[WORD, _cols(2, 0, 1)] = g * SHARP
    w_k[POS.start, _cols(2, 0, 1)] = 1.0

    # Head 3, broad: W^Q and W^K stay zero. Every score is 0, the softmax of equal scores is uniform,
    # and the head averages all tokens: a bag-of-words summary of the sentence.

    # Values: every head passes on the word of the tokens it attends to (5 of its 16 columns), so its
    # output row is a distribution over words: "the previous word was 'cat'", "the first word is 'the'".
    for head in range(H):
        w_v[WORD, _cols(head, 0, V)] = np.eye(V)
    # W^O = I keeps each head's output in its own 16 columns, so they can be read off the output;
    # a trained W^O mixes them (lesson 6).
    return MHAParams(w_q=w_q, w_k=w_k, w_v=w_v, w_o=np.eye(D_MODEL), h=H)


def toy_weights(tokens: Sequence[str] = TOKENS, *, causal: bool = False) -> np.ndarray:
    """(h, n, n) attention weights of toy_params() on toy_embeddings(tokens), optionally causal."""
    x = toy_embeddings(tokens)
    mask = causal_mask(len(x)) if causal else None
    return multi_head_attention(x, x, x, toy_params(), mask)[1]


def intended_keys(tokens: Sequence[str] = TOKENS) -> np.ndarray:
    """(3, n, n) boolean: the keys heads 0-2 were built to attend to, query i on row i.

    Head 0: key i - 1 (row 0 has none). Head 1: the other occurrences of token i's word, or i itself
    when the word occurs once. Head 2: key 0. (Head 3, broad, attends to everything equally.)
    """
    tokens = _check_tokens(tokens)
    n = len(tokens)
    same = np.array([[a == b for b in tokens] for a in tokens])  # (n, n) same word
    others = same & ~np.eye(n, dtype=bool)
    alone = ~others.any(axis=1)  # words that occur once fall back on themselves
    duplicate = others | (np.eye(n, dtype=bool) & alone[:, None])
    first = np.zeros((n, n), dtype=bool)
    first[:, 0] = True
    return np.stack([np.eye(n, k=-1, dtype=bool), duplicate, first])


def cancelling_pair(d_model: int = 8, seed: int = 0) -> MHAParams:
    """h = 2 params (d_model, d_model) in which head 1 is head 0 with its values negated: head_1 = -head_0.

    Head 1 copies head 0's W^Q and W^K columns, so both heads attend identically; its W^V columns are
    minus head 0's, so whatever head 0 passes on, head 1 passes on the opposite. Each head carries
    information; their sum carries none. W^O is Glorot-random like the rest.
    """
    d_k = check_heads(d_model, 2)
    p = init_params(d_model, 2, seed=seed)
    w_q, w_k, w_v = p.w_q.copy(), p.w_k.copy(), p.w_v.copy()
    w_q[:, d_k:] = w_q[:, :d_k]  # same questions ...
    w_k[:, d_k:] = w_k[:, :d_k]  # ... matched against the same keys: identical attention weights
    w_v[:, d_k:] = -w_v[:, :d_k]  # opposite values
    return MHAParams(w_q=w_q, w_k=w_k, w_v=w_v, w_o=p.w_o, h=2)
