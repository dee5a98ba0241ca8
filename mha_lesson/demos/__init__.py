"""Per-lesson demonstrations: what exists to make one lesson's point (each module's docstring names its lesson).

They stand on the numpy library one level up and never import plots, widgets, exercises or bench.
"""
