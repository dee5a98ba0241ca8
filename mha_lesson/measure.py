"""Measured costs: the peak memory a call allocates, as tracemalloc sees it (numpy reports its arrays there)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable


def peak_bytes(fn: Callable[..., object], *args: object, **kwargs: object) -> int:
    """Peak bytes allocated while fn(*args, **kwargs) runs, above what was allocated before the call."""
    if not callable(fn):
        raise ValueError(f"fn: expected a function to call, got {type(fn).__name__}")
    if tracemalloc.is_tracing():
        raise RuntimeError("peak_bytes: tracemalloc is already tracing; stop it first so the peak is this call's")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        fn(*args, **kwargs)
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
