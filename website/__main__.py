"""`python -m website [--out build/site] [--lessons 00 07 ...]`: build the static site (every lesson by default)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .build import NOTEBOOKS, ROOT, build


def main(argv: list[str]) -> int:
    """Parse the options and build; print the budget table."""
    parser = argparse.ArgumentParser(prog="python -m website", description=__doc__.split(":", 1)[1].strip())
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "site", help="the site's folder")
    parser.add_argument("--lessons", nargs="*", default=None, help="lesson numbers to include (default: all)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds a cell may take")
    args = parser.parse_args(argv)
    known = {p.name[:2] for p in NOTEBOOKS.glob("*.ipynb")}
    unknown = [n for n in args.lessons or [] if n.zfill(2) not in known]
    if unknown:
        parser.exit(2, f"python -m website: error: --lessons: no lesson numbered {', '.join(unknown)} in {NOTEBOOKS}\n")
    blocked = next((p for p in [args.out, *args.out.parents] if p.exists() and not p.is_dir()), None)
    if blocked is not None:
        parser.exit(2, f"python -m website: error: --out: {args.out} lies under {blocked}, which is a file\n")
    report = build(args.out, args.lessons, timeout=args.timeout)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
