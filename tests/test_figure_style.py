"""The series' figure defaults (mha_lesson.plots.style): figures fit a cell at their natural size, text stays
readable, and every lesson uses the one set of defaults."""

import ast
import re
from pathlib import Path

import matplotlib
import nbformat
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from mha_lesson.plots import style
from mha_lesson.plots.attention import attention_heatmap, token_label
from mha_lesson.plots.heads import matrix_image

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
# bbox_inches='tight' (IPython's inline figures) crops to the drawn area plus 0.1 in of padding each side: a
# constrained-layout figure comes out about 12 CSS px wider than its size (measured in the lessons: 950 -> 962).
TIGHT_PAD_PX = 12
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def test_the_widest_figure_fits_a_cell_and_its_ticks_read_on_a_laptop():
    assert style.figsize(4) == (style.WIDTH, 4)
    assert style.figsize(3, width=0.5) == (style.WIDTH / 2, 3)
    fig = Figure(figsize=style.figsize(3), dpi=style.DPI)
    shown = style.css_width(fig) + TIGHT_PAD_PX  # what bbox_inches='tight' sends at most
    assert shown <= style.CELL_WIDTH_PX  # at its natural size in a 1400-pixel window
    # On a laptop the output area scales it down; the smallest default text (the ticks) must still read.
    tick_px = style.RC["xtick.labelsize"] / 72 * style.DPI
    assert tick_px * style.LAPTOP_OUTPUT_PX / shown >= style.MIN_LAPTOP_TEXT_PX
    assert style.css_width(Figure(figsize=(5, 3), dpi=200), pixel_ratio=2) == pytest.approx(500)


@pytest.mark.parametrize("width", [0, -0.5, 1.2])
def test_a_figure_wider_than_a_cell_is_refused(width):
    with pytest.raises(ValueError, match="^width: expected a fraction of the cell width"):
        style.figsize(3, width=width)


def test_use_lesson_style_sets_the_defaults_and_the_smallest_size_reads_at_9_px():
    with matplotlib.rc_context():
        style.use_lesson_style()  # outside IPython: the rcParams only
        for key, value in style.RC.items():
            assert matplotlib.rcParams[key] == (list(value) if isinstance(value, tuple) else value), key
        sizes = [matplotlib.rcParams[k] for k in ("font.size", "xtick.labelsize", "ytick.labelsize")]
    # The smallest default text, in CSS pixels at the series' dpi, against an independent unit conversion.
    assert min(sizes) / 72 * style.DPI >= style.MIN_TEXT_PX


def test_smallest_text_px_finds_the_smallest_visible_label():
    fig = Figure(figsize=(4, 3), dpi=100)
    FigureCanvasAgg(fig)
    ax, hidden = fig.subplots(1, 2)
    ax.set_title("title", fontsize=12)
    ax.text(0.5, 0.5, "small", fontsize=7.2)
    ax.text(0.5, 0.2, " ", fontsize=2)  # blank: not a label
    hidden.text(0.5, 0.5, "hidden", fontsize=3)
    hidden.set_visible(False)  # (heatmap_grid hides the unused panels of its grid this way)
    assert style.smallest_text_px(fig) == (pytest.approx(7.2 * 100 / 72), "small")
    assert style.smallest_text_px(fig, pixel_ratio=2)[0] == pytest.approx(7.2 * 50 / 72)


@pytest.mark.parametrize(
    ("token", "label"), [(".", ". (period)"), ("'", "' (apostrophe)"), (",", ", (comma)"), ("cat", "cat"), ("..", "..")]
)
def test_a_lone_punctuation_token_is_labelled_with_its_name(token, label):
    assert token_label(token) == label


def test_heatmap_tick_labels_name_punctuation_and_print_weights_at_the_size_asked():
    fig = Figure()
    ax = fig.subplots()
    tokens = ["it", "'", "s", "."]
    attention_heatmap(ax, [[0.25] * 4] * 4, tokens, tokens, annotate=True, value_size=9)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["it", "' (apostrophe)", "s", ". (period)"]
    assert {t.get_fontsize() for t in ax.texts} == {9}


def test_matrix_image_can_leave_the_colour_bar_to_the_caller():
    fig = Figure()
    ax = fig.subplots()
    matrix_image(ax, [[1.0, -1.0]], title="t", xlabel="x", ylabel="y", colorbar=False)
    assert len(fig.axes) == 1
    matrix_image(ax, [[1.0, -1.0]], title="t", xlabel="x", ylabel="y")
    assert len(fig.axes) == 2  # the colour bar's own axes


