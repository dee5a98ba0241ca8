"""Static HTML export: execute every notebook and write build/html/<name>.html plus an index.html.

`python -m mha_lesson.aids.export_html [--out DIR] [--timeout S] [NOTEBOOK ...]` (default: every notebook in
notebooks/). Each notebook runs headless with notebooks/ as its working directory, exactly as in the lab.

The pages must read offline, so nbconvert's lab template is used without everything it fetches from a CDN:
require.js, the widget manager and mermaid are left out, and MathJax comes from a local copy (the
jupyter-server-mathjax package) placed next to the pages, or is left out when that package is missing (the
TeX source then shows as written). Live widgets cannot run without a kernel: their view is dropped and the
static fallback every widget here offers beside it (the explorer's PNG, the quiz's list of cards) is shown.
"""

from __future__ import annotations

import argparse
import dataclasses
import html
import logging
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbclient
import nbformat
from jinja2 import DictLoader
from nbconvert import HTMLExporter

from .concept_map import LESSONS, NOTEBOOKS

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
FALLBACKS = ("image/png", "text/html")
MATHJAX_DIR = "mathjax"
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"
# Kernels run at once: one per core of the 2-core machines this series targets. A lesson's kernel mostly keeps one
# core busy (figures are drawn in one thread), so two at a time run the whole series in about half the time.
WORKERS = 2

# The lab template minus every <script src> and <link> that points at a CDN.
TEMPLATE = """{%- extends 'index.html.j2' -%}
{% from 'mathjax.html.j2' import mathjax %}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_js_mathjax -%}
{%- if resources.mathjax_url -%}
{{ mathjax(resources.mathjax_url) }}
<script type="text/x-mathjax-config">
// The local MathJax (jupyter-server-mathjax) ships only the STIX-Web fonts, as the classic notebook used them.
MathJax.Hub.Config({"HTML-CSS": {availableFonts: [], webFont: "STIX-Web", imageFont: null}});
</script>
{%- endif -%}
{%- endblock html_head_js_mathjax -%}
"""

# nbconvert warns on every page that its figures have no alt text (they carry titles); keep `make html` readable.
_LOG = logging.getLogger(__name__)
_LOG.setLevel(logging.ERROR)

_EXTERNAL = re.compile(
    r"<(script|link|img|iframe)\b[^>]*\b(src|href)\s*=\s*[\"']?\s*(https?:)?//[^\"'\s>]*", re.IGNORECASE
)
_SCRIPT_BODY = re.compile(r"<script\b[^>]*>(.*?)</script>", re.IGNORECASE | re.DOTALL)
_CSS_IMPORT = re.compile(r"@import\s+(url\()?\s*[\"']?\s*(https?:)?//", re.IGNORECASE)
_IPYNB_LINK = re.compile(r"""href=(["'])(?![a-z][a-z0-9+.-]*:|/)([^"'#]*?)\.ipynb(#[^"']*)?\1""", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Page:
    """One exported page: where it was written, its title, and the executed notebook it shows."""

    path: Path
    title: str
    notebook: nbformat.NotebookNode


def execute(path: Path, timeout: int = 300) -> nbformat.NotebookNode:
    """Run the notebook at path headless, in its own folder, and return it with outputs."""
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        store_widget_state=False,  # a static page has no widget manager to restore it
    )
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as exc:
        raise RuntimeError(f"{path.name}: a cell failed, so no page was written for it\n{exc}") from exc
    return nb


def execute_all(paths: list[Path], timeout: int = 300, workers: int = WORKERS) -> Iterator[nbformat.NotebookNode]:
    """Run the notebooks `workers` at a time (each kernel is its own process) and yield them in the given order."""
    with ThreadPoolExecutor(workers) as pool:
        for future in [pool.submit(execute, path, timeout) for path in paths]:
            yield future.result()


def static_outputs(nb: nbformat.NotebookNode) -> list[str]:
    """Drop live-widget views (in place); return a note for every widget output that had no static fallback."""
    missing = []
    nb.metadata.pop("widgets", None)
    for number, cell in enumerate(nb.cells, start=1):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET_VIEW in data:
                del data[WIDGET_VIEW]
                if not any(m in data for m in FALLBACKS):
                    missing.append(f"cell {number}: a widget with no image/png or text/html beside it")
    return missing


def offline_problems(page: str) -> list[str]:
    """Everything in an HTML page that a browser would fetch from the network (empty when the page is offline)."""
    found = [m.group(0) for m in _EXTERNAL.finditer(page)]
    for body in _SCRIPT_BODY.findall(page):
        found += re.findall(r"""(?:import\s*\(?|from)\s*["'](?:https?:)?//[^"']+""", body)
    found += [m.group(0) for m in _CSS_IMPORT.finditer(page)]
    return found


def figures(nb: nbformat.NotebookNode) -> list[str]:
    """Base64 text of every PNG among the notebook's outputs, in order (what its page must show)."""
    pngs = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            png = out.get("data", {}).get("image/png")
            if png:
                pngs.append(re.sub(r"\s", "", png))
    return pngs


