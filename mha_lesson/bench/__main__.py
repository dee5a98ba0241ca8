"""Dispatch `python -m mha_lesson.bench NAME ...` to mha_lesson.bench.NAME.main (default: core)."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import mha_lesson.bench as package


def main(argv: list[str]) -> None:
    """Run one benchmark module by name."""
    names = sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_"))
    name = argv[0] if argv and not argv[0].startswith("-") else "core"
    if name not in names:
        sys.exit(f"unknown benchmark {name!r}; choose one of: {', '.join(names)}")
    rest = argv[1:] if argv and argv[0] == name else argv
    importlib.import_module(f"mha_lesson.bench.{name}").main(rest)


if __name__ == "__main__":
    main(sys.argv[1:])
