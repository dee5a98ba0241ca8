"""A flashcard quiz for the review lesson: one card at a time, reveal, mark right or wrong, see the score.

Not an Explorer (there is no figure): the state lives in plain attributes changed only by `reveal`, `mark`,
`skip` and `restart`, so tests drive it without a browser; the buttons call the same methods, and each
button is disabled whenever its action does not apply, so a learner cannot reach an invalid state.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets
import numpy as np

from .._checks import check_nonnegative_int
from ..aids.flashcards import Card, load_deck
from ..notation import html_scripts


def _html(text: str) -> str:
    """A card's text as HTML that no MathJax typesets: escaped, with W^O and $W^O$ as W<sup>O</sup>."""
    return html_scripts(html.escape(text), mathjax=False)


class Quiz:
    """Quiz over `cards` (default: the series' deck) in an order shuffled by `seed`; display it to play."""

    def __init__(self, cards: Sequence[Card] | None = None, *, seed: int = 0) -> None:
        if cards is not None and (isinstance(cards, (str, bytes)) or not isinstance(cards, Sequence)):
            raise ValueError(f"cards: expected a list of flashcards (Card) or None, got {type(cards).__name__}")
        self.cards = list(load_deck() if cards is None else cards)
        if not self.cards or not all(isinstance(c, Card) for c in self.cards):
            raise ValueError(f"cards: expected at least one card, every one a Card, got {self.cards!r:.60}")
        self.seed = check_nonnegative_int("seed", seed)
        self.round = 0
        self.pool: list[int] = []  # indices of this round's cards, in shuffled order
        self.queue: list[int] = []  # indices still to answer; queue[0] is on screen
        self.results: dict[int, bool] = {}  # card index -> marked right
        self.revealed = False
        self._build()
        self.restart()

    # --- state ------------------------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        """True when every card of the round has been marked."""
        return not self.queue

    @property
    def current(self) -> Card | None:
        """The card on screen, or None when the round is finished."""
        return None if self.finished else self.cards[self.queue[0]]

    @property
    def score(self) -> tuple[int, int]:
        """(marked right, marked so far) in this round."""
        return sum(self.results.values()), len(self.results)

    @property
    def wrong(self) -> list[int]:
        """Indices of the cards marked wrong in this round, in the order they were shown."""
        return [i for i, ok in self.results.items() if not ok]

    def reveal(self) -> None:
        """Show the current card's answer."""
        if self.finished:
            raise ValueError("reveal: expected a card on screen, got a finished round (restart to play again)")
        self.revealed = True
        self._update()

    def mark(self, right: bool) -> None:
        """Record the current card as right or wrong (after revealing it) and move to the next card."""
        if not self.revealed:
            raise ValueError("mark: expected the answer to be revealed first, got a hidden answer")
        self.results[self.queue.pop(0)] = bool(right)
        self.revealed = False
        self._update()

    def skip(self) -> None:
        """Put the current card at the back of the queue without marking it."""
        if self.finished:
            raise ValueError("skip: expected a card on screen, got a finished round")
        self.queue.append(self.queue.pop(0))
        self.revealed = False
        self._update()

    def restart(self, wrong_only: bool = False) -> None:
        """Start a new round, reshuffled: with every card, or only those marked wrong in this round."""
        pool = self.wrong if wrong_only else list(range(len(self.cards)))
        if not pool:
            raise ValueError("wrong_only: expected at least one card marked wrong to retry, got none")
        self.round += 1
        # Seeded by (seed, round): the same clicks give the same order on every run.
        rng = np.random.default_rng([self.seed, self.round])
        self.pool = [pool[i] for i in rng.permutation(len(pool))]
        self.queue = list(self.pool)
        self.results = {}
        self.revealed = False
        self._update()

    # --- view -------------------------------------------------------------------------------------------
    def _build(self) -> None:
        self.progress = widgets.HTML()
        self.question = widgets.HTML()
        self.answer = widgets.HTML()
        self.buttons = {
            "reveal": widgets.Button(description="Show answer", button_style="primary", icon="eye"),
            "right": widgets.Button(description="I was right", button_style="success", icon="check"),
            "wrong": widgets.Button(description="I was wrong", button_style="danger", icon="times"),
            "skip": widgets.Button(description="Skip for now", icon="forward"),
            "restart": widgets.Button(description="Start again", icon="refresh"),
            "retry": widgets.Button(description="Retry the wrong ones", icon="repeat"),
        }
        actions = {
            "reveal": self.reveal,
            "right": lambda: self.mark(True),
            "wrong": lambda: self.mark(False),
            "skip": self.skip,
            "restart": self.restart,
            "retry": lambda: self.restart(wrong_only=True),
        }
        for name, button in self.buttons.items():
            button.layout.width = "auto"  # the default fixed width cuts "Retry the wrong ones" short
            button.on_click(lambda _button, act=actions[name]: self._click(act))
        self.message = widgets.HTML()
        row = widgets.HBox(list(self.buttons.values()), layout=widgets.Layout(flex_flow="row wrap"))
        self.widget = widgets.VBox([self.progress, self.question, self.answer, row, self.message])
        self.widget.add_class("mha-quiz")

    def _click(self, action: Any) -> None:
        # Buttons are disabled when their action does not apply; this guard only keeps a traceback out of the page.
        try:
            self.message.value = ""
            action()
        except ValueError as exc:
            self.message.value = f"<span style='color:#b00020'>&#9888; {html.escape(str(exc))}</span>"

    def _update(self) -> None:
        right, marked = self.score
        total = len(self.pool)
        card = self.current
        if card is None:
            self.progress.value = f"<b>Round {self.round} done</b>"
            self.question.value = f"<h3>You got {right} of {total} right ({100 * right / total:.0f}%).</h3>"
            self.answer.value = ""
        else:
            self.progress.value = (
                f"<b>Card {marked + 1} of {total}</b> &middot; {right} right, {marked - right} wrong"
                f" &middot; <span style='color:#666'>{_html(card.section)}</span>"
            )
            self.question.value = f"<h3>{_html(card.question)}</h3>"
            self.answer.value = f"<p><b>Answer:</b> {_html(card.answer)}</p>" if self.revealed else ""
        self.buttons["reveal"].disabled = card is None or self.revealed
        self.buttons["right"].disabled = self.buttons["wrong"].disabled = not self.revealed
        self.buttons["skip"].disabled = card is None or len(self.queue) < 2
        self.buttons["retry"].disabled = not self.wrong

    def static_html(self) -> str:
        """Every card of the deck with its answer folded away: what a static (no-JavaScript) page shows."""
        items = "".join(
            f"<li><b>{_html(c.question)}</b><details><summary>answer</summary>{_html(c.answer)}</details></li>"
            for c in self.cards
        )
        return f"<div class='mha-quiz-static'><p>{len(self.cards)} flashcards:</p><ol>{items}</ol></div>"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        # JupyterLab shows the live widget; a static HTML export (no widget JavaScript) shows the cards instead.
        bundle["text/html"] = self.static_html()
        return bundle


def quiz(seed: int = 0) -> Quiz:
    """A quiz over the series' flashcard deck."""
    return Quiz(seed=seed)
