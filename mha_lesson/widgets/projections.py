"""Lesson 3's head-subspace explorer: pick a head and see where its projections put the tokens."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib import patheffects
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..embeddings import EXAMPLE_TOKENS, random_token_embeddings
from ..multihead import multi_head_attention_loop
from ..plots.attention import attention_heatmap
from ..plots.projections import set_token_plane, token_colours, token_plane
from ..projections import MHAParams, init_params
from ._base import Explorer, check_start, divisors, pin_axis_labels, set_options, settle_layout

D_MODEL = 16
# A 2-D picture of a head's space needs d_k >= 2, so h stops at d_model / 2.
HEADS = tuple(h for h in divisors(D_MODEL) if D_MODEL // h >= 2)
# Standard deviation of the embeddings: large enough that random heads attend visibly (see random_token_embeddings).
EMBEDDING_SCALE = 2.0
VIEWS = (("best 2-D plane", "pca"), ("coordinates 0 and 1", "coords"))


def tied_heads(params: MHAParams) -> MHAParams:
    """A copy in which every head uses head 0's W^Q, W^K, W^V (and biases); W^O is unchanged."""
    h = params.h
    # (d_model, d_k) -> (d_model, h*d_k): h copies side by side, so head i's columns equal head 0's.
    w_q = np.tile(params.w_q_head(0), (1, h))
    w_k = np.tile(params.w_k_head(0), (1, h))
    w_v = np.tile(params.w_v_head(0), (1, h))
    # Biases the same way, (d_k,) -> (h*d_k,), when there are any.
    biases = {b: np.tile(params.b_head(b, 0), h) for b in ("b_q", "b_k", "b_v") if getattr(params, b) is not None}
    return dataclasses.replace(params, w_q=w_q, w_k=w_k, w_v=w_v, **biases)


def plane(q: np.ndarray, k: np.ndarray, view: str = "pca") -> tuple[np.ndarray, np.ndarray, float]:
    """Queries q (n, d_k) and keys k (n, d_k) as 2-D points (n, 2) each, and the share of squared length kept.

    view "coords": the head's first two coordinates. view "pca": the plane through the origin that keeps
    most of the squared length of all 2n vectors (top two right singular vectors, not centred, so that
    dot products in the plane approximate the head's scores q . k).
    """
    if view not in ("pca", "coords"):
        raise ValueError(f"view: expected 'pca' or 'coords', got {view!r}")
    if q.ndim != 2 or k.ndim != 2 or q.shape[1] != k.shape[1] or q.shape[1] < 2:
        raise ValueError(f"q, k: expected (n, d_k) arrays with the same d_k >= 2, got {q.shape} and {k.shape}")
    both = np.vstack([q, k])  # (2n, d_k)
    if view == "coords":
        basis = np.eye(q.shape[1])[:, :2]  # (d_k, 2)
    else:
        _, _, vt = np.linalg.svd(both, full_matrices=False)
        basis = vt[:2].T  # (d_k, 2)
        # An SVD direction is defined up to sign; fix it so the same input always gives the same picture.
        basis *= np.sign(basis[np.abs(basis).argmax(axis=0), [0, 1]])
    kept = float(((both @ basis) ** 2).sum() / ((both**2).sum() or 1.0))  # all-zero vectors: nothing to keep
    return q @ basis, k @ basis, kept


def projection_view(
    h: int = 4,
    head: int = 0,
    view: str = "pca",
    shared: bool = False,
    seed: int = 0,
    *,
    tokens: Sequence[str] = EXAMPLE_TOKENS,
    d_model: int = D_MODEL,
) -> dict[str, Any]:
    """Self-attention over lesson 3's embeddings of tokens, with init_params(d_model, h, seed=seed).

    Returns tokens, d_k, columns (head's slice of W^Q), q and k (n, d_k), q2 and k2 (n, 2) from plane(),
    kept (share of squared length in the plane), weights (n, n) of the head and all_weights (h, n, n).
    shared=True gives every head head 0's projections (tied_heads).
    """
    params = init_params(d_model, h, seed=seed)  # ValueError naming h unless it divides d_model
    if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not 0 <= head < h:
        raise ValueError(f"head: expected an index in [0, {h}), got {head!r}")
    if shared:
        params = tied_heads(params)
    # (n, d_model), fixed: the seed control moves the weights only.
    x = random_token_embeddings(tokens, d_model, seed=0, scale=EMBEDDING_SCALE)
    _, weights, trace = multi_head_attention_loop(x, x, x, params, return_trace=True)
    q, k = trace["Q_i"][head], trace["K_i"][head]  # (n, d_k) each
    q2, k2, kept = plane(q, k, view)
    d_k = params.d_k
    return {
        "tokens": tuple(tokens),
        "h": h,
        "head": head,
        "view": view,
        "shared": shared,
        "d_k": d_k,
        "columns": (head * d_k, (head + 1) * d_k),
        "q": q,
        "k": k,
        "q2": q2,
        "k2": k2,
        "kept": kept,
        "weights": weights[head],
        "all_weights": weights,
    }


