"""Figures for the lessons, on top of the numpy core. Every axis gets a title and labels with units."""

from .attention import attention_heatmap, heatmap_grid

__all__ = ["attention_heatmap", "heatmap_grid"]
