"""Exercise checks for lesson 10 (connections)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..attention import causal_mask
from ..demos.connections import permutation_errors, sinusoidal_part, translation_inputs, translation_params
from ..demos.toy import TOKENS, token_part
from ..encoder import encoder_layer, init_encoder_layer
from ..multihead import multi_head_attention
from ..projections import init_params
from ._base import Feedback, as_array, as_whole_number, right, wrong

N_CAUSAL = len(TOKENS)  # exercise 2 asks about the toy sentence


def check_cross_attention(answer: object) -> Feedback:
    """Exercise 1: the output of cross-attention from the decoder y to the encoder x (translation example)."""
    if isinstance(answer, tuple) and len(answer) == 2:
        answer = answer[0]  # the (output, weights) pair: the output is what is asked for
    out = as_array(answer, "the output of your multi_head_attention call")
    if isinstance(out, Feedback):
        return out
    y, x = translation_inputs()
    params = translation_params()
    expected = multi_head_attention(y, x, x, params)[0]
    if out.shape == (len(x), y.shape[1]):
        return wrong(f"This output has {len(x)} rows, one per encoder token. Which sequence asks the questions?")
    if out.shape != expected.shape:
        return wrong(f"Expected one row per decoder token and d_model columns, got shape {out.shape}.")
    if np.allclose(out, multi_head_attention(y, y, y, params)[0]):
        return wrong("That is self-attention of the decoder on itself: keys and values come from the encoder.")
    if not np.allclose(out, expected):
        return wrong("The shape is right but the values are not: check which sequence feeds k and which feeds v.")
    return right(
        f"queries from the decoder ({len(y)} rows), keys and values from the encoder ({len(x)} rows): "
        f"a {expected.shape} output, one row per decoder token."
    )


def check_causal_count(answer: object) -> Feedback:
    """Exercise 2: how many (query, key) pairs a causal mask allows for the toy sentence."""
    count = as_whole_number(answer, "the number of query-key pairs the mask allows")
    if isinstance(count, Feedback):
        return count
    allowed = int(causal_mask(N_CAUSAL).sum())
    n = N_CAUSAL
    if count == allowed:
        return right(f"n(n+1)/2 = {allowed}: a little more than half of the {n * n} pairs.")
    if count == n * n:
        return wrong("That counts every pair; the mask hides the keys after each query.")
    if count == n * (n - 1) // 2:
        return wrong("Close: a query may also attend to its own position.")
    return wrong("Count row by row: query i may attend to keys 0, 1, ..., i.")


def _options() -> dict[str, tuple[str, Callable[[np.ndarray], np.ndarray], np.ndarray | None]]:
    """Exercise 3's choices: (description, layer, positions added to the words or None)."""
    params = init_params(64, 4, seed=0)
    layer = init_encoder_layer(64, 4, seed=0)
    n = len(TOKENS)
    pe = sinusoidal_part(n)
    return {
        "a": ("self-attention, word one-hots only", lambda z: multi_head_attention(z, z, z, params)[0], None),
        "b": ("encoder layer, word one-hots only", lambda z: encoder_layer(z, layer)[0], None),
        "c": ("self-attention, words + sinusoidal code", lambda z: multi_head_attention(z, z, z, params)[0], pe),
        "d": (
            "causal self-attention, word one-hots only",
            lambda z: multi_head_attention(z, z, z, params, causal_mask(n))[0],
            None,
        ),
    }


OPTIONS = {key: description for key, (description, _, _) in _options().items()}


def option(letter: str) -> tuple[Callable[[np.ndarray], np.ndarray], np.ndarray | None]:
    """Exercise 3: option letter's layer z (n, 64) -> (n, 64), and the positions it adds to the words (or None)."""
    options = _options()
    if letter not in options:
        raise ValueError(f"letter: expected one of {', '.join(options)}, got {letter!r}")
    _, fn, positions = options[letter]
    return fn, positions


def equivariant_options(seed: int = 9) -> set[str]:
    """The options whose output rows only permute when the toy sentence's words are permuted (measured)."""
    perm = np.random.default_rng(seed).permutation(len(TOKENS))
    words = token_part()
    return {k for k, (_, fn, pos) in _options().items() if permutation_errors(fn, words, perm, pos).max() < 1e-12}


def check_equivariant(answer: object) -> Feedback:
    """Exercise 3: the set of option letters that are permutation-equivariant."""
    if answer is None:
        return wrong('Replace None with a set of letters, e.g. {"a", "c"}.')
    try:
        chosen = {str(a).strip().lower() for a in answer}  # type: ignore[union-attr]
    except TypeError:
        return wrong(f'Expected a set of letters such as {{"a", "c"}}, got {answer!r}.')
    if not chosen <= set(OPTIONS):
        return wrong(f"Use the letters {', '.join(OPTIONS)} only.")
    truth = equivariant_options()
    if chosen == truth:
        return right(
            "attention, layer norm and the feed-forward network treat every position alike, so only something "
            "tied to the slots (a positional code, a causal mask) breaks the symmetry."
        )
    if chosen - truth:
        return wrong("One of your choices ties something to the positions. Measure it with permutation_errors.")
    return wrong("Something is missing: a layer built only from per-token steps and attention keeps the symmetry.")
