"""Exercise checks for lesson 12 (connections)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..attention import causal_mask
from ..demos.connections import PE_WIDTH, permutation_errors, sinusoidal_part
from ..demos.toy import TOKENS, token_part
from ..encoder import encoder_layer, init_encoder_layer
from ..multihead import multi_head_attention
from ..positional import sinusoidal_encoding
from ..projections import init_params
from ._base import Feedback, as_whole_number, right, wrong

# Exercise 2: two rows of the sinusoidal code, at positions the learner is not told
MYSTERY_POSITIONS = (37, 44)


def mystery_codes() -> tuple[np.ndarray, np.ndarray]:
    """Exercise 2: rows p and q of sinusoidal_encoding(64, 48), each (48,); p and q are not shown."""
    pe = sinusoidal_encoding(64, PE_WIDTH)  # (64, 48)
    p, q = MYSTERY_POSITIONS
    return pe[p].copy(), pe[q].copy()


def check_distance(answer: object) -> Feedback:
    """Exercise 2: how many positions apart the two mystery rows are."""
    value = as_whole_number(answer, "the distance between the two positions")
    if isinstance(value, Feedback):
        return value
    p, q = MYSTERY_POSITIONS
    distance = abs(q - p)
    if value == distance:
        return right(
            f"the dot product of the two codes equals PE[0]·PE[{distance}]: it depends only on the distance, so "
            "a head can match 'k positions away' without knowing where it is (the positions were 37 and 44)."
        )
    if value == -distance:
        return wrong("A distance is |p − q|: give it as a positive number.")
    if value in MYSTERY_POSITIONS:
        return wrong("That is a position; the question asks how far apart the two are.")
    return wrong("The dot product of two codes depends only on their distance: compare u @ w with pe[0] @ pe[k].")


def _options() -> dict[str, tuple[str, Callable[[np.ndarray], np.ndarray], np.ndarray | None]]:
    """Exercise 1's choices: (description, layer, positions added to the words or None)."""
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
    """Exercise 1: option letter's layer z (n, 64) -> (n, 64), and the positions it adds to the words (or None)."""
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
    """Exercise 1: the set of option letters that are permutation-equivariant."""
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
