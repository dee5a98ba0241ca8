"""Timing side by side: each side runs in turn, repeat after repeat, so load on the machine hits all alike."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def interleaved_medians(sides: dict[str, Callable[[], object]], repeats: int, steps: int) -> dict[str, float]:
    """Median seconds per call of each side, over `repeats` rounds of `steps` calls, the sides interleaved."""
    times: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(repeats):
        for name, step in sides.items():
            start = time.perf_counter()
            for _ in range(steps):
                step()
            times[name].append((time.perf_counter() - start) / steps)
    return {name: statistics.median(t) for name, t in times.items()}
