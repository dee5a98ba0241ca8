"""Sphinx configuration of the static site; website/build.py writes the sources and passes SITE_* values."""

import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's mha_lesson, as website/build.py uses

from mha_lesson.notation import plain_scripts  # noqa: E402

project = "mha-lesson: multi-head attention from first principles"
author = "mha-lesson"
copyright = "mha-lesson contributors, MIT licence"
extensions = ["myst_nb"]
root_doc = "index"
exclude_patterns = ["_build", "_static", "**.ipynb_checkpoints"]
nb_execution_mode = "off"  # website/build.py executed every lesson already, with the explorers recorded
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "html_image"]
myst_heading_anchors = 3
suppress_warnings = ["mystnb.unknown_mime_type", "myst.header"]
html_theme = "sphinx_book_theme"
html_title = "Multi-head attention, from first principles"
# The frames and scripts build.py wrote beside the sources (Sphinx reads this list relative to this folder).
html_static_path = [os.path.join(os.environ.get("SITE_SRC", "."), "_static")]
html_css_files = ["explorer.css"]
html_js_files = ["explorer.js"]
html_copy_source = False
html_show_sourcelink = False
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "home_page_in_toc": True,
    "navigation_with_keys": True,
    "show_navbar_depth": 1,
    "extra_footer": "Run any lesson live: <code>git clone</code> the repository, then <code>make lab</code>.",
}
# A local MathJax 2 (build.py copies jupyter-server-mathjax's files into _static), so formulas typeset offline.
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"
# That copy ships only the STIX-Web fonts, as the classic notebook used them.
# The page marks only math spans for MathJax (Sphinx's own default for MathJax 2, which setting this replaces).
mathjax2_config = {
    "HTML-CSS": {"availableFonts": [], "webFont": "STIX-Web", "imageFont": None},
    "tex2jax": {
        "inlineMath": [["\\(", "\\)"]],
        "displayMath": [["\\[", "\\]"]],
        "processEscapes": True,
        "ignoreClass": "tex2jax_ignore|mathjax_ignore|document",
        "processClass": "tex2jax_process|mathjax_process|math|output_area",
    },
}

# How Sphinx renders inline maths in a title (myst's dollarmath): the <title> would show \(W^O\) as typed.
MATH_SPAN = re.compile(r'<span class="math notranslate nohighlight">\\\((.*?)\\\)</span>')


def _plain_titles(app, pagename, templatename, context, doctree) -> None:
    """The browser tab (<title>) and the printed page's heading show no maths: W^O there is Wᴼ, not \\(W^O\\)."""
    if context.get("title"):
        context["title"] = MATH_SPAN.sub(lambda m: plain_scripts(f"${m.group(1)}$"), context["title"])
    if context.get("pagetitle"):
        context["pagetitle"] = plain_scripts(context["pagetitle"])


def setup(app) -> None:
    """Plain-text titles (see _plain_titles), set after the book theme has set its pagetitle."""
    app.connect("html-page-context", _plain_titles, priority=900)  # after the book theme sets pagetitle
