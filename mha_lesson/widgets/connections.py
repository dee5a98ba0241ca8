"""Explorers of lessons 7 and 12: cross-attention shapes (lesson 7), and a head that attends by position (lesson 12).

attention_shapes is the cross-attention explorer's pure compute (tests call it); the position head's numbers
come from the core module mha_lesson.demos.connections. The explorers only draw their results.
"""

from __future__ import annotations

import re
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from .._checks import check_number
from ..attention import causal_mask
from ..demos.connections import ENCODINGS, X_DMODEL, X_H, position_head
from ..demos.toy import TOKENS
from ..multihead import multi_head_attention
from ..plots.attention import attention_heatmap
from ..projections import init_params
from ._base import Explorer, check_start, fixed_readout, pin_axis_labels, settle_layout

# --- cross-attention: how the shapes follow n_q and n_kv ----------------------------------------------------

MAX_LEN = 16  # longest sequence the explorer offers: its heatmaps keep readable labels
MODES = ("cross-attention", "self-attention")
# 584 x 336 CSS px: as wide as a laptop's output area beside the file browser (588 px), so nothing scales its text.
FIGSIZE = (7.3, 4.2)


def attention_shapes(
    n_q: int = 4, n_kv: int = 6, mode: str = "cross-attention", causal: bool = False, seed: int = 0
) -> dict[str, Any]:
    """Random decoder (n_q rows) and encoder (n_kv rows) sequences through a random 2-head layer (d_model 16).

    Self-attention takes queries, keys and values from the decoder sequence (n_kv is then n_q). The first
    rows are the same for every length, so growing a sequence adds rows without changing the others.
    Returns weights (h, n_q, n_kv), the shapes of every array (name -> tuple), labels and a description.
    """
    if mode not in MODES:
        raise ValueError(f"mode: expected one of {MODES}, got {mode!r}")
    for name, n in (("n_q", n_q), ("n_kv", n_kv)):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= MAX_LEN:
            raise ValueError(f"{name}: expected an integer from 1 to {MAX_LEN}, got {n!r}")
    if causal and mode != "self-attention":
        raise ValueError(
            "causal: a causal mask orders the positions of one sequence, so it applies to self-attention; "
            "switch mode to self-attention"
        )
    rng = np.random.default_rng(seed)
    decoder, encoder = rng.normal(size=(2, MAX_LEN, X_DMODEL))  # each (MAX_LEN, d_model)
    params = init_params(X_DMODEL, X_H, seed=seed)
    y = decoder[:n_q]
    x = y if mode == "self-attention" else encoder[:n_kv]
    mask = causal_mask(n_q) if causal else None
    out, weights = multi_head_attention(y, x, x, params, mask)
    n_kv, d_k = len(x), params.d_k
    q_labels = [f"y{i}" for i in range(n_q)]
    k_labels = q_labels if mode == "self-attention" else [f"x{j}" for j in range(n_kv)]
    if mode == "self-attention":  # one sequence y: it asks, and it answers
        shapes = {
            "queries, keys and values y": y.shape,
            "Q_i = y W_i^Q, K_i = y W_i^K, V_i = y W_i^V": (n_q, d_k),
            "weights": weights.shape,
            "output": out.shape,
        }
    else:
        shapes = {
            "queries (decoder) y": y.shape,
            "keys and values x": x.shape,
            "Q_i = y W_i^Q": (n_q, d_k),
            "K_i = x W_i^K, V_i = x W_i^V": (n_kv, d_k),
            "weights": weights.shape,
            "output": out.shape,
        }
    return {
        "weights": weights,
        "output": out,
        "shapes": shapes,
        "q_labels": q_labels,
        "k_labels": k_labels,
        "mode": mode,
        "causal": causal,
    }


CAUSAL_IN_CROSS = "causal mask not applied: it orders one sequence's positions (self-attention)"
READOUT_LINES = 4  # describe_shapes' lines in every state; the readout is that tall, so no move makes the page jump


def _math(name: str) -> str:
    """A shape's name as HTML: W_i^Q -> W<sub>i</sub><sup>Q</sup> (no raw underscores or carets on the page)."""
    return re.sub(r"\^(\w)", r"<sup>\1</sup>", re.sub(r"_(\w)", r"<sub>\1</sub>", name))


def describe_shapes(data: dict[str, Any], note: str = "") -> str:
    """Four HTML lines, each short enough not to wrap beside a laptop's file browser (about 560 CSS px): the mode
    and its input sequences, the projections, the results, then the mode's rule (or, in its place, a warning).

    Written as a browser writes HTML back (double quotes, the warning sign itself rather than &#9888;): the site
    replays a readout through innerHTML and checks that it reads what was recorded.
    """
    parts = [f"{_math(name)}: {shape}" for name, shape in data["shapes"].items()]
    inputs = 1 if data["mode"] == "self-attention" else 2  # one sequence y, or y and x
    if note:
        rule = f'<span style="color:#b00020">\u26a0 {note}</span>'
    elif data["mode"] == "self-attention":
        rule = "one sequence: n_kv = n_q, and the map is square"
    else:
        rule = "one output row per <b>query</b>; keys and values may have any other length"
    dot = " &nbsp;·&nbsp; "
    head = f"{data['mode']}{' (causal)' if data['causal'] else ''}: {dot.join(parts[:inputs])}"
    return "<br>".join((head, dot.join(parts[inputs:-2]), dot.join(parts[-2:]), rule))


