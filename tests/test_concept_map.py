"""The concept map: its data against the notebooks that exist, and its figure for overlaps and clipped arrows."""

import itertools
import re

import nbformat
import numpy as np
import pytest
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from mha_lesson.aids import concept_map as cm
from mha_lesson.plots.concept_map import FIGSIZE, draw_concept_map, text_boxes, to_png
from mha_lesson.plots.style import DPI, LAPTOP_OUTPUT_PX, MIN_LAPTOP_TEXT_PX


@pytest.fixture(scope="module")
def fig():
    figure = draw_concept_map()
    figure.canvas.draw()
    return figure


@pytest.mark.parametrize("node", cm.NODES, ids=lambda n: n.key)
def test_every_node_names_a_lesson_notebook_that_exists(node):
    path = cm.NOTEBOOKS / f"{node.lesson}.ipynb"
    assert path.exists(), f"node {node.key!r} points at {path.name}, which is not in notebooks/"


def test_every_notebook_in_the_folder_is_a_planned_lesson():
    stems = sorted(p.stem for p in cm.NOTEBOOKS.glob("*.ipynb"))
    assert set(stems) <= set(cm.LESSONS), f"notebooks missing from concept_map.LESSONS: {set(stems) - set(cm.LESSONS)}"
    assert list(cm.LESSONS) == sorted(cm.LESSONS), "LESSONS must be in reading (file name) order"


def test_every_lesson_is_named_by_its_own_heading():
    # The map's table and the flashcards' headings name a lesson as its notebook does (a reader met "Concatenating
    # the heads" in the table beside a lesson called "Concatenate the heads").
    from mha_lesson.aids import lessons as ls

    for path in ls.lesson_paths(cm.NOTEBOOKS):
        heading = ls.title_of(ls.load(path))
        assert cm.LESSONS[path.stem] == heading, (
            f"{path.stem}: LESSONS says {cm.LESSONS[path.stem]!r}, heading {heading!r}"
        )


def test_the_map_covers_every_teaching_lesson_and_the_listed_connections():
    covered = {n.lesson for n in cm.NODES}
    # The capstone is practice, not a new concept: the map's "multi-head attention" box is what it asks for.
    assert covered == set(cm.LESSONS) - {"00_start_here", "09_capstone", "21_review"}
    labels = " ".join(cm.plain(n.label).lower() for n in cm.NODES)
    for concept in (
        "multi-head attention",
        "scaled dot-product attention",
        "self-attention",
        "cross-attention",
        "encoder layer",
        "positional encoding",
        "attention visualisation",
        "query-key-value",
        "linear projections",
        "parameter count",
        "complexity",
    ):
        assert concept in labels, concept


def test_every_node_is_connected_and_the_derivation_is_a_chain():
    ends = {k for e in cm.EDGES for k in (e.source, e.target)}
    assert ends == {n.key for n in cm.NODES}
    chain = [(e.source, e.target) for e in cm.EDGES if e.relation == "then"]
    # the order of the layer's picture (plots.layer) and of the code: project, then split
    assert chain == [("project", "split"), ("split", "attend"), ("attend", "concat"), ("concat", "mix")]


