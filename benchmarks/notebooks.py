"""Run the lessons headless, as the tests do, and time the whole series: one at a time, then WORKERS at a time.

`execute` and `execute_all` are the runner the notebook tests share. `python -m benchmarks notebooks` prints each
lesson's seconds (kernel start included) from the one-at-a-time
run, both totals measured side by side in one run, and their ratio. Target: the series in under 60 s on 2 cores.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbclient
import nbformat

from mha_lesson.aids.concept_map import NOTEBOOKS

TARGET_S = 60.0
# Kernels run at once: one per core of the 2-core machines this series targets. A lesson's kernel mostly keeps one
# core busy (figures are drawn in one thread), so two at a time run the whole series in about half the time.
WORKERS = 2


def execute(path: Path, timeout: int = 300) -> nbformat.NotebookNode:
    """Run the notebook at path headless, in its own folder, and return it with outputs."""
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as exc:
        raise RuntimeError(f"{path.name}: a cell failed\n{exc}") from exc
    return nb


def execute_all(paths: list[Path], timeout: int = 300, workers: int = WORKERS) -> Iterator[nbformat.NotebookNode]:
    """Run the notebooks `workers` at a time (each kernel is its own process) and yield them in the given order."""
    with ThreadPoolExecutor(workers) as pool:
        for future in [pool.submit(execute, path, timeout) for path in paths]:
            yield future.result()


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
