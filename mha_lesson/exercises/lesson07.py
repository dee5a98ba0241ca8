"""Exercise checks for lesson 7 (the causal mask, padding and cross-attention)."""

from __future__ import annotations

import numbers

import numpy as np

from ..attention import causal_mask, padding_mask
from ..demos.connections import translation_inputs, translation_params
from ..multihead import multi_head_attention
from ..projections import init_params
from ._base import Feedback, as_array, right, wrong

# --- exercise 1: which output rows change? ----------------------------------------------------------------

N_ROWS, CHANGED = 8, 3  # a sequence of 8 tokens; token 3 is replaced
SETTINGS = ("causal", "no mask", "cross")


def changed_rows(setting: str, seed: int = 0) -> set[int]:
    """The output rows that move (by more than 1e-12) when input row CHANGED is replaced, measured.

    causal / no mask: self-attention on 8 random tokens; cross: the 8 tokens are the decoder's queries,
    keys and values come from 5 encoder tokens that stay the same.
    """
    if setting not in SETTINGS:
        raise ValueError(f"setting: expected one of {SETTINGS}, got {setting!r}")
    rng = np.random.default_rng(seed)
    y, encoder = rng.normal(size=(N_ROWS, 16)), rng.normal(size=(5, 16))  # (8, 16) and (5, 16)
    y2 = y.copy()
    y2[CHANGED] = rng.normal(size=16)
    params = init_params(16, 2, seed=seed)
    mask = causal_mask(N_ROWS) if setting == "causal" else None

    def run(z: np.ndarray) -> np.ndarray:
        kv = encoder if setting == "cross" else z
        return multi_head_attention(z, kv, kv, params, mask)[0]  # (8, 16)

    moved = np.abs(run(y2) - run(y)).max(axis=-1)
    return {int(i) for i in np.flatnonzero(moved > 1e-12)}


def _rows(value: object) -> set[int] | None:
    """A collection of row numbers as a set of ints, or None when it is not one."""
    if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
        return None
    items = list(value)  # type: ignore[call-overload]
    if not all(isinstance(i, numbers.Integral) and not isinstance(i, bool) for i in items):
        return None
    return {int(i) for i in items}


def _row_hint(setting: str, got: set[int], truth: set[int]) -> str:
    """The hint for one wrong setting of exercise 1."""
    if setting == "causal":
        if got & set(range(CHANGED)):
            return f"causal: rows 0-{CHANGED - 1} come before token {CHANGED}; the mask hides it from them."
        if CHANGED not in got:
            return f"causal: row {CHANGED}'s own query changed, and query {CHANGED} may attend to itself."
        return f"causal: every later query may attend to key {CHANGED}, so its weights and its output move."
    if setting == "no mask":
        return f"no mask: every query attends to every key, key {CHANGED} included."
    if got - truth:
        return "cross: a decoder query reads only the encoder's keys and values; the other decoder tokens never enter."
    return f"cross: row {CHANGED}'s query changed, so its scores against the encoder change."


def check_changed_rows(answer: object) -> Feedback:
    """Exercise 1: {"causal": rows, "no mask": rows, "cross": rows} that change when token 3 of 8 is replaced."""
    if answer is None:
        return wrong('Replace None with a dict such as {"causal": [...], "no mask": [...], "cross": [...]}.')
    if not isinstance(answer, dict) or set(answer) != set(SETTINGS):
        return wrong(f"Expected a dict with exactly the keys {', '.join(map(repr, SETTINGS))}, got {answer!r}.")
    hints = []
    for setting in SETTINGS:
        got = _rows(answer[setting])
        if got is None or not got <= set(range(N_ROWS)):
            return wrong(
                f"{setting!r}: expected a list of row numbers from 0 to {N_ROWS - 1}, got {answer[setting]!r}."
            )
        truth = changed_rows(setting)
        if got != truth:
            hints.append(_row_hint(setting, got, truth))
    if hints:
        return wrong(" ".join(hints))
    return right(
        f"a causal mask lets a change reach only its own row and the later ones ({CHANGED} to {N_ROWS - 1}); "
        "without a mask it reaches every row; in cross-attention only its own, since queries never read each other."
    )