class CrossAttentionExplorer(Explorer):
    """Sliders n_q and n_kv, a self/cross switch and a causal toggle -> each head's (n_q, n_kv) weights."""

    # One background per (mode, n_q, n_kv): the axes' limits and key labels follow them. A new pair paints its
    # background once; the last few are kept for a learner who moves back and forth.
    backgrounds_kept = 8

    def __init__(self, n_q: int = 4, n_kv: int = 6, mode: str = "cross-attention", causal: bool = False) -> None:
        for name, value, options in (
            ("n_q", n_q, range(1, MAX_LEN + 1)),
            ("n_kv", n_kv, range(1, MAX_LEN + 1)),
            ("mode", mode, MODES),
            ("causal", causal, (False, True)),
        ):
            check_start(name, value, options)
        controls = {
            "mode": widgets.ToggleButtons(options=MODES, value=mode, description="mode"),
            "n_q": widgets.IntSlider(
                value=n_q, min=1, max=MAX_LEN, description="n_q (queries)", continuous_update=False
            ),
            "n_kv": widgets.IntSlider(
                value=n_kv, min=1, max=MAX_LEN, description="n_kv (keys)", continuous_update=False
            ),
            "causal": widgets.Checkbox(value=causal, description="causal mask"),
        }
        # READOUT_LINES lines in every state (the shapes, then the rule or a warning), and room for them.
        self.text = fixed_readout(READOUT_LINES)
        super().__init__(controls, figsize=FIGSIZE, dpi=80)
        self.add_readout(self.text)
        # Self-attention has one sequence: n_kv follows n_q there, on a greyed-out slider. The learner's own
        # n_kv comes back with cross-attention.
        self.cross_n_kv = n_kv
        self.before_redraw(self._sync_kv, "mode", "n_q")
        self._sync_kv()

    def _sync_kv(self, change: dict | None = None) -> None:
        """Grey out n_kv and show n_q on it in self-attention; give back the learner's n_kv in cross-attention."""
        kv, self_mode = self.controls["n_kv"], self.controls["mode"].value == "self-attention"
        with self.hold():
            if self_mode and not kv.disabled:
                self.cross_n_kv = kv.value
            if self_mode:
                kv.value = self.controls["n_q"].value
            elif kv.disabled:
                kv.value = self.cross_n_kv
        kv.disabled = self_mode

    def setup(self, fig: Figure) -> None:
        """One heatmap per head; its axes show exactly n_q query rows and n_kv key columns."""
        axes = fig.subplots(1, X_H, sharey=True)
        self.suptitle = fig.suptitle(self.heading(MODES[0]), fontsize="large")
        labels = [f"y{i}" for i in range(MAX_LEN)]
        # Laid out once for the largest grid; a length change then only moves the axes' limits (ticks beyond
        # them are not drawn), so the panels keep their place on the page.
        self.images = [
            attention_heatmap(
                ax,
                np.zeros((MAX_LEN, MAX_LEN)),
                labels,
                labels,
                title=f"head {i}: ({MAX_LEN} × {MAX_LEN}) weights",
                annotate=False,
                colorbar=False,
            )
            for i, ax in enumerate(axes)
        ]
        # Side by side, the heads share their query rows: one y label, and one colour bar for both panels.
        axes[0].set_ylabel("query (decoder position)")
        for ax in axes[1:]:
            ax.set_ylabel("")
            ax.tick_params(labelleft=False)
        fig.colorbar(self.images[-1], ax=axes, label="weight (row sums to 1)", shrink=0.8)
        settle_layout(fig)
        pin_axis_labels(*axes)
        self.labelled_mode: str | None = None  # the mode whose key labels the axes now show
        # The weights and titles move; the axes (limits, labels) are the background of each (mode, n_q, n_kv).
        self.animate(*self.images, *(im.axes.title for im in self.images))

    @staticmethod
    def heading(mode: str) -> str:
        """Figure title: two random sequences for cross-attention, one for self-attention."""
        what = "two random sequences (decoder y, encoder x)" if mode == "cross-attention" else "one random sequence y"
        return f"{what}, a random {X_H}-head layer (d_model = {X_DMODEL})"

    def compute(self, mode: str, n_q: int, n_kv: int, causal: bool) -> dict[str, Any]:
        """attention_shapes at the controls' values; a causal tick in cross-attention is shown as not applied."""
        ignored = causal and mode == "cross-attention"
        data = attention_shapes(n_q, n_kv, mode, causal and not ignored)
        return {**data, "note": CAUSAL_IN_CROSS if ignored else ""}

    def draw(self, data: dict[str, Any]) -> None:
        """Show each head's (n_q, n_kv) weights on axes of that size; relabel the keys when the mode changed."""
        w = data["weights"]
        n_q, n_kv = w.shape[-2:]
        for i, im in enumerate(self.images):
            im.set_data(w[i])
            im.set_extent((-0.5, n_kv - 0.5, n_q - 0.5, -0.5))
            # set_text, not set_title: set_title would reset the position the layout gave the title.
            im.axes.title.set_text(f"head {i}: ({n_q} × {n_kv}) weights")
        if data["mode"] != self.labelled_mode:
            cross = data["mode"] == "cross-attention"
            for im in self.images:
                im.axes.set_xticks(range(MAX_LEN), [f"{'x' if cross else 'y'}{j}" for j in range(MAX_LEN)], rotation=90)
                im.axes.set_xlabel(f"key ({'encoder' if cross else 'decoder'} position)")
            self.suptitle.set_text(self.heading(data["mode"]))
            self.labelled_mode = data["mode"]
        for im in self.images:  # after the ticks, which would widen the limits to all MAX_LEN positions
            im.axes.set_xlim(-0.5, n_kv - 0.5)
            im.axes.set_ylim(n_q - 0.5, -0.5)
        self.text.value = describe_shapes(data, data["note"])

    def background_key(self) -> tuple[str, int, int]:
        """The mode (key labels) and the lengths (axis limits)."""
        w = self.data["weights"]
        return (self.data["mode"], *w.shape[-2:])