class ProjectionExplorer(Explorer):
    """Controls h, head, view, shared, seed, query -> one head's queries and keys in 2-D, beside its attention map;
    each token has one colour in both, and the chosen query is ringed in the plane and outlined in the map."""

    backgrounds_kept = 8  # (view, plane size) pairs: nice_limit keeps them few
    # Sharp on HiDPI: a move draws 16 points with their labels, a few lines and one 8 x 8 map over a cached background.
    pixel_ratio = 2

    def __init__(self, h: int = 4, head: int = 0, seed: int = 0, query: int = 0) -> None:
        check_start("h", h, HEADS)
        check_start("head", head, range(h))
        check_start("seed", seed, range(10))
        check_start("query", query, range(len(EXAMPLE_TOKENS)))
        controls = {
            "h": widgets.SelectionSlider(options=HEADS, value=h, description="h"),
            "head": widgets.SelectionSlider(options=tuple(range(h)), value=head, description="head i"),
            "view": widgets.ToggleButtons(options=VIEWS, value="pca", description="view"),
            "shared": widgets.Checkbox(value=False, description="same W for every head"),
            "seed": widgets.IntSlider(value=seed, min=0, max=9, description="weights seed"),
            "query": widgets.SelectionSlider(
                options=[(t, j) for j, t in enumerate(EXAMPLE_TOKENS)], value=query, description="query"
            ),
        }
        self.text = widgets.HTML()
        # 880 x 440 CSS pixels: the plane about 300 pixels square, text at 9 points 10 pixels tall.
        super().__init__(controls, figsize=(11, 5.5), dpi=80)
        self._keep_head_valid()
        self.add_readout(self.text)

    def _keep_head_valid(self) -> None:
        """Make the head control offer 0..h-1 whenever h moves (keeping the learner's head when it still exists)."""

        def update_options(change: dict) -> None:
            current = self.controls["head"].value
            with self.hold():
                set_options(self.controls["head"], tuple(range(change["new"])), min(current, change["new"] - 1))

        self.before_redraw(update_options, "h")  # fix the head first, then redraw once

    def setup(self, fig: Figure) -> None:
        """Left: the token plane; right: the head's attention map."""
        self.ax_plane, self.ax_map = fig.subplots(1, 2, width_ratios=(1, 1.15))
        n = len(EXAMPLE_TOKENS)
        self.colours = token_colours(n)
        self.plane = token_plane(self.ax_plane, EXAMPLE_TOKENS, self.colours)
        self.im = attention_heatmap(self.ax_map, np.zeros((n, n)), EXAMPLE_TOKENS, EXAMPLE_TOKENS, annotate=False)
        # Each token's row and column of the map are labelled in its colour, the colour of its points in the plane.
        for labels in (self.ax_map.get_yticklabels(), self.ax_map.get_xticklabels()):
            for label, colour in zip(labels, self.colours, strict=True):
                label.set_color(colour)
        # The chosen query's row: a white frame with a black rim shows on viridis' dark and light ends alike.
        self.row_outline = self.ax_map.add_patch(
            Rectangle((-0.5, -0.5), n, 1, fill=False, edgecolor="w", linewidth=2, zorder=2, clip_on=False)
        )
        self.row_outline.set_path_effects([patheffects.Stroke(linewidth=4, foreground="k"), patheffects.Normal()])
        # What a move changes: the points, their labels, the chosen query's lines, the map, its outline and the
        # titles. The frames, ticks, axis labels and legend are painted once per view and plane size
        # (background_key) and reused. Text is drawn glyph by glyph, so what changes is kept short.
        self.ax_plane.set_title("queries and keys in one head's space", fontsize=10, pad=16)
        self.plane_info = self.ax_plane.text(
            0.5, 1.02, "", transform=self.ax_plane.transAxes, ha="center", va="bottom", fontsize=9
        )
        self.ax_map.title.set_fontsize(10)
        self.animate(*self.plane.artists(), self.plane_info, self.im, self.row_outline, self.ax_map.title)
        # Lay out once, before the first draw places any label: place_labels works in screen units, so it must
        # see the panels where they stay. The longest axis labels reserve their room.
        self.ax_plane.set_xlabel("coordinate 0 of the head's space (its first column)")
        self.ax_plane.set_ylabel("coordinate 1 (its second column)")
        settle_layout(fig)
        pin_axis_labels(self.ax_plane)
        # The plane's ticks follow its size and its axis labels the view: a background per (view, size), drawn
        # over the common one (a full draw on each new size was the slowest move).
        self.follow_key(self.ax_plane.xaxis, self.ax_plane.yaxis)

    def compute(self, h: int, head: int, view: str, shared: bool, seed: int, query: int) -> dict[str, Any]:
        return projection_view(h, head, view, shared, seed) | {"query": query}

    def draw(self, data: dict[str, Any]) -> None:
        i, d_k, q = data["head"], data["d_k"], data["query"]
        set_token_plane(self.ax_plane, self.plane, data["q2"], data["k2"], q, data["weights"][q])
        self.row_outline.set_y(q - 0.5)
        if data["view"] == "pca":
            self.ax_plane.set_xlabel("direction 1 of the best plane in the head's space")
            self.ax_plane.set_ylabel("direction 2")
        else:
            self.ax_plane.set_xlabel("coordinate 0 of the head's space (its first column)")
            self.ax_plane.set_ylabel("coordinate 1 (its second column)")
        kept = "all of it" if d_k == 2 else f"{data['kept']:.0%} of length²"
        self.plane_info.set_text(f"head {i}, d_k = {d_k}: the plane shows {kept}")
        self.im.set_data(data["weights"])
        # set_text, not set_title: set_title would reset the position the first full draw gave the title.
        self.ax_map.title.set_text(f"head {i} of {data['h']}: attention weights, query “{data['tokens'][q]}” framed")
        self.text.value = self.summary(data)

    def background_key(self) -> tuple[str, float]:
        """The background holds the plane's axis labels (they follow the view) and its ticks (they follow the size)."""
        return self.data["view"], self.ax_plane.get_xlim()[1]

    @staticmethod
    def summary(data: dict[str, Any]) -> str:
        """One HTML paragraph: the head's columns and shapes, what a score is, how exact the picture is, and what
        the highlight shows."""
        i, d_k, h, q = data["head"], data["d_k"], data["h"], data["query"]
        a, b = data["columns"]
        exact = (
            "With d_k = 2 the plane is the head's whole space: its dot products are exact."
            if d_k == 2
            else f"The plane keeps {data['kept']:.0%} of the squared length: its dot products are approximate."
        )
        if not data["shared"]:
            same = ""
        elif h == 1:
            same = " With a single head there is no other head to share W with: this box changes nothing."
        else:
            same = f" All {h} heads share head 0's W, so every head shows this picture."
        return (
            f"Head {i} owns columns {a}:{b} of W<sup>Q</sup>, W<sup>K</sup>, W<sup>V</sup>, so Q<sub>{i}</sub>, "
            f"K<sub>{i}</sub>, V<sub>{i}</sub> are ({len(data['tokens'])}, {d_k}). A score is a dot product q · k: a "
            f"query gives most weight to keys that point its way. {exact}{same} Each token has one colour in both "
            f"panels. The framed row of the map is the query “{data['tokens'][q]}”: in the plane its circle is "
            "ringed, with a line to each key as thick as that key's weight."
        )


def projection_explorer(h: int = 4, head: int = 0, seed: int = 0, query: int = 0) -> ProjectionExplorer:
    """The lesson 3 explorer: 8 tokens, d_model = 16, h = 4 heads of d_k = 4 by default; query picks the token
    whose query is highlighted."""
    return ProjectionExplorer(h, head, seed, query)
