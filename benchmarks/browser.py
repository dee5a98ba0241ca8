"""Latency of every explorer as a learner feels it: slider key press -> updated image in JupyterLab in Chromium.

`python -m benchmarks browser [--moves N] [--notebooks DIR] [--json PATH] [--pixel-ratios 1 2]` serves a
copy of the lessons, runs each in headless Chromium, presses arrow keys on every slider (N steps away from the
start and N back) and prints one row per explorer with the median, 90th percentile and max milliseconds, and a
line over every slider move. Targets: median under 100 ms and 90th percentile under 120 ms over every slider
move. A second table does the same for the other controls (toggle buttons, checkboxes, dropdowns, text fields),
each changed once and put back. The browser tests (tests/browser) drive the same code and save the same tables
to build/.

--pixel-ratios renders every explorer at each given pixel ratio (MHA_LESSON_PIXEL_RATIO: 1 = one PNG pixel per
CSS pixel, 2 = sharp on HiDPI screens), one server per ratio, visiting each notebook on every server in turn so
that both see the same load; it prints a table per ratio and one comparing them.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from pathlib import Path

from benchmarks import _lab

REPO = Path(__file__).resolve().parents[2]


def main(argv: list[str]) -> None:
    """Print the browser latency table for every notebook in --notebooks."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks browser")
    parser.add_argument("--moves", type=int, default=3, help="key presses away from the start per slider (default 3)")
    parser.add_argument("--notebooks", type=Path, default=REPO / "notebooks", help="folder of lessons")
    parser.add_argument("--json", type=Path, default=None, help="also save the rows as JSON here")
    parser.add_argument(
        "--pixel-ratios",
        type=int,
        nargs="+",
        default=None,
        help="render explorers at each of these pixel ratios side by side (default: each explorer's own)",
    )
    args = parser.parse_args(argv)
    reason = _lab.browser_unavailable()
    if reason:
        raise SystemExit(f"cannot run the browser benchmark: {reason}")
    notebooks = sorted(p.name for p in args.notebooks.glob("*.ipynb"))
    if not notebooks:
        raise SystemExit(f"no notebooks in {args.notebooks}")
    ratios = args.pixel_ratios or [None]
    visits: dict[int | None, list[_lab.Visit]] = {ratio: [] for ratio in ratios}
    with tempfile.TemporaryDirectory(prefix="mha-lab-") as tmp, contextlib.ExitStack() as stack:
        servers = {}
        for ratio in ratios:
            workdir = Path(tmp) / f"ratio-{ratio}"
            workdir.mkdir()
            env = {} if ratio is None else {"MHA_LESSON_PIXEL_RATIO": str(ratio)}
            servers[ratio] = stack.enter_context(_lab.lab_server(args.notebooks, workdir, env))
        context = stack.enter_context(_lab.chromium())
        for name in notebooks:
            for ratio, server in servers.items():
                visit = _lab.visit_notebook(context, server, name, moves=args.moves)
                tag = "" if ratio is None else f" [{ratio}x]"
                print(f"{name}{tag}: open {visit.open_s:.1f} s, run {visit.run_s:.1f} s, {visit.sliders} sliders and "
                      f"{visit.other_controls} other controls in {visit.controls_s:.1f} s", flush=True)  # fmt: skip
                problems = visit.errors + visit.widget_problems + visit.slider_problems + visit.other_control_problems
                for problem in problems:
                    print(f"  problem: {problem.splitlines()[0]}")
                visits[ratio].append(visit)
    for ratio, done in visits.items():
        rows, other_rows = _lab.latency_rows(done), _lab.latency_rows(done, sliders=False)
        if ratio is not None:
            print(f"\nExplorers rendered at pixel ratio {ratio}:")
        print(_lab.latency_table(rows, other_rows))
        if args.json:
            path = args.json if ratio is None else args.json.with_stem(f"{args.json.stem}-{ratio}x")
            _lab.write_latency(rows, path, other_rows)
    if len(ratios) > 1:
        print("\n" + comparison(visits))


def comparison(visits: dict[int | None, list[_lab.Visit]]) -> str:
    """One line per explorer: median and 90th percentile of its slider moves at each pixel ratio."""
    by_ratio = {ratio: {r["explorer"]: r for r in _lab.latency_rows(done)} for ratio, done in visits.items()}
    names = sorted({name for rows in by_ratio.values() for name in rows})
    width = max([48] + [len(n) for n in names])
    head = "".join(f" {f'{ratio}x median':>11} {f'{ratio}x p90':>8}" for ratio in by_ratio)
    lines = [f"{'slider latency (ms)':<{width}}{head}"]
    for name in [*names, "every slider move"]:
        cells = ""
        for rows in by_ratio.values():
            row = _lab.pooled(list(rows.values())) if name == "every slider move" else rows.get(name)
            cells += f" {row['median_ms']:>11.0f} {row['p90_ms']:>8.0f}" if row else f" {'-':>11} {'-':>8}"
        lines.append(f"{name:<{width}}{cells}")
    return "\n".join(lines)
