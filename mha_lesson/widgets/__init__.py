"""Interactive explorers for the lessons, built on `Explorer` (see `_base`). Each module is one lesson's widgets."""

from ._base import Explorer, divisors

__all__ = ["Explorer", "divisors"]