def exporter(mathjax_url: str | None) -> HTMLExporter:
    """nbconvert's lab HTML exporter with the offline template above."""
    exp = HTMLExporter(template_name="lab", extra_loaders=[DictLoader({"mha_offline.html.j2": TEMPLATE})], log=_LOG)
    exp.template_file = "mha_offline.html.j2"
    exp.mathjax_url = mathjax_url or ""
    return exp


def local_mathjax(out: Path) -> str | None:
    """Copy MathJax next to the pages (once) and return its relative URL, or None without jupyter-server-mathjax."""
    try:
        import jupyter_server_mathjax
    except ImportError:
        return None
    source = Path(jupyter_server_mathjax.__file__).parent / "static"
    target = out / MATHJAX_DIR
    if not (target / "MathJax.js").exists():
        shutil.copytree(source, target, dirs_exist_ok=True)
    return f"{MATHJAX_DIR}/MathJax.js?config={MATHJAX_CONFIG}"


def title(stem: str, nb: nbformat.NotebookNode) -> str:
    """The lesson title from LESSONS, else the notebook's first Markdown heading, else its file name."""
    if stem in LESSONS:
        return f"{stem[:2]} · {LESSONS[stem]}"
    for cell in nb.cells:
        if cell.cell_type == "markdown" and (m := re.search(r"^#+\s+(.+)$", cell.source, re.MULTILINE)):
            return m.group(1).strip()
    return stem


def rewrite_links(page: str) -> str:
    """Point relative links to notebooks (href="03_projections.ipynb#step") at their pages (.html)."""
    return _IPYNB_LINK.sub(lambda m: f"href={m[1]}{m[2]}.html{m[3] or ''}{m[1]}", page)


def convert(nb: nbformat.NotebookNode, name: str, exp: HTMLExporter) -> str:
    """One executed notebook as an offline HTML page, links between notebooks pointing at their pages."""
    page, _ = exp.from_notebook_node(nb, resources={"metadata": {"name": name}})
    return rewrite_links(page)


def index_page(entries: list[tuple[str, str]]) -> str:
    """A plain index.html linking every page: entries are (file name, title)."""
    items = "\n".join(f'<li><a href="{html.escape(f)}">{html.escape(t)}</a></li>' for f, t in entries)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>mha-lesson: multi-head attention, step by step</title>
<style>body {{ font-family: system-ui, sans-serif; max-width: 44em; margin: 2em auto; line-height: 1.6; }}</style>
</head><body>
<h1>Multi-head attention, step by step</h1>
<p>The lessons of mha-lesson, executed and exported as static pages (no Jupyter needed). Open them in order.</p>
<ul>
{items}
</ul>
</body></html>
"""


def export(
    notebooks: list[Path],
    out: Path,
    timeout: int = 300,
    log=print,
    run: Callable[[Path], nbformat.NotebookNode] | None = None,
) -> list[Page]:
    """Execute (with run, default execute) and convert each notebook into out/, write out/index.html."""
    if not notebooks:
        raise ValueError("notebooks: expected at least one .ipynb file to export, got none")
    out.mkdir(parents=True, exist_ok=True)
    mathjax_url = local_mathjax(out)
    if mathjax_url is None:
        log("note: jupyter-server-mathjax is not installed, so formulas show as TeX source")
    exp = exporter(mathjax_url)
    pages = []
    paths = sorted(notebooks)
    executed = execute_all(paths, timeout) if run is None else map(run, paths)
    for path, nb in zip(paths, executed, strict=True):
        start = time.perf_counter()
        missing = static_outputs(nb)
        if missing:
            raise ValueError(
                f"{path.name}: every widget needs a static fallback for the HTML page; " + "; ".join(missing)
            )
        name = title(path.stem, nb)
        page = convert(nb, name, exp)
        problems = offline_problems(page)
        if problems:
            raise ValueError(f"{path.name}: the page would fetch from the network: {problems[:3]}")
        target = out / f"{path.stem}.html"
        target.write_text(page, encoding="utf-8")
        pages.append(Page(target, name, nb))
        log(f"{path.name} -> {target} ({len(figures(nb))} figures, converted in {time.perf_counter() - start:.1f} s)")
    (out / "index.html").write_text(index_page([(p.path.name, p.title) for p in pages]), encoding="utf-8")
    return pages


def main(argv: list[str] | None = None) -> None:
    """Command line: export the given notebooks (default: all of notebooks/) to --out."""
    parser = argparse.ArgumentParser(prog="python -m mha_lesson.aids.export_html", description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks to export (default: notebooks/*.ipynb)")
    parser.add_argument("--out", type=Path, default=Path("build") / "html", help="output folder (default build/html)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds allowed per cell (default 300)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    notebooks = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
    missing = [str(p) for p in notebooks if not p.is_file()]
    if missing:
        sys.exit(f"make html failed: notebooks: no such file: {', '.join(missing)}")
    start = time.perf_counter()
    try:
        pages = export(notebooks, args.out, args.timeout)
    except (ValueError, RuntimeError) as exc:
        sys.exit(f"make html failed: {exc}")
    except OSError as exc:  # --out under a file, no permission: one line, no traceback
        sys.exit(f"make html failed: cannot write to --out {args.out}: {exc.strerror or exc}")
    print(f"{len(pages)} pages and index.html in {args.out}/ ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
