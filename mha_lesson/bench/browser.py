"""Latency of every explorer as a learner feels it: slider key press -> updated image in JupyterLab in Chromium.

`python -m mha_lesson.bench browser [--moves N] [--notebooks DIR] [--json PATH]` serves a copy of the lessons,
runs each in headless Chromium, presses arrow keys on every slider (N steps away from the start and N back) and
prints one row per explorer with the median and max milliseconds. Target: median under 150 ms at default
sizes. A second table does the same for the other controls (toggle buttons, checkboxes, dropdowns, text fields),
each changed once and put back. The browser tests (tests/browser) drive the same code and save the same tables
to build/.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from mha_lesson.bench import _lab

REPO = Path(__file__).resolve().parents[2]


def main(argv: list[str]) -> None:
    """Print the browser latency table for every notebook in --notebooks."""
    parser = argparse.ArgumentParser(prog="python -m mha_lesson.bench browser")
    parser.add_argument("--moves", type=int, default=3, help="key presses away from the start per slider (default 3)")
    parser.add_argument("--notebooks", type=Path, default=REPO / "notebooks", help="folder of lessons")
    parser.add_argument("--json", type=Path, default=None, help="also save the rows as JSON here")
    args = parser.parse_args(argv)
    reason = _lab.browser_unavailable()
    if reason:
        raise SystemExit(f"cannot run the browser benchmark: {reason}")
    notebooks = sorted(p.name for p in args.notebooks.glob("*.ipynb"))
    if not notebooks:
        raise SystemExit(f"no notebooks in {args.notebooks}")
    visits = []
    with tempfile.TemporaryDirectory(prefix="mha-lab-") as tmp:
        with _lab.lab_server(args.notebooks, Path(tmp)) as server, _lab.chromium() as context:
            for name in notebooks:
                visit = _lab.visit_notebook(context, server, name, moves=args.moves)
                print(f"{name}: open {visit.open_s:.1f} s, run {visit.run_s:.1f} s, {visit.sliders} sliders and "
                      f"{visit.other_controls} other controls in {visit.controls_s:.1f} s", flush=True)  # fmt: skip
                problems = visit.errors + visit.widget_problems + visit.slider_problems + visit.other_control_problems
                for problem in problems:
                    print(f"  problem: {problem.splitlines()[0]}")
                visits.append(visit)
    rows, other_rows = _lab.latency_rows(visits), _lab.latency_rows(visits, sliders=False)
    print(_lab.latency_table(rows, other_rows))
    if args.json:
        _lab.write_latency(rows, args.json, other_rows)
