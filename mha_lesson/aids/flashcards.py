"""Flashcards: parse the Obsidian spaced-repetition deck in flashcards/, check it, and export it for Anki.

The deck format is the one the Obsidian spaced-repetition plugin reads: a `#flashcards/...` tag line names
the deck, then every card is one line `question :: answer`. Markdown headings (`## Lesson 04: ...`) group
the cards and blank lines are ignored. The plugin appends its schedule to a card as `<!--SR:...-->` after a
review; the parser drops that comment, so a deck studied in Obsidian still parses. Anything else is an
error that names the line, so a typo cannot silently drop a card.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from .lessons import read_lessons

DECK = Path(__file__).resolve().parents[2] / "flashcards" / "multi-head-attention.md"
SEPARATOR = "::"

_HEADING = re.compile(r"#{1,6}\s+(?P<text>.*)")
_TAGS = re.compile(r"#[\w/-]+(\s+#[\w/-]+)*")
_SCHEDULE = re.compile(r"\s*<!--SR:[^>]*-->\s*$")


@dataclasses.dataclass(frozen=True)
class Card:
    """One flashcard: its text, the deck tag it belongs to, the heading above it and its line in the file."""

    question: str
    answer: str
    deck: str  # e.g. "flashcards/ai-ml"
    section: str  # the nearest heading above the card, "" if none
    line: int  # 1-based line number in the deck file


def parse_deck(text: str, source: str = "deck") -> list[Card]:
    """Cards of an Obsidian deck in file order; ValueError naming `source` and the line for anything malformed."""
    cards: list[Card] = []
    deck, section = "", ""
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _SCHEDULE.sub("", raw).strip()
        where = f"{source} line {number}"
        if not line:
            continue
        if heading := _HEADING.fullmatch(line):
            section = heading["text"].strip()
            continue
        if _TAGS.fullmatch(line):
            tags = [t[1:] for t in line.split() if t.startswith("#flashcards")]
            if tags:
                deck = tags[0]
            continue
        if line.count(SEPARATOR) != 1 or ":::" in line:
            raise ValueError(
                f"{where}: expected one card 'question {SEPARATOR} answer' (a heading, a #flashcards tag or a "
                f"blank line), got {raw.strip()!r}"
            )
        question, answer = (part.strip() for part in line.split(SEPARATOR))
        if not question or not answer:
            side = "question" if not question else "answer"
            raise ValueError(f"{where}: expected a non-empty {side} around '{SEPARATOR}', got {raw.strip()!r}")
        if not deck:
            raise ValueError(f"{where}: expected a #flashcards/... tag line before the first card, got none")
        if question in seen:
            raise ValueError(
                f"{where}: expected unique questions, got {question!r} again (first on line {seen[question]})"
            )
        seen[question] = number
        cards.append(Card(question, answer, deck, section, number))
    if not cards:
        raise ValueError(f"{source}: expected at least one 'question {SEPARATOR} answer' card, got none")
    return cards


SECONDS_PER_CARD = 20  # one reader of the series: a little over 50 minutes for all 157 cards
_LESSON = re.compile(r"Lesson (\d+)\b")


def card_lesson(card: Card) -> int | None:
    """The number of the lesson a card's heading names ("Lesson 13: ..."), or None under any other heading."""
    m = _LESSON.match(card.section)
    return int(m.group(1)) if m else None


def select_cards(
    cards: Iterable[Card], *, track: str | None = None, lessons: Iterable[int] | None = None
) -> list[Card]:
    """The cards of one track ("core" or "deeper", from the lessons' metadata) and/or of the given lesson numbers."""
    cards = list(cards)
    tracks = {x.number: x.track for x in read_lessons()}
    if track is not None and track not in ("core", "deeper"):
        raise ValueError(f"track: expected 'core' or 'deeper', got {track!r}")
    wanted = None
    if lessons is not None:
        wanted = set(lessons)
        unknown = sorted(k for k in wanted if not isinstance(k, int) or k not in tracks)
        if unknown:
            raise ValueError(f"lessons: expected lesson numbers between 0 and {max(tracks)}, got {unknown}")
    chosen = [
        c
        for c in cards
        if (track is None or tracks.get(card_lesson(c)) == track) and (wanted is None or card_lesson(c) in wanted)
    ]
    if not chosen:
        raise ValueError(
            f"track, lessons: expected a selection with at least one card, got none for {track!r}, {lessons!r}"
        )
    return chosen


def quiz_minutes(count: int) -> int:
    """Minutes a reader takes for `count` cards, at SECONDS_PER_CARD each (at least 1)."""
    return max(1, round(count * SECONDS_PER_CARD / 60))


def load_deck(path: str | Path = DECK) -> list[Card]:
    """Parse the deck file at path (default: the series' deck)."""
    path = Path(path)
    return parse_deck(path.read_text(encoding="utf-8"), source=path.name)


def anki_tag(card: Card) -> str:
    """Anki tags for a card: the Obsidian deck tag with '/' as Anki's '::' hierarchy, plus its lesson if known."""
    tags = [card.deck.replace("/", "::")]
    if lesson := re.match(r"Lesson (\d+)", card.section):
        tags.append(f"mha-lesson::{int(lesson[1]):02d}")
    return " ".join(tags)


def export_anki_tsv(cards: Iterable[Card], path: str | Path, deck_name: str = "Multi-head attention") -> Path:
    """Write cards as a tab-separated file that Anki's File > Import reads: front, back, tags; returns the path.

    The header lines tell Anki the separator, that the fields are plain text (not HTML), which column holds
    the tags, and the deck and note type. Fields are quoted CSV-style only when they contain a tab, a quote
    or a line break, which Anki's importer understands.
    """
    cards = list(cards)
    if not cards:
        raise ValueError("cards: expected at least one card to export, got none")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as f:
        for header in ("separator:tab", "html:false", "notetype:Basic", f"deck:{deck_name}", "tags column:3"):
            f.write(f"#{header}\n")
        writer = csv.writer(f, delimiter="\t", quotechar='"', quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
        writer.writerows((c.question, c.answer, anki_tag(c)) for c in cards)
    return path


def main(argv: list[str] | None = None) -> None:
    """`python -m mha_lesson.aids.flashcards [--deck DECK] [OUT]`: check the deck and export it to OUT for Anki."""
    parser = argparse.ArgumentParser(
        prog="python -m mha_lesson.aids.flashcards",
        description="Check the flashcard deck and export it as a tab-separated file that Anki imports.",
    )
    default_out = Path("build") / "anki" / "multi-head-attention.tsv"
    parser.add_argument("out", nargs="?", type=Path, default=default_out, help=f"file to write (default {default_out})")
    parser.add_argument("--deck", type=Path, default=DECK, help=f"deck to read (default {DECK.name} in flashcards/)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        cards = load_deck(args.deck)
    except (OSError, ValueError) as exc:
        parser.exit(1, f"{parser.prog}: error: {exc}\n")
    try:
        export_anki_tsv(cards, args.out)
    except OSError as exc:  # parent is a file, out is a folder, no permission, a missing mount: one line, no traceback
        parser.exit(1, f"{parser.prog}: error: cannot write {args.out}: {exc.strerror or exc}\n")
    print(f"{len(cards)} cards from {args.deck.name} -> {args.out}")


if __name__ == "__main__":
    main()
