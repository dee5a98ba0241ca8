"""One picture of the whole multi-head attention layer: x -> Q, K, V -> heads -> attention -> concatenate -> W^O.

Every core lesson shows it with its own step highlighted, so the learner always knows where they are; lesson 1's
explorer (mha_lesson.widgets.layer) moves h, d_model and n and reprints the shapes. The shapes come from
`layer_shapes`, a closed form that a test checks against the arrays of a real forward pass.
"""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from matplotlib.path import Path
from matplotlib.text import Text

from .._checks import check_heads, check_positive_int

# The boxes from left to right, in the order the code runs them: (key, heading, the lessons that teach it). The
# split is argued in lesson 2 (why d_k = d_model / h), drawn as column blocks in lesson 3 and coded in lesson 6; the
# concept map uses the same order.
STAGES = (
    ("input", "input x", ""),
    ("project", "project: Q, K, V", "lesson 3"),
    ("split", "split into heads", "lessons 2, 3 and 6"),
    ("attend", "attend per head", "lessons 4 and 7"),
    ("concat", "concatenate", "lesson 5"),
    ("mix", "mix with $W^O$", "lesson 6"),
)
STAGE_KEYS = tuple(key for key, _, _ in STAGES)
# What each core lesson highlights: its own step (lesson 7's mask acts inside the attention; 8 and 9 do it all).
LESSON_STAGES: dict[int, tuple[str, ...]] = {
    1: ("attend",),
    2: ("split",),
    3: ("project", "split"),
    4: ("attend",),
    5: ("concat",),
    6: ("mix",),
    7: ("attend",),
    8: STAGE_KEYS[1:],
    9: STAGE_KEYS[1:],
}
HIGHLIGHT, PLAIN = "#fde3b3", "#eef1f5"  # face colours: this lesson's step, the others
EDGE_HIGHLIGHT, EDGE_PLAIN = "#c77700", "#8a94a6"
# Two rows of three boxes, in a figure no wider than a laptop's output area (style.LAPTOP_OUTPUT_PX, with the file
# browser open at 1024 pixels), so it never shrinks and its 9-point shapes read at 12.5 CSS pixels everywhere.
# One row of six, a cell wide, shrank to 6 px text on a laptop. Sizes in points (1/72 inch).
COLUMNS = 3
WIDTH_PT = 5.8 * 72
MARGIN = 4.0
ARROW_GAP = 16.0  # between neighbouring boxes, for the arrow
HEADING_HEIGHT = 30.0  # heading and its lessons line, 10 pt
FORMULA_HEIGHT = 26.0  # one line of 9-point mathtext; the cross-attention projection takes two
LINE = 9 * 1.2  # a 9-point line of shapes
ROW_HEIGHTS = (HEADING_HEIGHT + FORMULA_HEIGHT + 10 * LINE + 8, HEADING_HEIGHT + FORMULA_HEIGHT + 7 * LINE + 8)
ROW_GAP = 22.0  # between the rows, for the arrow that turns the corner
TITLE_HEIGHT = 34.0  # two lines
AXES_HEIGHT = sum(ROW_HEIGHTS) + ROW_GAP + 2 * MARGIN
FIGSIZE = (WIDTH_PT / 72, round((AXES_HEIGHT + TITLE_HEIGHT) / 72, 2))  # whole CSS pixels at 100 dpi
AXES_RECT = (0.0, 0.0, 1.0, AXES_HEIGHT / (FIGSIZE[1] * 72))  # the axes AXES_HEIGHT points tall: units are points


def layer_shapes(h: int, d_model: int, n: int, n_kv: int | None = None) -> dict[str, dict[str, tuple[int, ...]]]:
    """The shape of every array of one layer, stage by stage: {stage: {array name: shape}}.

    n queries (rows of x) attend over n_kv keys and values (rows of x_kv, which is x in self-attention, n_kv = n);
    d_k = d_model / h.
    """
    d_k = check_heads(d_model, h)
    n = check_positive_int("n", n)
    n_kv = n if n_kv is None else check_positive_int("n_kv", n_kv)
    return {
        "input": {"x": (n, d_model)} if n_kv == n else {"x": (n, d_model), "x_kv": (n_kv, d_model)},
        "project": {"Q": (n, d_model), "K": (n_kv, d_model), "V": (n_kv, d_model)},
        "split": {"Q_i": (h, n, d_k), "K_i": (h, n_kv, d_k), "V_i": (h, n_kv, d_k)},
        "attend": {"weights": (h, n, n_kv), "head_i": (h, n, d_k)},
        "concat": {"concat": (n, h * d_k)},
        "mix": {"output": (n, d_model)},
    }


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ")"


