"""Time the whole series run headless: one notebook at a time, then WORKERS at a time as make html and the tests do.

`python -m benchmarks notebooks` prints each lesson's seconds (kernel start included) from the one-at-a-time
run, both totals measured side by side in one run, and their ratio. Target: the series in under 60 s on 2 cores.
"""

from __future__ import annotations

import argparse
import time

from mha_lesson.aids.concept_map import NOTEBOOKS
from mha_lesson.aids.export_html import WORKERS, execute, execute_all

TARGET_S = 60.0


def main(argv: list[str]) -> None:
    """Print per-notebook and total execution times."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks notebooks")
    parser.add_argument("--workers", type=int, default=WORKERS, help=f"kernels at once (default {WORKERS})")
    args = parser.parse_args(argv)
    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    one_by_one = 0.0
    for path in paths:
        start = time.perf_counter()
        execute(path)
        seconds = time.perf_counter() - start
        one_by_one += seconds
        print(f"{path.name:<45} {seconds:6.1f} s", flush=True)
    start = time.perf_counter()
    for _ in execute_all(paths, workers=args.workers):
        pass
    together = time.perf_counter() - start
    print(f"{'one at a time':<45} {one_by_one:6.1f} s")
    print(f"{f'{args.workers} at a time':<45} {together:6.1f} s  ({one_by_one / together:.2f}x faster)")
    print(f"target: the series in under {TARGET_S:.0f} s ({'met' if together < TARGET_S else 'missed'})")
