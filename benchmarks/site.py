"""Time the static site's explorers: key press or click to the new frame, every control through its recorded states.

`python -m benchmarks site [--site build/site] [--lessons 01 07]` builds the site first when --lessons is given (or
when no site exists yet), then moves every control of every replayed explorer in headless Chromium, pages opened
from file:// with every other request refused. Prints the budget table and the switch latency beside its targets
(median <= 30 ms, p90 <= 60 ms).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks import _lab, _site
from website.build import ROOT, build
from website.build import STATES_SCRIPT as STATES


def main(argv: list[str]) -> None:
    """Build if asked, then drive every explorer and print the latency."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks site")
    parser.add_argument("--site", type=Path, default=ROOT / "build" / "site", help="the built site's folder")
    parser.add_argument("--lessons", nargs="*", default=None, help="build these lessons first (default: reuse)")
    args = parser.parse_args(argv)
    if args.lessons is not None or not (args.site / "index.html").exists():
        print(build(args.site, args.lessons or None))
    reason = _lab.browser_unavailable()
    if reason:
        parser.exit(1, f"python -m benchmarks site: {reason}\n")
    moves = []
    refused: list[str] = []
    with _lab.chromium() as context:
        for page in sorted(args.site.glob("*.html")):
            manifests = [json.loads(m.replace("<\\/", "</")) for m in STATES.findall(page.read_text(encoding="utf-8"))]
            if manifests:
                page_moves = _site.move_everything(context, page, manifests, refused)
                print(f"{page.name:<50} {_site.latency_line(page_moves)}", flush=True)
                moves += page_moves
    problems = sum(len(m.problems) for m in moves)
    print(f"{'all pages':<50} {_site.latency_line(moves)}")
    print(f"requests refused: {len(refused)}; moves with a problem: {problems}")
