"""Lesson 4's attention-map explorer: one heatmap per head, for the toy sentence or random inputs."""

from __future__ import annotations

import math
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colorbar import Colorbar
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .._checks import check_heads
from ..attention import causal_mask
from ..demos.toy import HEAD_NAMES, TOKENS, toy_params, toy_weights
from ..multihead import multi_head_attention
from ..plots.attention import heatmap_grid
from ..plots.heads import set_heatmaps
from ..projections import init_params
from ._base import Explorer, check_start, divisors, fixed_margins

SOURCES = ("toy sentence", "random")
D_MODELS = (8, 16, 32, 64, 128, 256)
MAX_N = 256  # a 256 x 256 heatmap is still legible as a picture; larger n would be a grey blur
MAX_HEADS = 16  # more panels than this would be too small to read
RANDOM_ONLY = ("d_model", "h", "n", "seed")  # controls the toy sentence fixes by construction (seed: it has none)
DPI = 80
# 584 x 640 CSS pixels for every h and input: no wider than a laptop's output area (plots.style.LAPTOP_OUTPUT_PX), so
# its text shows at its natural size there, and no move changes the page's height.
FIGSIZE = (7.3, 8.0)
# Inches at DPI: the figure title's two lines; above the first row, the key label and ticks and the panel title
# (rotated words, or numbers with the title above the key label); above every other row, its panels' titles.
TITLE_ROOM = 0.52
FIRST_ROW_ROOM = {True: 0.8, False: 0.78}
ROW_GAP = 0.32
COLUMN_GAP = 0.1
LEFT = {True: 0.72, False: 0.8}  # query labels (words, or numbers of up to three digits) and the axis label
RIGHT = 0.1
BAR_GAP, BAR_HEIGHT = 0.12, 0.13  # the colour bar under the grid
BOTTOM_ROOM = BAR_GAP + BAR_HEIGHT + 0.45  # the bar, its ticks and label
# Colour scales: one 0-1 scale for every panel, or a log scale from each panel's own largest weight down three
# decades. A long sequence spreads a row's weight over many keys (about 1/n each), which the shared scale shows
# as near-black; a linear scale to the panel's max would not help much, since one large weight sets that max.
# On a log scale the colours follow the scores themselves: log w = score - log(sum of exp(scores)).
SCALES = (("0 to 1, shared", "shared"), ("log, per panel", "panel"))
DECADES = 3  # the log scale shows weights from max / 10**DECADES (and anything smaller) up to max


