"""Dispatch `python -m benchmarks [NAME] [OPTIONS]` to benchmarks.NAME.main (default: core).

The benchmarks are found, not listed: every module of this package whose name does not start with "_" is one,
and `--help` lists them with the first line of each one's docstring (read from the source, so listing them
imports nothing heavy). `python -m benchmarks NAME --help` shows that benchmark's own options.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import pkgutil
import sys
from pathlib import Path

import benchmarks as package

DEFAULT = "core"


def benchmarks() -> dict[str, str]:
    """Every benchmark module's name -> the first line of its docstring, in alphabetical order."""
    found = {}
    for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if module.name.startswith("_"):
            continue
        origin = importlib.util.find_spec(f"{package.__name__}.{module.name}").origin
        doc = ast.get_docstring(ast.parse(Path(origin).read_text(encoding="utf-8"))) or ""
        found[module.name] = doc.splitlines()[0] if doc else ""
    return found


def parser(names: dict[str, str]) -> argparse.ArgumentParser:
    """The dispatcher's parser: one positional choice of benchmark, everything after it passed on untouched."""
    listing = "\n".join(f"  {name:<11} {line}" for name, line in names.items())
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Run one benchmark of the mha_lesson package.",
        epilog=f"benchmarks:\n{listing}\n\n`python -m benchmarks NAME --help` lists NAME's options. "
        f"Options without a NAME go to {DEFAULT}.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("benchmark", choices=list(names), metavar="NAME", help=f"one of: {', '.join(names)}")
    p.add_argument("options", nargs=argparse.REMAINDER, help="options for that benchmark")
    return p


def main(argv: list[str]) -> None:
    """Parse the benchmark name, then hand the remaining options to its main(argv)."""
    names = benchmarks()
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv = [DEFAULT, *argv]  # `python -m benchmarks --n 512` runs core, as before
    args = parser(names).parse_args(argv)
    importlib.import_module(f"{package.__name__}.{args.benchmark}").main(args.options)


if __name__ == "__main__":
    main(sys.argv[1:])
