"""Lesson 15's head browser: pick a layer and a head of all-MiniLM-L6-v2, type a sentence, see that head's map."""

from __future__ import annotations

import functools
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from .. import head_analysis
from ..demos.real_heads import annotated_texts, arc_hits, gold_piece_arcs
from ..plots.attention import attention_heatmap, weight_colour
from ..plots.real_heads import frame_cells
from ..pretrained import MiniLM, ModelNotInstalledError, load_minilm
from ._base import Explorer, check_start, settle_layout

DEFAULT_TEXT = "The animal didn't cross the street because it was too tired."
MAX_TOKENS_SHOWN = 40  # word pieces, [CLS] and [SEP] included: beyond this the token labels overlap
NO_ARCS = "none"  # the relation control's value that highlights no gold arcs
RELATION_OPTIONS = [("none", NO_ARCS), *((label, rel) for rel, label in head_analysis.RELATION_LABELS.items())]


@functools.lru_cache(maxsize=1)
def default_model() -> MiniLM:
    """The model, loaded once per kernel (about 90 MB of weights)."""
    return load_minilm()


@functools.lru_cache(maxsize=32)
def _attentions(model: MiniLM, text: str) -> tuple[tuple[str, ...], np.ndarray]:
    # Moving the layer or head sliders must not run the model again: only a new text does.
    tokens, weights = model.attentions(text)
    return tuple(tokens), weights


def head_view(text: str = DEFAULT_TEXT, layer: int = 0, head: int = 0, model: MiniLM | None = None) -> dict[str, Any]:
    """One head's attention on one text: tokens, weights (n, n) and that head's scores on this text."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("text: expected a sentence, got an empty text")
    if model is None:
        try:
            model = default_model()
        except ModelNotInstalledError as err:
            raise ValueError(str(err)) from None
    for name, value, top in (("layer", layer, model.n_layers), ("head", head, model.h)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < top:
            raise ValueError(f"{name}: expected an integer in [0, {top}), got {value!r}")
    n = len(model.tokenizer.encode(text).ids)
    if n > MAX_TOKENS_SHOWN:
        raise ValueError(f"text: expected at most {MAX_TOKENS_SHOWN} word pieces so the map stays legible, got {n}")
    tokens, weights = _attentions(model, text)
    w = weights[layer, head]  # (n, n)
    scores = {name: float(f(w).mean()) for name, f in head_analysis.SCORES.items()}
    return {"tokens": list(tokens), "weights": w, "layer": layer, "head": head, "scores": scores}


def describe(data: dict[str, Any]) -> str:
    """One line: where this head's attention goes on this text, on average over its queries."""
    s = data["scores"]
    fractions = ", ".join(f"{name} {s[name]:.0%}" for name in ("previous", "next", "self", "[CLS]", "[SEP]"))
    uniform = np.log(len(data["tokens"]))
    return (
        f"Layer {data['layer']}, head {data['head']} on this text, mean share of a query's weight on each kind of "
        f"key: {fractions}. The kinds overlap ([CLS] is its own 'self'), so they need not add up to 100%; previous "
        f"and next average over the queries that have one. Entropy {s['entropy']:.2f} nats (uniform attention: "
        f"{uniform:.2f})."
    )


def gold_arcs(text: str, relation: str, model: MiniLM | None = None) -> list[tuple[list[int], list[int]]] | None:
    """The relation's gold arcs on text as word-piece blocks (rows: dependent, columns: head), or None.

    None when relation is NO_ARCS or text is not one of the annotated sentences of relations.conllu.
    """
    if relation == NO_ARCS:
        return None
    return gold_piece_arcs(default_model() if model is None else model, text, relation)


def describe_arcs(data: dict[str, Any], model: MiniLM | None = None) -> str:
    """One short line on the gold arcs: how many this head finds, why there are none, or how to show some."""
    relation, count = data["relation"], len(annotated_texts())
    if relation == NO_ARCS:
        return f"Gold arcs: choose a relation to frame its arcs on one of the {count} annotated sentences."
    label = head_analysis.RELATION_LABELS[relation]
    if data["arcs"] is None:
        return f"No gold arcs: this text is not one of the {count} annotated sentences. Try “{annotated_texts()[2]}”"
    if not data["arcs"]:
        return f"This sentence has no {label} arc."
    model = default_model() if model is None else model
    hits, n = arc_hits(model, data["text"], relation, data["weights"])
    plural = "s" if n > 1 else ""
    return (
        f"Red frame{plural}: {n} gold {label} arc{plural} (row: the dependent, columns: its gold head). This "
        f"head's most-attended word hits {hits} of {n}."
    )


