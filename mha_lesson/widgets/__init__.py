"""Interactive explorers for the lessons, built on `Explorer` (see `_base`). Each module is one lesson's widgets."""

from ._base import Explorer, divisors, fixed_margins, pin_axis_labels, settle_layout

__all__ = ["Explorer", "divisors", "fixed_margins", "pin_axis_labels", "settle_layout"]