# The symbolic shape beside each array (the printed numbers follow h, d_model and n). A head's own array Q_i is
# (n, d_k), as in lessons 3, 6 and 8; the split and attention boxes print the h of them stacked, Q_0..Q_{h-1}.
SYMBOLS = {
    "x": "(n, d_model)",
    "x_kv": "(n_kv, d_model)",
    "Q": "(n, d_model)",
    "K": "(n_kv, d_model)",
    "V": "(n_kv, d_model)",
    "Q_i": "(h, n, d_k)",
    "K_i": "(h, n_kv, d_k)",
    "V_i": "(h, n_kv, d_k)",
    "weights": "(h, n, n_kv)",
    "head_i": "(h, n, d_k)",
    "concat": "(n, h\u00b7d_k)",
    "output": "(n, d_model)",
}
STACKS = ("Q_i", "K_i", "V_i", "head_i", "weights")  # 3-d: name, numbers and symbol on three lines
FORMULAS = {
    "input": "one row per token",
    "project": r"$xW^Q,\ xW^K,\ xW^V$",
    "split": "d_k = d_model / h",
    "attend": r"softmax$(Q_i K_i^\top / \sqrt{d_k})\, V_i$",
    "concat": "heads side by side",
    "mix": r"concat $\cdot\ W^O$",
}
# In cross-attention the keys and values are projected from x_kv, the queries from x.
CROSS_PROJECT = "$xW^Q$,\n" r"$x_{kv}W^K,\ x_{kv}W^V$"


def array_label(name: str, h: int) -> str:
    """How a box names an array: a stack of heads as its first and last head, Q_i -> 'Q_0..Q_3' for h = 4."""
    if name not in STACKS or name == "weights":
        return name
    base = name[:-2]
    return f"{base}_0" if h == 1 else f"{base}_0..{base}_{h - 1}"


def shape_lines(shapes: dict[str, dict[str, tuple[int, ...]]], stage: str, self_attention: bool) -> str:
    """The lines a box prints: each array with its numeric and symbolic shape (n_kv written n in self-attention,
    n written n_q in cross-attention)."""
    h = shapes["split"]["Q_i"][-3]
    lines = [f"{h} head{'s' if h > 1 else ''} stacked:"] if stage in ("split", "attend") else []
    for name, shape in shapes[stage].items():
        symbol = SYMBOLS[name]
        if self_attention:
            symbol = symbol.replace("n_kv", "n")
        else:
            symbol = symbol.replace("(n,", "(n_q,").replace(", n,", ", n_q,")
        if name in STACKS:
            lines.append(f"{array_label(name, h)} =\n  {_shape(shape)}\n  {symbol}")
        else:
            lines.append(f"{name} = {_shape(shape)}\n  {symbol}")
    return "\n".join(lines)


def _box_tops() -> tuple[float, float]:
    """The top edge of each row's boxes, in points from the axes' bottom."""
    top = AXES_HEIGHT - MARGIN
    return top, top - ROW_HEIGHTS[0] - ROW_GAP


def box_geometry(i: int) -> tuple[float, float, float, float]:
    """(x0, y0, width, height) of stage i's box in points: three boxes a row, in two rows."""
    row, col = divmod(i, COLUMNS)
    column = (WIDTH_PT - 2 * MARGIN) / COLUMNS
    return MARGIN + col * column, _box_tops()[row] - ROW_HEIGHTS[row], column - ARROW_GAP, ROW_HEIGHTS[row]