class HeadBrowser(Explorer):
    """Controls layer, head, the text and a relation -> that head's (n, n) attention map, gold arcs framed."""

    def __init__(
        self,
        layer: int = 0,
        head: int = 0,
        text: str = DEFAULT_TEXT,
        model: MiniLM | None = None,
        relation: str = NO_ARCS,
    ) -> None:
        if model is not None and not isinstance(model, MiniLM):
            raise ValueError(f"model: expected a MiniLM (load_minilm()) or None, got {type(model).__name__}")
        self.model = model
        self.shown: tuple[tuple[str, ...], bool] | None = None  # (tokens, annotated) now drawn on the axes
        self.arc_frames: list = []  # the gold arcs' frames now drawn, and what they were drawn for
        self.arcs_shown: tuple | None = None
        # The model loads lazily when none is given; its sizes are all-MiniLM-L6-v2's 6 layers of 12 heads.
        n_layers, h = (model.n_layers, model.h) if model is not None else (6, 12)
        check_start("layer", layer, range(n_layers))
        check_start("head", head, range(h))
        check_start("relation", relation, RELATION_OPTIONS)
        if not isinstance(text, str):
            raise ValueError(f"text: expected a string, got {type(text).__name__}")
        slider = {"min": 0, "continuous_update": False}
        controls = {
            "layer": widgets.IntSlider(value=layer, max=n_layers - 1, description="layer", **slider),
            "head": widgets.IntSlider(value=head, max=h - 1, description="head", **slider),
            "text": widgets.Text(value=text, description="text", continuous_update=False),
            "relation": widgets.Dropdown(options=RELATION_OPTIONS, value=relation, description="gold arcs"),
        }
        controls["text"].layout.width = "60%"
        self.text = widgets.HTML()
        # Its own line, at a fixed height whatever it says: choosing a relation must not move the figure.
        self.arcs_text = widgets.HTML(layout=widgets.Layout(min_height="3.2em"))  # two lines
        super().__init__(controls, figsize=(7.3, 6.5), dpi=80)  # 584 CSS px: fits a laptop (588)
        self.add_readout(self.text)
        self.add_readout(self.arcs_text)

    def setup(self, fig: Figure) -> None:
        self.ax = fig.add_subplot()
        self.image_artist = None

    def compute(self, layer: int, head: int, text: str, relation: str = NO_ARCS) -> dict[str, Any]:
        data = head_view(text, layer, head, self.model)
        return data | {"text": text, "relation": relation, "arcs": gold_arcs(text, relation, self.model)}

    def draw(self, data: dict[str, Any]) -> None:
        tokens = tuple(data["tokens"])
        title = f"layer {data['layer']}, head {data['head']}: attention weights (queries on rows)"
        annotate = len(tokens) <= 8
        if self.shown != (tokens, annotate):
            # A new text: new token labels, so a new layout; a layer or head move then keeps it.
            self.figure.clear()
            self.ax = self.figure.add_subplot()
            # Printed weights at 9 pt: 10 CSS pixels at the explorer's 80 dpi.
            self.image_artist = attention_heatmap(self.ax, data["weights"], tokens, tokens, title=title,
                                                  annotate=annotate, value_size=9)  # fmt: skip
            self.shown = (tokens, annotate)
            settle_layout(self.figure)
            # What a layer or head move changes: the colours, the title and any printed weights.
            self.moving = []
            self.animate(self.image_artist, self.ax.title, *self.ax.texts)
            self.invalidate_background()
        self.image_artist.set_data(data["weights"])
        # set_text, not set_title: set_title would reset the position the layout gave the title.
        self.ax.title.set_text(title)
        if annotate:  # the printed weights, row by row as attention_heatmap wrote them
            for label, w in zip(self.ax.texts, data["weights"].flat, strict=True):
                label.set_text(f"{w:.2f}")
                label.set_color(weight_colour(w))
        self.draw_arcs(data)
        self.text.value = describe(data)
        self.arcs_text.value = describe_arcs(data, self.model)

    def draw_arcs(self, data: dict[str, Any]) -> None:
        """Frame the gold arcs over the map; they move with the text and the relation, not with layer or head."""
        key = (self.shown, tuple((tuple(rows), tuple(cols)) for rows, cols in data["arcs"] or []))
        if key == self.arcs_shown:
            return
        for frame in self.arc_frames:
            if frame in self.moving:
                self.moving.remove(frame)
            if frame.axes is not None:  # a new text clears the figure, and with it the old frames
                frame.remove()
        self.arc_frames = [frame_cells(self.ax, rows, cols) for rows, cols in data["arcs"] or []]
        self.animate(*self.arc_frames)  # drawn over the cached background, like the weights
        self.arcs_shown = key

    def background_key(self) -> tuple[tuple[str, ...], bool] | None:
        """The background holds the token labels (the text's word pieces)."""
        return self.shown


def head_browser(
    layer: int = 0, head: int = 0, text: str = DEFAULT_TEXT, model: MiniLM | None = None, relation: str = NO_ARCS
) -> HeadBrowser:
    """The explorer, ready to display (end a notebook cell with it); relation: gold arcs to frame (RELATIONS)."""
    return HeadBrowser(layer, head, text, model, relation)