def test_matrix_image_sequential_scale_and_block_names():
    fig = Figure()
    ax = fig.subplots()
    im = matrix_image(
        ax, [[0.0, 0.5, 1.0, 0.2]], title="t", xlabel="x", ylabel="y", col_edges=[2], block_names=["a", "b"],
        sequential=True, colorbar=False,
    )  # fmt: skip
    assert im.get_clim() == (0.0, 1.0) and im.get_cmap().name == "Blues"
    (top,) = ax.child_axes  # the block names, above the matrix
    assert [t.get_text() for t in top.get_xticklabels()] == ["a", "b"]
    assert list(top.get_xticks()) == [0.5, 2.5]  # the middle of columns 0-1 and of columns 2-3
    with pytest.raises(ValueError, match="^m: a sequential colour scale"):
        matrix_image(ax, [[-0.1, 1.0]], title="t", xlabel="x", ylabel="y", sequential=True)
    with pytest.raises(ValueError, match="^block_names: expected 2 names"):
        matrix_image(ax, [[0.0, 1.0]], title="t", xlabel="x", ylabel="y", col_edges=[1], block_names=["a"])


def test_heatmap_prints_weights_with_the_decimals_asked():
    fig = Figure()
    ax = fig.subplots()
    attention_heatmap(ax, [[0.4751, 0.5249]], ["q"], ["a", "b"], annotate=True, decimals=3)
    assert [t.get_text() for t in ax.texts] == ["0.475", "0.525"]


# ------------------------------------------------------------------------------------- the lessons themselves
def code_cells(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def literal_figsizes(source: str) -> list[tuple[float, float]]:
    """Every figsize=(w, h) written as numbers in a cell (style.figsize(...) calls are cell-wide by construction)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.keyword) and node.arg == "figsize" and isinstance(node.value, ast.Tuple):
            try:
                found.append(tuple(float(ast.literal_eval(e)) for e in node.value.elts))
            except ValueError:
                continue  # computed sizes: judged in the browser tests (tests/browser/test_figures.py)
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_lesson_figure_is_wider_than_a_cell(path):
    sources = [s for s in code_cells(path) if not s.lstrip().startswith(("%", "!"))]
    wide = [size for s in sources for size in literal_figsizes(s) if size[0] > style.WIDTH]
    assert not wide, f"figsize wider than {style.WIDTH} in (a cell at {style.DPI} dpi): {wide}; use style.figsize"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_lesson_with_matplotlib_figures_uses_the_series_style(path):
    sources = code_cells(path)
    if not any(re.search(r"import matplotlib", s) for s in sources):
        pytest.skip("no matplotlib figures")
    setup = next(s for s in sources if "import" in s)
    assert "use_lesson_style()" in setup, "the setup cell must call style.use_lesson_style()"


def test_shown_text_px_scales_a_figure_wider_than_the_output_area_down_with_its_text():
    fig = Figure(figsize=(8.8, 3), dpi=100)  # 880 CSS pixels: wider than a laptop's 588
    FigureCanvasAgg(fig)
    fig.text(0.5, 0.5, "label", fontsize=9)  # 12.5 px at its natural size
    assert style.shown_text_px(fig) == (pytest.approx(12.5 * 588 / 880), "label")
    assert style.shown_text_px(fig, output_px=950)[0] == pytest.approx(12.5)  # it fits: never scaled up
    assert style.shown_text_px(fig, pixel_ratio=2)[0] == pytest.approx(6.25)  # 440 CSS px: fits, half the size


def _static_pngs(nb) -> int:
    """How many PNG outputs of the notebook are static figures (an explorer's fallback image travels with its view)."""
    return sum(
        1
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if "image/png" in out.get("data", {}) and WIDGET_VIEW not in out["data"]
    )


def _small_text(figures: list[dict]) -> list[str]:
    """Figures whose smallest text shows under MIN_LAPTOP_TEXT_PX once a laptop's output area scales them down."""
    small = []
    for fig in figures:
        shown = style.scaled_px(fig["text_px"], fig["css_px"])
        if shown < style.MIN_LAPTOP_TEXT_PX:
            small.append(f"cell {fig['cell']}: {fig['text']!r} shows at {shown:.1f} px ({fig['css_px']:.0f} px wide)")
    return small


def test_small_text_scales_with_the_figure_and_never_up():
    figures = [
        {"cell": 1, "css_px": 950, "text_px": 12.5, "text": "a"},  # 12.5 * 588 / 950 = 7.7
        {"cell": 2, "css_px": 588, "text_px": 10, "text": "b"},
        {"cell": 3, "css_px": 300, "text_px": 9.9, "text": "c"},  # fits: shown at its natural 9.9
        {"cell": 4, "css_px": 735, "text_px": 12.5, "text": "d"},  # 12.5 * 0.8 = 10.0
    ]
    assert _small_text(figures) == [
        "cell 1: 'a' shows at 7.7 px (950 px wide)",
        "cell 3: 'c' shows at 9.9 px (300 px wide)",
    ]


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_static_figure_is_logged(path, executed_notebook):
    """The figure log behind the next test sees every static figure a lesson shows, and where."""
    nb = executed_notebook(path)
    figures = nb.metadata["mha_figures"]
    assert len(figures) == _static_pngs(nb)
    assert all(nb.cells[f["cell"]].cell_type == "code" for f in figures)


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_static_figure_reads_at_10_css_pixels_on_a_laptop_with_the_file_browser_open(path, executed_notebook):
    small = _small_text(executed_notebook(path).metadata["mha_figures"])
    assert not small, "\n".join(small)
