"""Build the static site: execute the lessons with their explorers recorded, replace each explorer by replaying
controls, then let Sphinx (myst-nb, the book theme) write the pages, the sidebar, the links and the search index.

Why Sphinx with myst-nb and sphinx-book-theme: it is the generator made for notebook books that runs offline
from PyPI alone (Jupyter Book 2 needs Node and its own server, Quarto a binary from outside PyPI); its search
index is a script file, so search works on a page opened from the disk as well as from a server.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbclient
import nbformat

from mha_lesson.aids.lessons import Lesson, read_lessons
from mha_lesson.notation import plain_scripts

from .record import FIGURE_TEXT, MAX_BYTES, MAX_FRAMES, MIME

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
HERE = Path(__file__).resolve().parent
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PIXEL_RATIO = "MHA_LESSON_PIXEL_RATIO"  # read by every explorer (mha_lesson.widgets._base)
MAX_SITE_BYTES = 250 * 2**20
TRACK_CAPTIONS = {"start": "Start", "core": "Core path", "deeper": "Deeper track", "review": "Review"}
# The cell each lesson runs first at build time only: the explorers it displays carry their recorded states.
RECORDER = f"import sys\nsys.path.insert(0, {str(ROOT)!r})\nfrom website import record\nrecord.install()\n"
LIVE_NOTE = (
    '<p class="mha-live-note">This check runs in Jupyter: clone the repository and run <code>make lab</code> '
    "(or <code>pip install .</code> and <code>jupyter lab notebooks</code>), then run the cell with your answer.</p>"
)


def execute(path: Path, timeout: int) -> nbformat.NotebookNode:
    """Run a lesson headless in notebooks/ (as the lab does) with the recorder installed; the recorder's cell goes."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(RECORDER))
    client = nbclient.NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    # Every explorer frame at two pixels per CSS pixel, sharp on HiDPI: a recorded move costs the reader nothing.
    env = {**os.environ, "MPLBACKEND": "module://matplotlib_inline.backend_inline", PIXEL_RATIO: "2"}
    client.execute(env=env)
    nb.cells.pop(0)
    return nb


# How a page carries an explorer's recorded states (replay_html writes it; the tests and `benchmarks site` read it).
STATES_SCRIPT = re.compile(r'<script type="application/json" class="mha-states">(.*?)</script>', re.DOTALL)


def replay_html(manifest: dict, folder: str, number: int) -> tuple[str, dict[str, bytes]]:
    """The explorer's page markup (controls drawn by explorer.js, first frame as a plain image) and its frame files."""
    files: dict[str, bytes] = {}

    def to_files(frames: list[dict], prefix: str) -> list[dict]:
        out = []
        for i, frame in enumerate(frames):
            frame = dict(frame)
            png = frame.pop("png", None)
            if png is not None:
                name = f"{folder}/{number}-{prefix}{i}.png"
                files[name] = base64.b64decode(png)
                frame["src"] = f"_static/{name}"
            out.append(frame)
        return out

    frames = to_files(manifest["frames"], "")
    data = {**manifest, "frames": frames}
    if manifest.get("run"):
        data["run"] = to_files(manifest["run"], "run")
    first = frames[0]
    picture = (
        f'<img class="mha-frame" src="{first["src"]}" width="{first["width"]}" alt="{html.escape(first["alt"])}">'
        if "src" in first
        else f'<p class="mha-message">{html.escape(first["message"] or "")}</p>'
    )
    readouts = "".join(f'<div class="mha-readout">{r}</div>' for r in first["readouts"])
    script = json.dumps(data).replace("</", "<\\/")
    markup = (
        f'<div class="mha-site-explorer" data-explorer="{manifest["explorer"]}">'
        f'<div class="mha-controls" role="group" aria-label="controls"></div>'
        f'<p class="mha-state-note" aria-live="polite"></p>{readouts}{picture}'
        f'<script type="application/json" class="mha-states">{script}</script></div>'
    )
    return markup, files


LESSON_LINK = re.compile(r"\[([^\]]*)\]\((\d\d_\w+)\.ipynb(?:#([^)\s]*))?\)")
HTML_LESSON_LINK = re.compile(r"<a\b([^>]*?)\bhref=([\"'])(\d\d_\w+)\.ipynb(?:#([^\"']*))?\2([^>]*)>(.*?)</a>", re.S)


def site_links(text: str, built: set[str]) -> str:
    """Links to other lessons as the site has them: each an HTML link to the lesson's `.html` page (MyST resolves a
    Markdown `.ipynb` link in a paragraph but leaves one in a table as it is), with MyST's lower-case slug as its
    anchor (Jupyter keeps a heading's case, as in #Glossary); a link to a lesson outside this build (a reduced one)
    is reduced to its text. tests/site checks every link and anchor of the built pages."""

    def markdown(m: re.Match) -> str:
        text, stem, frag = m.group(1), m.group(2), m.group(3)
        if stem not in built:
            return text
        # Raw HTML: MyST would read a relative `.html` link as a reference to look up (the text stays Markdown).
        return f'<a href="{stem}.html{"#" + frag.lower() if frag else ""}">{text}</a>'

    def raw(m: re.Match) -> str:
        before, quote, stem, frag, after, text = m.groups()
        if stem not in built:
            return text
        return f"<a{before}href={quote}{stem}.html{'#' + frag.lower() if frag else ''}{quote}{after}>{text}</a>"

    return HTML_LESSON_LINK.sub(raw, LESSON_LINK.sub(markdown, text))


