"""The answer to an exercise check: right or wrong, with a hint that never reveals the answer."""

from __future__ import annotations

import dataclasses
import html
import math
import numbers


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
        colour, mark = ("#1b7f3b", "&#10004; Correct") if self.correct else ("#b00020", "&#10008; Not yet")
        return f"<p style='color:{colour}'><b>{mark}</b>: {html.escape(self.message)}</p>"


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


def as_shape(answer: object) -> tuple[int, ...] | None:
    """The answer as a tuple of ints (a shape), or None when it is not one."""
    try:
        return tuple(int(s) for s in answer)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        return None
