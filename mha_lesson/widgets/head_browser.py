"""Lesson 13's head browser: pick a layer and a head of all-MiniLM-L6-v2, type a sentence, see that head's map."""

from __future__ import annotations

import functools
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from .. import headscores
from ..plots.attention import attention_heatmap, weight_colour
from ..pretrained import MiniLM, ModelNotInstalledError, load_minilm
from ._base import Explorer, settle_layout

DEFAULT_TEXT = "The animal didn't cross the street because it was too tired."
MAX_TOKENS_SHOWN = 40  # word pieces, [CLS] and [SEP] included: beyond this the token labels overlap


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
    scores = {name: float(f(w).mean()) for name, f in headscores.SCORES.items()}
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


class HeadBrowser(Explorer):
    """Controls layer, head and the text -> that head's (n, n) attention map with token labels."""

    def __init__(self, layer: int = 0, head: int = 0, text: str = DEFAULT_TEXT, model: MiniLM | None = None) -> None:
        self.model = model
        self.shown: tuple[tuple[str, ...], bool] | None = None  # (tokens, annotated) now drawn on the axes
        # The model loads lazily when none is given; its sizes are all-MiniLM-L6-v2's 6 layers of 12 heads.
        n_layers, h = (model.n_layers, model.h) if model is not None else (6, 12)
        slider = {"min": 0, "continuous_update": False}
        controls = {
            "layer": widgets.IntSlider(value=layer, max=n_layers - 1, description="layer", **slider),
            "head": widgets.IntSlider(value=head, max=h - 1, description="head", **slider),
            "text": widgets.Text(value=text, description="text", continuous_update=False),
        }
        controls["text"].layout.width = "60%"
        self.text = widgets.HTML()
        super().__init__(controls, figsize=(7.5, 6.5), dpi=80)
        self.add_readout(self.text)

    def setup(self, fig: Figure) -> None:
        self.ax = fig.add_subplot()
        self.image_artist = None

    def compute(self, layer: int, head: int, text: str) -> dict[str, Any]:
        return head_view(text, layer, head, self.model)

    def draw(self, data: dict[str, Any]) -> None:
        tokens = tuple(data["tokens"])
        title = f"layer {data['layer']}, head {data['head']}: attention weights (queries on rows)"
        annotate = len(tokens) <= 8
        if self.shown != (tokens, annotate):
            # A new text: new token labels, so a new layout; a layer or head move then keeps it.
            self.figure.clear()
            self.ax = self.figure.add_subplot()
            self.image_artist = attention_heatmap(self.ax, data["weights"], tokens, tokens, title=title,
                                                  annotate=annotate)  # fmt: skip
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
        self.text.value = describe(data)

    def background_key(self) -> tuple[tuple[str, ...], bool] | None:
        """The background holds the token labels (the text's word pieces)."""
        return self.shown


def head_browser(layer: int = 0, head: int = 0, text: str = DEFAULT_TEXT, model: MiniLM | None = None) -> HeadBrowser:
    """The explorer, ready to display (end a notebook cell with it)."""
    return HeadBrowser(layer, head, text, model)
