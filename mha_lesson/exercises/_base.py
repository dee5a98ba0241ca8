"""The answer to an exercise check: right or wrong, with a hint that never reveals the answer."""

from __future__ import annotations

import dataclasses
import html


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
