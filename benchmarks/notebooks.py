"""Run the lessons headless, as the tests do, and time the whole series: one at a time, then WORKERS at a time.

`execute` and `execute_all` are the runner the notebook tests share. `python -m benchmarks notebooks` prints each
lesson's seconds (kernel start included) from the one-at-a-time
run, both totals measured side by side in one run, and their ratio. Target: the series in under 60 s on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
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


# An IPython startup file for the kernel: every static figure is logged as it goes out, with the CSS width its retina
# PNG is shown at (after bbox_inches='tight') and its smallest text at the figure's dpi. Figures go out through
# IPython's retina formatter, which looks up pylabtools.print_figure when it runs, or as the concept map's PNG.
FIGURE_LOGGER = """
import json, os
import IPython.core.pylabtools as pylabtools
from mha_lesson.plots import concept_map, style

_print_figure, _to_png, _cell = pylabtools.print_figure, concept_map.to_png, [""]
get_ipython().events.register("pre_run_cell", lambda info: _cell.__setitem__(0, info.raw_cell))

def _log(fig, png, pixel_ratio):
    text_px, text = style.smallest_text_px(fig)
    width = int.from_bytes(png[16:20], "big")  # a PNG header keeps the width in bytes 16-20
    with open(os.environ["MHA_FIGURE_LOG"], "a") as log:
        log.write(json.dumps({"source": _cell[0], "css_px": width / pixel_ratio, "text_px": text_px, "text": text}))
        log.write("\\n")

def _print_logged(fig, fmt="png", *args, **kwargs):
    data = _print_figure(fig, fmt, *args, **kwargs)
    if fmt == "retina":  # the lessons' format (style.use_lesson_style): twice the CSS size
        _log(fig, data, 2)
    return data

def _to_png_logged(fig, pixel_ratio=2):
    data = _to_png(fig, pixel_ratio)
    _log(fig, data, pixel_ratio)
    return data

pylabtools.print_figure, concept_map.to_png = _print_logged, _to_png_logged
"""


def execute(path: Path, timeout: int = 300, figures: bool = False) -> nbformat.NotebookNode:
    """Run the notebook at path headless, in its own folder, and return it with outputs.

    figures: also log every static figure, into nb.metadata["mha_figures"] (for the figure tests): a list of
    {"cell": index, "css_px": width shown, "text_px": smallest text at its natural size, "text": that text}.
    """
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    with tempfile.TemporaryDirectory() as tmp:
        env = None
        if figures:  # a profile of its own for the kernel, whose startup file installs the logger
            startup = Path(tmp) / "profile_default" / "startup"
            startup.mkdir(parents=True)
            (startup / "00-figure-log.py").write_text(FIGURE_LOGGER)
            env = {**os.environ, "IPYTHONDIR": tmp, "MHA_FIGURE_LOG": str(Path(tmp) / "figures.jsonl")}
        try:
            client.execute(**({"env": env} if env else {}))
        except nbclient.exceptions.CellExecutionError as exc:
            raise RuntimeError(f"{path.name}: a cell failed\n{exc}") from exc
        if figures:
            log = Path(env["MHA_FIGURE_LOG"])
            rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
            cells = {c.source: i for i, c in reversed(list(enumerate(nb.cells))) if c.cell_type == "code"}
            nb.metadata["mha_figures"] = [{"cell": cells.get(r.pop("source")), **r} for r in rows]
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
