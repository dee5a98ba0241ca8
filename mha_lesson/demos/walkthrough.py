"""Forward-pass-by-hand lesson's printing helpers: one named step of the forward pass with its shape, readable by hand.

Nothing here computes attention: the numbers come from multi_head_attention_loop's trace (or from the
lesson's own cells), and these functions only lay them out with token labels and few decimals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def fmt(value: float) -> str:
    """A number with at most 3 decimals and no trailing zeros: 2, 0.475, -1.5."""
    text = np.format_float_positional(float(value), precision=3, unique=True, trim="-")
    return "0" if text == "-0" else text


def _is_whole(values: np.ndarray) -> bool:
    """True when every value is a whole number (the hand-checkable steps print without decimals)."""
    return bool(np.array_equal(values, np.round(values)))


def _number(value: float, whole: bool) -> str:
    """A whole number as such, anything else with exactly 3 decimals (as in the printed matrices)."""
    return fmt(value) if whole else f"{value:.3f}"


def format_matrix(value: np.ndarray, rows: Sequence[str] | None = None, cols: Sequence[str] | None = None) -> str:
    """A 1-D or 2-D array as aligned text, with optional row labels (tokens) and column labels."""
    a = np.atleast_2d(np.asarray(value))
    if a.ndim != 2:
        raise ValueError(f"value: expected a 1-D or 2-D array, got shape {np.shape(value)}")
    for name, labels, size in (("rows", rows, a.shape[0]), ("cols", cols, a.shape[1])):
        if labels is not None and len(labels) != size:
            raise ValueError(f"{name}: expected {size} labels, got {len(labels)}")
    # One rule for the whole matrix, so its columns align on the decimal point.
    whole = _is_whole(a)
    cells = [[_number(v, whole) for v in row] for row in a]
    width = max(len(c) for c in [*(c for row in cells for c in row), *(cols or [])])
    pad = max((len(r) for r in rows), default=0) if rows is not None else 0
    lines = []
    if cols is not None:
        indent = (pad + 2 if rows is not None else 0) + 1  # the row label, its gap and the "["
        lines.append(" " * indent + " ".join(c.rjust(width) for c in cols))
    for i, row in enumerate(cells):
        label = rows[i].rjust(pad) + "  " if rows is not None else ""
        lines.append(label + "[" + " ".join(c.rjust(width) for c in row) + "]")
    return "\n".join(lines)


def show(
    name: str,
    value: np.ndarray,
    rows: Sequence[str] | None = None,
    cols: Sequence[str] | None = None,
    note: str = "",
) -> None:
    """Print one step: its name, its shape (and an optional note), then its numbers under a header row: `cols`,
    or by default each column's index (0, 1, ...), so every printed number has a named row and column."""
    value = np.asarray(value)
    if cols is None:
        cols = [str(j) for j in range(np.atleast_2d(value).shape[-1])]
    print(f"{name}   shape {value.shape}" + (f"   {note}" if note else ""))
    print(format_matrix(value, rows, cols))
    print()


def head_columns(head: int, d_k: int) -> list[str]:
    """Column labels of head `head`'s block: h0.0 ... h0.{d_k - 1}, as its columns of Q, K and V are named."""
    return [f"h{head}.{j}" for j in range(d_k)]


def side_by_side(blocks: Sequence[str], titles: Sequence[str], gap: int = 4) -> str:
    """Multi-line texts of as many lines next to each other, each under its title (over its first "["), `gap`
    spaces apart."""
    if len(titles) != len(blocks):
        raise ValueError(f"titles: expected {len(blocks)}, got {len(titles)}")
    if len({len(b.splitlines()) for b in blocks}) > 1:
        raise ValueError("blocks: expected the same number of lines in each")
    columns = []
    for block, title in zip(blocks, titles, strict=True):
        lines = block.splitlines()
        indent = max((line.index("[") for line in lines if "[" in line), default=0)
        lines = [" " * indent + title, *lines]
        width = max(len(line) for line in lines)
        columns.append([line.ljust(width) for line in lines])
    return "\n".join((" " * gap).join(parts).rstrip() for parts in zip(*columns, strict=True))


def show_trace(
    trace: Mapping[str, object],
    name: str,
    rows: Sequence[str] | None = None,
    cols: Sequence[str] | None = None,
    note: str = "",
) -> None:
    """Print one entry of multi_head_attention_loop's trace; the per-head steps print every head side by side.

    Without `cols`, a head's own block (Q_i, K_i, V_i, head_i) is headed by its columns' names h{i}.0, h{i}.1, ...
    (the names of those columns in the whole Q, K, V); any other step by column index. Row labels print once,
    on the left."""
    if name not in trace:
        raise ValueError(f"name: expected one of {list(trace)}, got {name!r}")
    entry = trace[name]
    if not isinstance(entry, list):
        show(name, entry, rows, cols, note)
        return
    block = name.endswith("_i")
    texts, titles = [], []
    for i, value in enumerate(entry):
        width = np.atleast_2d(value).shape[-1]
        header = cols if cols is not None else head_columns(i, width) if block else [str(j) for j in range(width)]
        texts.append(format_matrix(value, rows if i == 0 else None, header))
        titles.append(f"{name.replace('_i', '')}_{i}" if block else f"head {i}")
    print(f"{name}   shape {np.shape(entry[0])} per head" + (f"   {note}" if note else ""))
    print(side_by_side(texts, titles))
    print()


def dot_terms(a: np.ndarray, b: np.ndarray) -> str:
    """A dot product written out term by term, for pen-and-paper checking: '2·1 + 0·0 + ... = 4'.

    Each vector and the result print as the matrices do (whole, or 3 decimals). The result is the exact dot
    product rounded, so with decimals it can differ in the last digit from a sum of the rounded terms.
    """
    a, b = np.asarray(a).ravel(), np.asarray(b).ravel()
    if a.shape != b.shape:
        raise ValueError(f"b: expected the same length as a ({a.size}), got {b.size}")
    whole_a, whole_b, total = _is_whole(a), _is_whole(b), a @ b
    terms = " + ".join(f"{_number(x, whole_a)}·{_number(y, whole_b)}" for x, y in zip(a, b, strict=True))
    return f"{terms} = {_number(total, whole_a and whole_b)}"