# --- exercise 2: the mask of a left-padded decoder batch ---------------------------------------------------

LENGTHS, N_PAD, H = (6, 4, 2), 6, 2  # three decoder sequences padded to 6 tokens, padding FIRST; a 2-head layer


def left_padding_mask(lengths: tuple[int, ...] = LENGTHS, n: int = N_PAD) -> np.ndarray:
    """(batch, 1, 1, n) boolean: True for the last lengths[b] keys of sequence b (its padding comes first)."""
    return (np.arange(n) >= n - np.asarray(lengths)[:, None])[:, None, None, :]


def decoder_mask() -> np.ndarray:
    """(3, 1, 6, 6): causal and no padded key, the mask exercise 2 asks for."""
    return causal_mask(N_PAD) & left_padding_mask()


def _real_queries() -> np.ndarray:
    """(3, 1, 6, 1) boolean: True on the rows of real (not padded) queries; padded rows may hold anything."""
    return left_padding_mask().swapaxes(-1, -2)


def _agrees(mask: np.ndarray, reference: np.ndarray) -> bool:
    """True when mask equals reference on every row of a real query."""
    return bool(np.all((mask == reference) | ~_real_queries()))


def check_decoder_mask(mask: object) -> Feedback:
    """Exercise 2: the self-attention mask of a decoder batch with lengths (6, 4, 2), left-padded to 6 tokens."""
    arr = as_array(mask, "your boolean mask")
    if isinstance(arr, Feedback):
        return arr
    arr = np.asarray(mask)
    if arr.dtype != np.bool_:
        return wrong(f"Expected a boolean mask (True = may attend), got dtype {arr.dtype}.")
    target = (len(LENGTHS), H, N_PAD, N_PAD)
    try:
        arr = np.broadcast_to(arr, target)
    except ValueError:
        return wrong(
            f"Shape {np.shape(mask)} does not broadcast to (batch, h, n_q, n_kv) = {target}: a 3-D mask is read "
            "as (h, n_q, n_kv), so give each sequence's mask the shape (batch, 1, n_q, n_kv)."
        )
    causal = np.broadcast_to(causal_mask(N_PAD), target)
    if _agrees(arr, decoder_mask()):
        return right(
            "the causal (6, 6) triangle & each sequence's (1, 1, 6) row of real keys: shape (3, 1, 6, 6). The padded "
            "queries of sequences 1 and 2 may see no key at all, and get zero weights."
        )
    if _agrees(~arr, decoder_mask()):
        return wrong(
            "This mask is True where attention is forbidden (the convention of PyTorch's nn.MultiheadAttention). "
            "Here True means may attend: flip it."
        )
    if _agrees(arr, causal):
        return wrong("The causal part is right, but the padding comes first here: the real queries can still see it.")
    if _agrees(arr, causal & padding_mask(list(LENGTHS), N_PAD)):
        return wrong(
            "padding_mask assumes the padding comes last; here it comes first: the real keys are the last ones."
        )
    if _agrees(arr, np.broadcast_to(left_padding_mask(), target)):
        return wrong("The padding is hidden, but every query can still see the tokens after it.")
    if _agrees(arr, causal_mask(N_PAD).T & left_padding_mask()):
        return wrong("Your triangle is the wrong one: query i must see keys 0 to i, the lower triangle.")
    return wrong("Build it from two parts: a causal (6, 6) mask, and a mask that hides each sequence's first tokens.")


# --- exercise 3: make this cross-attention call work ------------------------------------------------------


def check_cross_attention(answer: object) -> Feedback:
    """Exercise 3: the output of cross-attention from the decoder y to the encoder x (translation example)."""
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