def staticise(nb: nbformat.NotebookNode, stem: str, built: set[str]) -> tuple[dict[str, bytes], list[dict]]:
    """In place: explorers become replay markup, other widget views drop to their fallback, checks get a note, and
    links to lessons outside `built` (the stems of this build) become plain text.

    Returns the frame files to write and one budget row per explorer."""
    nb.metadata.pop("widgets", None)
    files, rows = {}, []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = site_links(cell.source, built)
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            manifest = data.pop(MIME, None)
            if manifest is not None:
                markup, frames = replay_html(manifest, f"explorers/{stem}", len(rows))
                out["data"] = {"text/html": markup}
                out["metadata"] = {}
                files.update(frames)
                rows.append(
                    {
                        "page": stem,
                        "explorer": manifest["explorer"],
                        "frames": len(manifest["frames"]) + len(manifest.get("run") or []),
                        "bytes": sum(len(b) for b in frames.values()),
                    }
                )
            data.pop(WIDGET_VIEW, None)
            for mime in ("text/html", "text/markdown"):  # a Markdown(...) output's links too (the concept map's table)
                if mime in data:
                    data[mime] = site_links("".join(data[mime]), built)
            text = "".join(data.get("text/plain", ""))
            if "image/png" in data and text.startswith(FIGURE_TEXT):
                name = f"figures/{stem}-{len(files)}.png"
                files[name] = base64.b64decode(data["image/png"])
                width = out.get("metadata", {}).get("image/png", {}).get("width")
                size = f' width="{width}"' if width else ""
                alt = html.escape(text.removeprefix(FIGURE_TEXT))
                out["data"] = {"text/html": f'<img class="mha-figure" src="_static/{name}"{size} alt="{alt}">'}
                out["metadata"] = {}
        if re.search(r"\bex\.check\w*\(", cell.source):
            cell.outputs.append(nbformat.v4.new_output("display_data", data={"text/html": LIVE_NOTE}))
    return files, rows


def index_page(lessons: list[Lesson]) -> str:
    """The site's home: how to read it, how to run it live, and the two tracks as toctrees (the sidebar)."""
    parts = [
        "# Multi-head attention, from first principles\n",
        "Every lesson of the series, executed, with explorers that still respond: move a slider and the picture "
        "and text it controls change, replaying states that the real explorer code recorded ahead of time. "
        "To run the code, change it and have your exercises checked, run the lessons live: clone the repository, "
        "then `make lab` (or `pip install .` and `jupyter lab notebooks`).\n",
    ]
    for track, caption in TRACK_CAPTIONS.items():
        chosen = [ls for ls in lessons if ls.track == track]
        if not chosen:
            continue
        # a toctree entry is plain text (no maths, no HTML): a title's $W^O$ shows as Wᴼ in the sidebar and here
        entries = "\n".join(f"{plain_scripts(ls.title)} · {ls.minutes} min <{ls.stem}>" for ls in chosen)
        parts.append(f"```{{toctree}}\n:caption: {caption}\n:maxdepth: 1\n\n{entries}\n```\n")
    return "\n".join(parts)


def _mathjax(static: Path) -> None:
    """Copy the local MathJax 2 of jupyter-server-mathjax next to the pages (formulas typeset offline)."""
    import jupyter_server_mathjax

    source = Path(jupyter_server_mathjax.__file__).parent / "static"
    shutil.copytree(source, static / "mathjax", dirs_exist_ok=True)


def budget_table(rows: list[dict], site_bytes: int) -> str:
    """Frames and MB per explorer and the whole site's size, each beside its limit."""
    lines = [f"{'page / explorer':<58} {'frames':>7} {'limit':>6} {'MB':>7} {'limit':>6}"]
    for r in rows:
        name = f"{r['page']} / {r['explorer']}"
        lines.append(
            f"{name:<58} {r['frames']:>7} {MAX_FRAMES:>6} {r['bytes'] / 2**20:>7.2f} {MAX_BYTES / 2**20:>6.0f}"
        )
    lines.append(f"{'whole site':<58} {'':>7} {'':>6} {site_bytes / 2**20:>7.1f} {MAX_SITE_BYTES / 2**20:>6.0f}")
    return "\n".join(lines)


def build(out: Path, numbers: list[str] | None = None, timeout: int = 600, workers: int = 2) -> str:
    """Write the site to out; return the budget table. numbers: the lessons to include (default: all)."""
    lessons = read_lessons()
    if numbers:
        lessons = [ls for ls in lessons if ls.stem[:2] in {n.zfill(2) for n in numbers}]
    src = out.parent / f"{out.name}-src"
    shutil.rmtree(src, ignore_errors=True)
    (src / "_static").mkdir(parents=True)
    for name in ("explorer.js", "explorer.css"):
        shutil.copy(HERE / "static" / name, src / "_static" / name)
    _mathjax(src / "_static")
    rows: list[dict] = []
    with ThreadPoolExecutor(workers) as pool:
        runs = [pool.submit(execute, NOTEBOOKS / f"{ls.stem}.ipynb", timeout) for ls in lessons]
        for ls, run in zip(lessons, runs, strict=True):
            nb = run.result()
            files, found = staticise(nb, ls.stem, {x.stem for x in lessons})
            for name, data in files.items():
                path = src / "_static" / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            rows += found
            nbformat.write(nb, src / f"{ls.stem}.ipynb")
    (src / "index.md").write_text(index_page(lessons), encoding="utf-8")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-c", str(HERE), str(src), str(out)]
    subprocess.run(cmd, check=True, env={**os.environ, "SITE_SRC": str(src)})
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return budget_table(rows, size)
