"""Notebook display helpers (IPython is imported lazily so the numpy core never needs it)."""

from __future__ import annotations

import inspect
from typing import Any


def show_source(obj: Any) -> None:
    """Display the syntax-highlighted source of a function, class or module, for a learner to read in a lesson.

    It displays rather than returns, so a cell that shows two listings shows both (a returned object would
    appear only when it is the cell's last expression).
    """
    from IPython.display import Code, display

    try:
        source = inspect.getsource(obj)
    except (TypeError, OSError) as exc:  # a number, a string, a built-in: inspect cannot find its source
        raise ValueError(f"obj: expected a function, class or module written in Python, got {obj!r} ({exc})") from None
    display(Code(source, language="python"))
