"""The answer to an exercise check: right or wrong, with a hint that never reveals the answer."""

from __future__ import annotations

import dataclasses
import html
import math
import numbers

import numpy as np

from ..notation import html_scripts


@dataclasses.dataclass(frozen=True)
class Feedback:
    """Result of a check; displays as a coloured line in a notebook and is truthy when correct."""

    correct: bool
    message: str

    def __bool__(self) -> bool:
        return self.correct

    def __str__(self) -> str:
        return f"{'Correct' if self.correct else 'Not yet'}: {self.message}"

    def _repr_html_(self) -> str:
        """The coloured line, with the message's W^O, W_i^Q, R^2 as superscripts and subscripts (no raw caret)."""
        colour, mark = ("#1b7f3b", "&#10004; Correct") if self.correct else ("#b00020", "&#10008; Not yet")
        return f"<p style='color:{colour}'><b>{mark}</b>: {html_scripts(html.escape(self.message))}</p>"


def right(message: str = "well done.") -> Feedback:
    """A correct answer, with an optional remark that deepens it."""
    return Feedback(True, message)


def wrong(hint: str) -> Feedback:
    """A wrong answer, with a hint pointing at the step to revisit (never the answer itself)."""
    return Feedback(False, hint)


def as_number(answer: object, what: str) -> float | Feedback:
    """The answer as a float, or a friendly wrong() when it is missing (None) or not a finite number."""
    if answer is None:
        return wrong(f"Replace None with {what}.")
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        return wrong(f"Expected a number ({what}), got {type(answer).__name__}.")
    if not math.isfinite(answer):
        return wrong(f"Expected a finite number ({what}), got {answer}.")
    return float(answer)


def as_whole_number(answer: object, what: str) -> int | Feedback:
    """The answer as an int, or a friendly wrong() when as_number rejects it or it has a fractional part."""
    value = as_number(answer, what)
    if isinstance(value, Feedback):
        return value
    if not value.is_integer():  # 66.0 from n * (n + 1) / 2 is a whole number; 2.5 is not
        return wrong(f"Expected a whole number ({what}), got {value}.")
    return int(value)


def as_shape(answer: object, what: str) -> tuple[int, ...] | Feedback:
    """The answer as a tuple of ints, or a friendly wrong() when it is missing (None) or not whole numbers."""
    if answer is None:
        return wrong(f"Replace None with {what}.")
    if isinstance(answer, str):  # a string iterates, but "64" is not the shape (6, 4)
        return wrong(f"Expected {what}, got str.")
    try:
        items = tuple(answer)  # type: ignore[arg-type]
    except TypeError:
        return wrong(f"Expected {what}, got {type(answer).__name__}.")
    # int() would truncate 7.9 to 7 and accept a wrong shape, so only whole-number types pass
    if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in items):
        return wrong(f"Expected {what}, whole numbers only; got {answer!r}.")
    return tuple(int(v) for v in items)


def as_pair(answer: object, what: str) -> tuple[int, int] | Feedback:
    """The answer as two ints (a 2-D shape or a start:stop range), or a friendly wrong() like as_shape's."""
    if isinstance(answer, range | slice):  # start:stop written as a range or a slice means the same pair
        answer = (answer.start, answer.stop)
    pair = as_shape(answer, what)
    if isinstance(pair, Feedback):
        return pair
    if len(pair) != 2:
        return wrong(f"Expected {what}: two whole numbers, got {answer!r}.")
    return pair[0], pair[1]


def as_array(answer: object, what: str) -> np.ndarray | Feedback:
    """The answer as a float array, or a friendly wrong() when it is missing (None) or not numbers."""
    if answer is None:
        return wrong(f"Replace None with {what}.")
    try:
        return np.asarray(answer, dtype=float)
    except (TypeError, ValueError):
        return wrong(f"Expected {what}, got {type(answer).__name__}.")


def _word(value: object) -> str:
    """A label compared loosely: lower case, single spaces, no surrounding quotes or spaces."""
    return " ".join(str(value).strip().strip("'\"").lower().split())


def as_choices(answer: object, keys: tuple[str, ...], options: tuple[str, ...], what: str) -> dict[str, str] | Feedback:
    """The answer as {key: option} for exactly the given keys, case and spacing ignored, or a friendly wrong()."""
    if answer is None:
        return wrong(f"Replace None with {what}.")
    if not isinstance(answer, dict):
        return wrong(f"Expected {what}, got {type(answer).__name__}.")
    canonical = {_word(k): k for k in keys}  # "a" names the key "A", "D_K" the key "d_k"
    chosen = {canonical.get(_word(k), str(k)): _word(v) for k, v in answer.items()}
    missing, extra = [k for k in keys if k not in chosen], sorted(set(chosen) - set(keys))
    if missing or extra:
        return wrong(f"Expected exactly the keys {', '.join(map(repr, keys))}; missing {missing}, unexpected {extra}.")
    unknown = sorted({v for v in chosen.values() if v not in options})
    if unknown:
        return wrong(f"Use only the values {', '.join(map(repr, options))}; got {unknown}.")
    return {k: chosen[k] for k in keys}


def as_label_set(answer: object, labels: tuple[str, ...], what: str) -> set[str] | Feedback:
    """The answer as a set of labels (case and spacing ignored), or a friendly wrong(); "ac" means {"a", "c"}."""
    if answer is None:
        return wrong(f"Replace None with {what}.")
    canonical = {_word(label): label for label in labels}  # "k" names the label "K"
    if isinstance(answer, str):  # one label, or a run of one-letter labels such as "ac"
        single = _word(answer) in canonical or not all(len(label) == 1 for label in labels)
        answer = [answer] if single else list(answer)
    try:
        chosen = {canonical.get(_word(a), str(a)) for a in answer}  # type: ignore[union-attr]
    except TypeError:
        return wrong(f"Expected {what}, got {type(answer).__name__}.")
    if not chosen <= set(labels):
        return wrong(f"Use only {', '.join(map(repr, labels))}; got {sorted(chosen - set(labels))}.")
    return chosen


def check_letter(answer: object, options: dict[str, str], correct: str, praise: str, hints: dict[str, str]) -> Feedback:
    """A multiple-choice answer: one letter of options; the right one gets the praise, each wrong one its hint."""
    if answer is None:
        return wrong('Replace None with one letter, e.g. "a".')
    letter = str(answer).strip().lower()
    if letter not in options:
        return wrong(f"Answer with one of the letters {', '.join(options)}.")
    return right(praise) if letter == correct else wrong(hints[letter])