@pytest.mark.parametrize(
    ("nodes", "edges", "message"),
    [
        (cm.NODES + (cm.NODES[0],), cm.EDGES, "unique keys"),
        (cm.NODES, cm.EDGES + (cm.Edge("mha", "nowhere", "x"),), "'nowhere'"),
        (cm.NODES + (cm.Node("z", "Z", "12_extra", "", (1, 1), "use"),), cm.EDGES, "'12_extra'"),
        (cm.NODES + (cm.Node("z", "Z", "02_why_split_heads", "", (1, 1), "other"),), cm.EDGES, "'other'"),
        (cm.NODES, cm.EDGES + (cm.Edge("mha", "self", "x", at=1.5),), "at"),
    ],
)
def test_check_map_names_what_is_wrong(nodes, edges, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        cm.check_map(nodes, edges)


def test_start_here_links_every_lesson_in_order():
    nb = nbformat.read(cm.NOTEBOOKS / "00_start_here.ipynb", as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    linked = list(dict.fromkeys(re.findall(r"\]\((\d\d_\w+)\.ipynb\)", text)))
    assert linked == [s for s in cm.LESSONS if s != "00_start_here"]


def test_markdown_table_has_one_row_per_node_with_three_cells():
    rows = cm.markdown_table().splitlines()[2:]
    assert len(rows) == len(cm.NODES)
    for row in rows:
        cells = re.split(r"(?<!\\)\|", row)[1:-1]  # an escaped \| stays inside its cell
        assert len(cells) == 3, row
    assert "[05 Concatenate the heads](05_concatenate_heads.ipynb)" in cm.markdown_table()


def test_figure_has_a_box_per_node_naming_its_lesson_and_a_label_per_edge(fig):
    texts = {t.get_gid(): t.get_text() for t in fig.axes[0].texts if t.get_gid()}
    for n in cm.NODES:
        assert texts[f"node:{n.key}"] == f"{n.label}\nlesson {n.lesson[:2]}"
    for e in cm.EDGES:
        assert texts[f"edge:{e.source}->{e.target}"] == e.relation
    assert fig._suptitle.get_text() == "Multi-head attention and its connections"


def test_no_box_or_label_overlaps_another_and_all_stay_inside_the_figure(fig):
    boxes = text_boxes(fig)
    assert len(boxes) == len(cm.NODES) + len(cm.EDGES)
    for (a, pa), (b, pb) in itertools.combinations(boxes.items(), 2):
        assert not Bbox(pa).overlaps(Bbox(pb)), f"{a} overlaps {b}"
    width, height = fig.canvas.get_width_height()
    for name, ((x0, y0), (x1, y1)) in boxes.items():
        assert 0 <= x0 and x1 <= width and 0 <= y0 and y1 <= height, f"{name} leaves the figure"


def _data_boxes(fig) -> dict[str, np.ndarray]:
    to_data = fig.axes[0].transData.inverted()
    return {g[5:]: to_data.transform(p) for g, p in text_boxes(fig).items() if g.startswith("node:")}


def test_arrows_start_and_end_just_outside_their_boxes_and_cross_no_other_box(fig):
    boxes = _data_boxes(fig)
    arrows = [t for t in fig.axes[0].texts if (t.get_gid() or "").startswith("arrow:")]
    assert len(arrows) == len(cm.EDGES)

    def distance_outside(point, box):
        (x0, y0), (x1, y1) = box
        dx, dy = max(x0 - point[0], 0, point[0] - x1), max(y0 - point[1], 0, point[1] - y1)
        return np.hypot(dx, dy)

    for arrow in arrows:
        source, target = arrow.get_gid()[6:].split("->")
        start, end = np.array(arrow.xyann), np.array(arrow.xy)
        assert 0.01 < distance_outside(start, boxes[source]) < 0.2, f"{source}->{target} starts off its box"
        assert 0.01 < distance_outside(end, boxes[target]) < 0.2, f"{source}->{target} ends off its box"
        for key, box in boxes.items():
            if key in (source, target):
                continue
            for t in np.linspace(0, 1, 200):
                p = start + t * (end - start)
                assert distance_outside(p, box) > 0, f"arrow {source}->{target} crosses box {key}"


def test_png_fits_a_laptop_unscaled_with_every_text_readable_and_is_deterministic(fig):
    png = to_png(fig)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    # Shown with Image(png, retina=True) at half its pixels: no wider than a laptop's output area, so it is never
    # scaled down there, and no taller than a laptop screen (issue 30).
    assert width / 2 <= LAPTOP_OUTPUT_PX and height / 2 <= 800
    assert (width, height) == tuple(round(2 * DPI * s) for s in FIGSIZE)
    texts = [t for t in fig.findobj(Text) if t.get_text().strip()]
    assert min(t.get_fontsize() for t in texts) / 72 * DPI >= MIN_LAPTOP_TEXT_PX
    assert to_png(draw_concept_map()) == png


def test_a_map_wider_than_a_laptop_shows_is_refused():
    with pytest.raises(ValueError, match="figsize"):
        draw_concept_map(figsize=(7.0, 8.0))


def test_the_map_counts_heads_from_0_like_the_lessons():
    """Heads are head_0 .. head_(h-1) in the lessons and the code; the map must not switch to the paper's 1..h."""
    for node in cm.NODES:
        text = f"{node.label} {node.description}"
        assert not re.search(r"head_(1\b|h\b|\{h\})", text), f"{node.key}: {text}"
    assert any("head_0" in n.description for n in cm.NODES)