def draw_layer(ax: Axes, highlight: tuple[str, ...] = (), cross: bool = False) -> dict[str, Text]:
    """Draw the six boxes and their arrows on ax (an axes of AXES_RECT); return each stage's shape text.

    The shape texts stay empty until set_shapes. cross: cross-attention, whose keys and values are projected from
    x_kv (the projection's formula says so). The axes' units are points, so the layout keeps its text sizes.
    """
    unknown = [s for s in highlight if s not in STAGE_KEYS]
    if unknown:
        raise ValueError(f"highlight: expected stages from {STAGE_KEYS}, got {unknown!r}")
    ax.set_xlim(0, WIDTH_PT)
    ax.set_ylim(0, AXES_HEIGHT)
    ax.set_axis_off()  # a diagram: positions carry no units
    for spine in ax.spines.values():  # an explorer redraws the frames over its moving texts: keep them hidden
        spine.set_visible(False)
    texts = {}
    for i, (key, heading, lessons) in enumerate(STAGES):
        on = key in highlight
        x0, y0, width, height = box_geometry(i)
        top, middle = y0 + height, x0 + width / 2
        ax.add_patch(
            FancyBboxPatch(
                (x0, y0),
                width,
                height,
                boxstyle="round,pad=1.5",
                facecolor=HIGHLIGHT if on else PLAIN,
                edgecolor=EDGE_HIGHLIGHT if on else EDGE_PLAIN,
                linewidth=2.2 if on else 1.0,
            )
        )
        label = heading + (f"\n({lessons})" if lessons else "\n")
        ax.text(middle, top - 4, label, ha="center", va="top", fontsize=10, fontweight="bold" if on else "normal")
        formula = CROSS_PROJECT if key == "project" and cross else FORMULAS[key]
        ax.text(middle, top - HEADING_HEIGHT, formula, ha="center", va="top", fontsize=9, color="#333333")
        shapes_top = top - HEADING_HEIGHT - FORMULA_HEIGHT
        texts[key] = ax.text(x0 + 5, shapes_top, "", ha="left", va="top", fontsize=9, family="monospace")
        if i % COLUMNS:  # from the box on the left, at the height of the shapes
            ax.add_patch(
                FancyArrowPatch(
                    (x0 - ARROW_GAP + 1, shapes_top - 6),
                    (x0 - 1, shapes_top - 6),
                    arrowstyle="-|>",
                    mutation_scale=12,
                    color="#555555",
                )
            )
    # The first row's end leads down to the second row's start: down, across, down.
    last_x0, last_y0, last_width, _ = box_geometry(COLUMNS - 1)
    first_x0, first_y0, first_width, first_height = box_geometry(COLUMNS)
    turn = (last_y0 + first_y0 + first_height) / 2
    bend = Path(
        [
            (last_x0 + last_width / 2, last_y0 - 2),
            (last_x0 + last_width / 2, turn),
            (first_x0 + first_width / 2, turn),
            (first_x0 + first_width / 2, first_y0 + first_height + 2),
        ],
        [Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO],
    )
    ax.add_patch(FancyArrowPatch(path=bend, arrowstyle="-|>", mutation_scale=12, color="#555555"))
    return texts


def new_layer_axes(fig: Figure) -> Axes:
    """The diagram's axes on fig (FIGSIZE): its units are points, with room above for the title."""
    fig.set_layout_engine("none")  # the layout is in points; a layout engine would resize the axes
    return fig.add_axes(AXES_RECT)


def set_shapes(texts: dict[str, Text], shapes: dict[str, dict[str, tuple[int, ...]]]) -> None:
    """Write each stage's arrays and shapes into the texts draw_layer returned."""
    self_attention = "x_kv" not in shapes["input"]
    for key, text in texts.items():
        text.set_text(shape_lines(shapes, key, self_attention))


def title(h: int, d_model: int, n: int, n_kv: int | None = None, lesson: int | None = None) -> str:
    """The diagram's two-line title: the layer (and the lesson highlighted), then the sizes its shapes are for."""
    where = f" (lesson {lesson} highlighted)" if lesson is not None else ""
    if n_kv in (None, n):
        return f"One multi-head attention layer{where}\nshapes for h = {h}, d_model = {d_model}, n = {n}"
    return f"One cross-attention layer{where}\nshapes for h = {h}, d_model = {d_model}, n_q = {n}, n_kv = {n_kv}"


def layer_diagram(
    lesson: int | None = None,
    *,
    h: int = 4,
    d_model: int = 16,
    n: int = 6,
    n_kv: int | None = None,
    highlight: tuple[str, ...] | None = None,
) -> Figure:
    """The whole layer as a Figure, shapes printed for (h, d_model, n[, n_kv]), with lesson's own step highlighted."""
    if highlight is None:
        if lesson is not None and lesson not in LESSON_STAGES:
            raise ValueError(f"lesson: expected a core lesson from {sorted(LESSON_STAGES)}, got {lesson!r}")
        highlight = LESSON_STAGES[lesson] if lesson is not None else ()
    shapes = layer_shapes(h, d_model, n, n_kv)
    fig = Figure(figsize=FIGSIZE)
    FigureCanvasAgg(fig)  # text extents and PNG export without pyplot: no figure piles up in its registry
    ax = new_layer_axes(fig)
    set_shapes(draw_layer(ax, tuple(highlight), cross="x_kv" in shapes["input"]), shapes)
    ax.set_title(title(h, d_model, n, n_kv, lesson), fontsize=10)
    return fig
