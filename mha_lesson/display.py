"""Notebook display helpers (IPython is imported lazily so the numpy core never needs it)."""

from __future__ import annotations

import inspect
from typing import Any


def show_source(obj: Any) -> Any:
    """Syntax-highlighted source of a function, class or module, for a learner to read in a lesson."""
    from IPython.display import Code

    return Code(inspect.getsource(obj), language="python")
