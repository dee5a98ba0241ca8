"""Static HTML export: offline pages with every figure. Unit tests use hand-made outputs (no kernel); one
module-scoped fixture executes and exports the whole series once (marked `notebook`, like the lead's
notebook tests: it runs every lesson again, about a minute on a quiet 2-core machine)."""

import base64
import importlib.util
import re
import time

import nbformat
import pytest

from mha_lesson.aids import export_html as ex
from mha_lesson.aids.concept_map import NOTEBOOKS

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(64))).decode()


def _notebook(*outputs, markdown="# Title\n[next](02_why_split_heads.ipynb) and $d_k$") -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.from_dict(o) for o in outputs]
    nb.cells = [nbformat.v4.new_markdown_cell(markdown), cell]
    return nb


def _widget_output(**extra) -> dict:
    view = {"model_id": "abc", "version_major": 2, "version_minor": 0}
    data = {"text/plain": "VBox(...)", ex.WIDGET_VIEW: view, **extra}
    return {"output_type": "display_data", "data": data, "metadata": {}}


# --- pieces, without a kernel ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "snippet",
    [
        '<script src="https://cdn.example.org/require.js"></script>',
        "<script src='//cdn.example.org/x.js'></script>",
        '<link rel="stylesheet" href="http://cdn.example.org/x.css">',
        '<script type="module">const m = await import("https://cdn.example.org/m.mjs");</script>',
        "<style>@import url(https://fonts.example.org/css);</style>",
        '<img src="https://example.org/a.png">',
    ],
)
def test_offline_check_catches_every_kind_of_network_fetch(snippet):
    assert ex.offline_problems(f"<html><head>{snippet}</head></html>")


def test_offline_check_accepts_local_scripts_and_plain_links():
    page = '<script src="mathjax/MathJax.js?config=x"></script><a href="https://example.org">web</a><p>https://x</p>'
    assert ex.offline_problems(page) == []


def test_links_to_notebooks_point_at_their_pages_and_others_are_left_alone():
    page = (
        "<a href=\"02_why_split_heads.ipynb\">a</a> <a href='03_projections.ipynb#step-2'>b</a> "
        '<a href="https://host/x.ipynb">c</a> <a href="/abs/y.ipynb">d</a> <a href="z.ipynb.txt">e</a>'
    )
    assert ex.rewrite_links(page) == (
        "<a href=\"02_why_split_heads.html\">a</a> <a href='03_projections.html#step-2'>b</a> "
        '<a href="https://host/x.ipynb">c</a> <a href="/abs/y.ipynb">d</a> <a href="z.ipynb.txt">e</a>'
    )


def test_widget_views_are_dropped_and_a_widget_without_fallback_is_reported():
    nb = _notebook(_widget_output(**{"image/png": PNG}), _widget_output())
    nb.metadata["widgets"] = {"state": {}}
    missing = ex.static_outputs(nb)
    assert missing == ["cell 2: a widget with no image/png or text/html beside it"]
    assert "widgets" not in nb.metadata
    assert all(ex.WIDGET_VIEW not in o["data"] for o in nb.cells[1].outputs)


@pytest.mark.parametrize("mathjax", [None, "mathjax/MathJax.js?config=" + ex.MATHJAX_CONFIG])
def test_page_shows_the_explorer_png_offline_with_local_or_no_mathjax(mathjax):
    nb = _notebook(_widget_output(**{"image/png": PNG}), _widget_output(**{"text/html": "<ol><li>card</li></ol>"}))
    assert ex.static_outputs(nb) == []
    page = ex.convert(nb, "t", ex.exporter(mathjax))
    assert f'src="data:image/png;base64,{PNG}' in page
    assert "<ol><li>card</li></ol>" in page and "VBox(...)" not in page
    assert ex.offline_problems(page) == []
    assert 'href="02_why_split_heads.html"' in page
    scripts = re.findall(r"<script[^>]*\bsrc=\"([^\"]*)\"", page)
    assert scripts == ([mathjax] if mathjax else [])
    assert ex.WIDGET_VIEW not in page


def test_a_figure_with_twice_the_pixels_keeps_its_css_size_on_the_page():
    """Explorers and retina figures send 2x PNGs with their CSS size beside them: the page must show that size."""
    explorer = _widget_output(**{"image/png": PNG})
    explorer["metadata"] = {"image/png": {"width": 888, "height": 260}}
    figure = {"output_type": "display_data", "data": {"image/png": PNG}, "metadata": {"image/png": {"width": 444}}}
    nb = _notebook(explorer, figure)
    assert ex.static_outputs(nb) == []
    images = re.findall(r"<img\b[^>]*>", ex.convert(nb, "t", ex.exporter(None)))
    assert len(images) == 2
    assert 'width="888"' in images[0] and 'height="260"' in images[0]
    assert 'width="444"' in images[1]


