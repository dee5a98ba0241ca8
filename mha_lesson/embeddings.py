"""Small seeded token embeddings for the lessons: a stand-in for a learned embedding table."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._checks import check_nonnegative_int, check_number, check_positive_int, check_size

# Lesson 3's sentence: eight distinct words, so every row of the attention maps is a different token.
EXAMPLE_TOKENS = ("my", "old", "cat", "sat", "on", "the", "warm", "mat")


def random_token_embeddings(tokens: Sequence[str], d_model: int, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    """(n, d_model) float64 rows, one per token, drawn from N(0, scale^2); a repeated token gets the same row.

    Like a lookup in an embedding table: the table has one row per distinct token (in order of first
    appearance), fixed by seed. There is no positional information, so "the" twice gives two equal rows.
    """
    if isinstance(tokens, str) or not isinstance(tokens, Sequence) or not tokens:
        raise ValueError(f"tokens: expected a non-empty sequence of strings, got {tokens!r}")
    if not all(isinstance(t, str) for t in tokens):
        raise ValueError(f"tokens: expected every token to be a string, got {[type(t).__name__ for t in tokens]}")
    d_model = check_positive_int("d_model", d_model)
    seed = check_nonnegative_int("seed", seed)
    scale = check_number("scale", scale, low=0.0)
    # The table (at most one row per token) and the result: refuse before drawing either.
    check_size("d_model", "the embedding table and result", (2 * len(tokens), d_model), np.float64)
    row = {t: i for i, t in enumerate(dict.fromkeys(tokens))}  # distinct tokens, first appearance first -> row
    # With Glorot-initialised W^Q and W^K the scaled scores have standard deviation about scale^2:
    # scale 1 gives nearly uniform attention, scale 2 maps sharp enough to tell heads apart.
    table = np.random.default_rng(seed).normal(scale=scale, size=(len(row), d_model))  # (vocab, d_model)
    return table[[row[t] for t in tokens]]  # (n, d_model): a dict lookup per token, not a search of the vocabulary
