"""`python -m website [--out build/site] [--lessons 00 07 ...]`: build the static site (every lesson by default)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .build import ROOT, build


def main(argv: list[str]) -> int:
    """Parse the options and build; print the budget table."""
    parser = argparse.ArgumentParser(prog="python -m website", description=__doc__.split(":", 1)[1].strip())
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "site", help="the site's folder")
    parser.add_argument("--lessons", nargs="*", default=None, help="lesson numbers to include (default: all)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds a cell may take")
    args = parser.parse_args(argv)
    report = build(args.out, args.lessons, timeout=args.timeout)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