def test_figures_lists_every_png_output_without_line_breaks():
    nb = _notebook({"output_type": "display_data", "data": {"image/png": PNG[:20] + "\n" + PNG[20:]}, "metadata": {}})
    assert ex.figures(nb) == [PNG]


def test_index_links_every_page_in_order():
    page = ex.index_page([("00_start_here.html", "00 · Start here"), ("21_review.html", "15 · Review & quiz")])
    assert re.findall(r'href="([^"]+)"', page) == ["00_start_here.html", "21_review.html"]
    assert "Review &amp; quiz" in page and ex.offline_problems(page) == []


def test_command_line_fails_cleanly_without_notebooks(tmp_path, monkeypatch):
    monkeypatch.setattr(ex, "NOTEBOOKS", tmp_path)
    with pytest.raises(SystemExit, match="make html failed: notebooks: expected at least one"):
        ex.main(["--out", str(tmp_path / "html")])


def _code_notebook(tmp_path, name: str, source: str):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source)]
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def test_execute_all_yields_every_notebook_in_the_order_given(tmp_path):
    # The first is the slowest, so with two kernels at a time the second finishes first: the order must not follow.
    paths = [
        _code_notebook(tmp_path, "slow", "import time; time.sleep(1.5); print('slow')"),
        _code_notebook(tmp_path, "fast", "print('fast')"),
        _code_notebook(tmp_path, "third", "print(6 * 7)"),
    ]
    printed = [nb.cells[0].outputs[0]["text"].strip() for nb in ex.execute_all(paths, workers=2)]
    assert printed == ["slow", "fast", "42"]


def test_execute_all_names_the_notebook_whose_cell_failed(tmp_path):
    paths = [_code_notebook(tmp_path, "fine", "1"), _code_notebook(tmp_path, "broken", "1 / 0")]
    with pytest.raises(RuntimeError, match=r"^broken\.ipynb: a cell failed"):
        list(ex.execute_all(paths, workers=2))


# --- the whole series, executed once ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory, executed_notebook):
    out = tmp_path_factory.mktemp("html")
    notebooks = sorted(NOTEBOOKS.glob("*.ipynb"))
    start = time.perf_counter()
    # The same headless runs as tests/test_notebooks.py (one run per notebook for both).
    pages = ex.export(notebooks, out, log=print, run=executed_notebook)  # per-notebook times show with pytest -s
    print(f"exported {len(pages)} notebooks in {time.perf_counter() - start:.1f} s")
    return out, pages, [p.stem for p in notebooks]


@pytest.mark.notebook
def test_every_notebook_gets_a_page_linked_from_the_index(built):
    out, pages, stems = built
    assert [p.path.stem for p in pages] == stems
    index = (out / "index.html").read_text(encoding="utf-8")
    assert re.findall(r'href="([^"]+)"', index) == [f"{s}.html" for s in stems]
    has_mathjax = importlib.util.find_spec("jupyter_server_mathjax") is not None
    assert (out / "mathjax" / "MathJax.js").exists() == has_mathjax


@pytest.mark.notebook
def test_every_page_shows_every_figure_of_its_notebook_and_fetches_nothing(built):
    _, pages, _ = built
    for page in pages:
        text = page.path.read_text(encoding="utf-8")
        assert ex.offline_problems(text) == [], page.path.name
        pngs = ex.figures(page.notebook)
        for i, png in enumerate(pngs):
            assert f"data:image/png;base64,{png}" in text, f"{page.path.name}: figure {i} missing"
        assert text.count("<img") >= len(pngs)
        assert "Error displaying widget" not in text and ex.WIDGET_VIEW not in text


@pytest.mark.notebook
def test_start_page_shows_the_concept_map_and_the_review_page_the_quiz(built):
    out, pages, _ = built
    by_name = {p.path.stem: p for p in pages}
    start = (out / "00_start_here.html").read_text(encoding="utf-8")
    assert len(ex.figures(by_name["00_start_here"].notebook)) >= 1
    assert 'href="02_why_split_heads.html"' in start and "jupyterlab_widgets" in start
    review = (out / "21_review.html").read_text(encoding="utf-8")
    assert "mha-quiz-static" in review and "What is the primary advantage of multi-head attention" in review