def attention_maps(
    source: str = "random", d_model: int = 64, h: int = 4, n: int = 12, seed: int = 0, causal: bool = False
) -> dict[str, Any]:
    """Per-head attention weights (h, n, n) of self-attention on the toy sentence or on random inputs.

    Toy: toy_params() on the toy sentence (d_model, h, n and seed are fixed by the construction).
    Random: x ~ N(0, 1) of shape (n, d_model) and Glorot-uniform weights, both from seed.
    Returns weights, tokens (None for random inputs), titles, and the sizes actually used.
    """
    if source not in SOURCES:
        raise ValueError(f"source: expected one of {SOURCES}, got {source!r}")
    if source == "toy sentence":
        weights = toy_weights(causal=causal)
        p = toy_params()
        titles = [f"head {i}: {name}" for i, name in enumerate(HEAD_NAMES)]
        return {
            "weights": weights,
            "tokens": TOKENS,
            "titles": titles,
            "source": source,
            "d_model": p.d_model,
            "h": p.h,
            "d_k": p.d_k,
            "n": len(TOKENS),
            "causal": causal,
        }
    d_k = check_heads(d_model, h)
    if h > MAX_HEADS:
        raise ValueError(f"h: expected at most {MAX_HEADS} heads (panels), got {h}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= MAX_N:
        raise ValueError(f"n: expected 1 to {MAX_N} tokens, got {n!r}")
    x = np.random.default_rng(seed).standard_normal((n, d_model))  # (n, d_model)
    params = init_params(d_model, h, seed=seed)
    _, weights = multi_head_attention(x, x, x, params, causal_mask(n) if causal else None)
    return {
        "weights": weights,
        "tokens": None,
        "titles": [f"head {i}" for i in range(h)],
        "source": source,
        "d_model": d_model,
        "h": h,
        "d_k": d_k,
        "n": n,
        "causal": causal,
    }


def toy_sizes() -> dict[str, int | None]:
    """The values of the RANDOM_ONLY controls that the toy sentence uses (seed: none, it is built by hand)."""
    p = toy_params()
    return {"d_model": p.d_model, "h": p.h, "n": len(TOKENS), "seed": None}


def shown_maps(data: dict[str, Any], scale: str = "shared") -> tuple[np.ndarray, list[str]]:
    """What the panels show (h, n, n), in [0, 1], and their titles: the weights themselves (scale "shared"), or
    (scale "panel") log10(weight / the panel's largest weight) from -DECADES (0) to 0 (1)."""
    weights, titles = data["weights"], list(data["titles"])
    if scale == "shared":
        return weights, titles
    if scale != "panel":
        raise ValueError(f"scale: expected 'shared' or 'panel', got {scale!r}")
    peaks = weights.max(axis=(-2, -1))  # (h,)
    with np.errstate(divide="ignore"):  # a zero weight (masked key) is -inf decades down: clipped to the bottom
        decades = np.log10(weights / np.where(peaks > 0, peaks, 1.0)[:, None, None])  # (h, n, n) / (h, 1, 1)
    shown = (np.clip(decades, -DECADES, 0.0) + DECADES) / DECADES
    return shown, titles


def describe(data: dict[str, Any]) -> str:
    """One line saying what the maps show."""
    w = data["weights"]
    peak = float(w.max(axis=-1).mean())
    where = (
        "the toy sentence with the hand-made heads of mha_lesson.demos.toy"
        if data["source"] == "toy sentence"
        else "random x ~ N(0, 1) with Glorot-uniform W^Q, W^K (untrained)"
    )
    mask = "causal mask on (a query sees only keys at or before it)" if data["causal"] else "no mask"
    scale = ""
    if data.get("scale") == "panel":
        peaks = ", ".join(f"{p:.2g}" for p in w.max(axis=(-2, -1)))
        scale = (
            " Colours: a log scale per panel, from its largest weight down to a thousandth of it, so spread-out rows"
            f" stay visible. Largest weight of each panel: {peaks}."
        )
    return (
        f"{where}: d_model = {data['d_model']}, h = {data['h']}, d_k = {data['d_k']}, n = {data['n']}; {mask}. "
        f"Mean largest weight per row: {peak:.3g} (uniform would be 1/n = {1 / data['n']:.3g}).{scale}"
    )


class AttentionMapExplorer(Explorer):
    """Controls source, d_model, h, n, seed, causal, colour scale -> a grid of per-head heatmaps (queries on rows)."""

    backgrounds_kept = 8  # one per recently shown grid (h and labelling) and title (input, mask and scale)
    # A new h builds a new grid (about 0.3 s for 16 heads, the slowest move): every h of the starting d_model
    # (at most five) is built ahead.
    warm_controls = ("h",)
    warm_reach = 4

    def __init__(
        self,
        source: str = "random",
        d_model: int = 64,
        h: int = 4,
        n: int = 12,
        seed: int = 0,
        causal: bool = False,
        scale: str = "shared",
    ) -> None:
        for name, value, options in (
            ("source", source, SOURCES),
            ("d_model", d_model, D_MODELS),
            ("n", n, range(1, MAX_N + 1)),
            ("seed", seed, range(21)),
            ("causal", causal, (False, True)),
            ("scale", scale, SCALES),
        ):
            check_start(name, value, options)
        check_start("h", h, divisors(d_model, MAX_HEADS))
        controls = {
            "source": widgets.ToggleButtons(options=SOURCES, value=source, description="input"),
            "d_model": widgets.SelectionSlider(options=D_MODELS, value=d_model, description="d_model"),
            "h": widgets.SelectionSlider(options=divisors(d_model, MAX_HEADS), value=h, description="h"),
            "n": widgets.IntSlider(value=n, min=1, max=MAX_N, description="n (tokens)", continuous_update=False),
            "seed": widgets.IntSlider(value=seed, min=0, max=20, description="seed", continuous_update=False),
            "causal": widgets.Checkbox(value=causal, description="causal mask"),
            "scale": widgets.ToggleButtons(options=SCALES, value=scale, description="colours"),
        }
        controls["scale"].style.button_width = "11em"
        self.text = widgets.HTML()
        self.layout_key: tuple | None = None
        self.grids: dict[tuple, dict[str, Any]] = {}  # one figure per (h, labelled), built on first use
        super().__init__(controls, figsize=FIGSIZE, dpi=DPI)
        self.add_readout(self.text)
        self.keep_heads_valid(most=MAX_HEADS)
        self.before_redraw(self.enable_controls, "source")  # the sliders change with the picture, not after it
        self.enable_controls()

    def enable_controls(self, change: dict | None = None) -> None:
        """Pin the sliders the toy sentence fixes at its sizes (and hide seed: it has none); unpin them for random
        input, with the learner's values."""
        if self.controls["source"].value == "toy sentence":
            self.pin("fixed by the toy sentence", **toy_sizes())
        else:
            self.unpin(*RANDOM_ONLY)  # d_model before h: h's options follow d_model

    def setup(self, fig: Figure) -> None:
        """Axes are made in draw: their number depends on h."""

    def compute(self, source: str, d_model: int, h: int, n: int, seed: int, causal: bool, scale: str) -> dict[str, Any]:
        """attention_maps at the controls' values, with what the panels show on the chosen colour scale."""
        data = attention_maps(source, d_model, h, n, seed, causal)
        data["scale"] = scale
        data["shown"], data["shown_titles"] = shown_maps(data, scale)
        return data

    def draw(self, data: dict[str, Any]) -> None:
        """Switch to the grid for this h and labelling (built on first use), then update it in place."""
        key = (data["h"], data["tokens"] is None)
        if key != self.layout_key:
            if key not in self.grids:
                self.grids[key] = self.build(data)
            # Each grid keeps its own figure, so going back to an earlier h or input costs no rebuild.
            grid = self.grids[key]
            self.figure, self.canvas, self.images = grid["figure"], grid["canvas"], grid["images"]
            self.moving = []  # the previous grid's artists
            self.animate(*grid["animated"])
            self.layout_key = key
        set_heatmaps(self.images, data["shown"], data["shown_titles"])
        grid = self.grids[key]
        grid["suptitle"].set_text(self.heading(data))
        set_colour_scale(grid["colorbar"], data["scale"])
        self.text.value = describe(data)

    def build(self, data: dict[str, Any]) -> dict[str, Any]:
        """A new FIGSIZE figure with a grid of h square heatmaps (see grid_geometry) and the colour bar under them."""
        h, labelled = data["h"], data["tokens"] is not None
        fig = self.new_figure(FIGSIZE)
        canvas = fig.canvas
        geometry = grid_geometry(h, labelled)
        ncols = geometry.pop("ncols")
        fixed_margins(fig, **geometry)
        images = heatmap_grid(
            fig, data["shown"], data["tokens"], titles=data["shown_titles"], ncols=ncols, colorbar=False
        )
        # Under the grid, as wide as it (a bar of at most 4 inches), its ticks and label below it.
        width, height = FIGSIZE
        grid_width = width - geometry["left"] - geometry["right"]
        bar_width = min(grid_width, 4.0)
        bar_left = geometry["left"] + (grid_width - bar_width) / 2
        bar_bottom = geometry["bottom"] - BAR_GAP - BAR_HEIGHT
        bar = fig.add_axes((bar_left / width, bar_bottom / height, bar_width / width, BAR_HEIGHT / height))
        colorbar = fig.colorbar(images[0], cax=bar, orientation="horizontal")
        suptitle = fig.suptitle("", y=1 - 0.08 / height, va="top")
        # The title and the colour bar's label follow the input, mask and scale: drawn into a background per
        # heading over the grid's common one, not by a full draw.
        self.follow_key(suptitle, colorbar.ax.xaxis)
        animated = [*images]  # what changes on a move: draw animates them when it shows this grid
        for i, im in enumerate(images):
            animated.extend(im.axes.spines.values())  # the heatmap covers its frame: draw the frame again
            row, col = divmod(i, ncols)
            if labelled:
                if row:  # the same keys in every column: named once, on top of the grid
                    im.axes.tick_params(labeltop=False)
                    im.axes.set_xlabel("")
                continue
            # Random input has positions, not words: keys numbered on the first panel only, queries on the first
            # panel of each row. Every panel has the same queries and keys, and the numbers move with n, so they
            # are drawn with each move (animated) on those panels, and the other panels carry no ticks at all:
            # one background serves every n.
            if col or row:
                im.axes.tick_params(top=False, labeltop=False)
                im.axes.set_xlabel("")
            if col:
                im.axes.tick_params(left=False)
                continue
            # min_n_ticks=1: with n = 1 the only position, 0, is the one tick (not -0.4 ... 0.4)
            im.axes.yaxis.set_major_locator(MaxNLocator(nbins=5, integer=True, min_n_ticks=1))
            animated.append(im.axes.yaxis)
            if row:
                im.axes.set_ylabel("")
                continue
            # fewer numbers on narrower panels (3 and 4 columns): three-digit positions need room between them
            nbins = {3: 4, 4: 3}.get(ncols, 5)
            im.axes.xaxis.set_major_locator(MaxNLocator(nbins=nbins, integer=True, min_n_ticks=1))
            animated.append(im.axes.xaxis)
            still_axis_labels(im.axes)
        return {
            "figure": fig,
            "canvas": canvas,
            "images": images,
            "suptitle": suptitle,
            "colorbar": colorbar,
            "animated": animated,
        }

    def background_key(self) -> str:
        """The figure title (it follows the input and the mask); the base tells grids apart.

        Random input's tick numbers move with n but are animated, so one background serves every n.
        """
        return self.heading(self.data)

    @staticmethod
    def heading(data: dict[str, Any]) -> str:
        """Figure title, on two lines (the figure is a laptop's output area wide)."""
        mask = ", causal" if data["causal"] else ""
        scale = "" if data["scale"] == "shared" else "; colours: log scale per panel"
        return f"attention weights per head ({data['source']}{mask})\nrows = queries, columns = keys{scale}"


def grid_geometry(h: int, labelled: bool) -> dict[str, float]:
    """Columns and margins (as fixed_margins takes them) of h square panels in a FIGSIZE figure: ceil(sqrt(h))
    columns (1, 2, 4, 8, 16 heads: 1 x 1, 1 x 2, 2 x 2, 3 x 3 less one, 4 x 4), as large as the width and height
    allow, centred across the width, top-aligned (the colour bar goes under the grid)."""
    ncols = math.ceil(math.sqrt(h))
    rows = math.ceil(h / ncols)
    width, height = FIGSIZE
    top = TITLE_ROOM + FIRST_ROW_ROOM[labelled]
    across = width - LEFT[labelled] - RIGHT - COLUMN_GAP * (ncols - 1)
    down = height - top - BOTTOM_ROOM - ROW_GAP * (rows - 1)
    panel = min(across / ncols, down / rows)  # inches per heatmap
    grid_width = panel * ncols + COLUMN_GAP * (ncols - 1)
    left = LEFT[labelled] + (across + COLUMN_GAP * (ncols - 1) - grid_width) / 2
    bottom = height - top - panel * rows - ROW_GAP * (rows - 1)
    return {
        "ncols": ncols,
        "left": left,
        "right": width - left - grid_width,
        "top": top,
        "bottom": bottom,
        "wspace": COLUMN_GAP / panel,
        "hspace": ROW_GAP / panel,
    }


def set_colour_scale(colorbar: Colorbar, scale: str) -> None:
    """Ticks and label of the shared colour bar for the scale the panels show (see shown_maps)."""
    if scale == "shared":
        ticks, labels = np.linspace(0, 1, 6), [f"{t:.1f}" for t in np.linspace(0, 1, 6)]
        colorbar.set_label("weight (row sums to 1)")
    else:
        ticks = np.linspace(0, 1, DECADES + 1)  # one tick per decade
        labels = [f"{10.0**-d:g}" for d in range(DECADES, -1, -1)]
        labels[0] = f"≤{labels[0]}"
        colorbar.set_label("weight ÷ panel max, log scale")
    colorbar.set_ticks(ticks, labels=labels)


def still_axis_labels(ax: Axes) -> None:
    """Move the axis labels out of the axes' tick drawing into fixed texts, so animated ticks redraw without them.

    Placed where the axis would put them: past the ticks and numbers of at most three digits (n <= MAX_N).
    """
    kw = {"xycoords": "axes fraction", "textcoords": "offset points", "fontsize": "medium"}
    ax.annotate(ax.get_xlabel(), (0.5, 1), xytext=(0, 21), ha="center", va="bottom", **kw)
    ax.annotate(ax.get_ylabel(), (0, 0.5), xytext=(-30, 0), ha="right", va="center", rotation=90, **kw)
    ax.set_xlabel("")
    ax.set_ylabel("")
    # above the key label (its offset plus one line), at the size the grid gave it
    ax.set_title(ax.get_title(), y=1, pad=36, fontsize=ax.title.get_fontsize())


def attention_map_explorer(**values: Any) -> AttentionMapExplorer:
    """The attention-map explorer of lesson 4 (keyword arguments set the starting values)."""
    return AttentionMapExplorer(**values)