def cross_attention_explorer(**values: Any) -> CrossAttentionExplorer:
    """The cross-attention explorer of lesson 7."""
    return CrossAttentionExplorer(**values)


# --- a head that attends by position -------------------------------------------------------------------------


def describe_position_head(data: dict[str, Any]) -> str:
    """One HTML line: where the head looks and how much weight lands there."""
    k = data["offset"]
    where = "its own position" if k == 0 else f"the token {abs(k)} position(s) {'back' if k > 0 else 'ahead'}"
    return (
        f"Each query looks for {where}. Mean weight on that key: <b>{data['on_target']:.3f}</b> "
        f"(uniform would be {data['uniform']:.3f}), encoding: {data['encoding']}, gain {data['gain']:g}."
    )


class PositionHeadExplorer(Explorer):
    """Offset, encoding and gain -> the position head's map on the toy sentence."""

    def __init__(self, offset: int = 1, encoding: str = "sinusoidal", gain: float = 9.0) -> None:
        check_start("offset", offset, range(-3, 4))
        check_start("encoding", encoding, ENCODINGS)
        if not 0 <= check_number("gain", gain) <= 16:
            raise ValueError(f"gain: expected a number from 0 to 16, got {gain!r}")
        controls = {
            "offset": widgets.IntSlider(value=offset, min=-3, max=3, description="offset k", continuous_update=False),
            "encoding": widgets.ToggleButtons(options=ENCODINGS, value=encoding, description="positions"),
            "gain": widgets.FloatSlider(
                value=gain, min=0.0, max=16.0, step=1.0, description="gain", continuous_update=False
            ),
        }
        self.text = widgets.HTML()
        super().__init__(controls, figsize=(5.8, 4.6), dpi=80)
        self.add_readout(self.text)

    def setup(self, fig: Figure) -> None:
        """One heatmap with the toy sentence on both axes."""
        ax = fig.subplots()
        n = len(TOKENS)
        self.heatmap = attention_heatmap(ax, np.zeros((n, n)), TOKENS, TOKENS, annotate=False)
        ax.set_title("query i looks for position i − 3 (no positional encoding)")  # the longest, for the layout
        settle_layout(fig)  # the axes never change: one layout pass instead of one per move
        # Only the weights and the title change on a move; labels, ticks and colour bar stay in the background.
        self.animate(self.heatmap, ax.title)

    def compute(self, offset: int, encoding: str, gain: float) -> dict[str, Any]:
        """position_head at the controls' values."""
        return position_head(offset, encoding, gain)

    def draw(self, data: dict[str, Any]) -> None:
        """Swap the weights into the heatmap."""
        k = data["offset"]
        self.heatmap.set_data(data["weights"])
        # set_text, not set_title: set_title would reset the position the layout gave the title.
        where = "its own position" if k == 0 else f"position i {'−' if k > 0 else '+'} {abs(k)}"
        # Without positions the head still "looks for" a place but cannot tell places apart: the map is uniform.
        code = "no positional encoding" if data["encoding"] == "none" else f"{data['encoding']} encoding"
        self.heatmap.axes.title.set_text(f"query i looks for {where} ({code})")
        self.text.value = describe_position_head(data)


def position_head_explorer(**values: Any) -> PositionHeadExplorer:
    """The position-head explorer of lesson 12."""
    return PositionHeadExplorer(**values)
