"""Lesson 17's explorers: tiled attention's memory and live tile, and grouped-query attention's heads.

tiled_memory and gqa_heads are the pure computes (tests call them). The memory numbers come from
demos.scale.memory_table, measured once per process with tracemalloc, so a move only reads the table.
Each move redraws only what it changes: the live tile (two rectangles; what follows n or the block is cached
as a background), or the eight maps (meshes, cheaper to draw than images) and their frames.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from ..cost import kv_cache_bytes, param_count
from ..demos.scale import (
    BLOCKS,
    D_K,
    MODEL_7B,
    NS,
    MiB,
    group_differences,
    memory_table,
    pool_kv_heads,
    predicted_standard_bytes,
    predicted_tiled_bytes,
    queries_shared,
)
from ..multihead import multi_head_attention
from ..plots.attention import attention_heatmap
from ..plots.scale import as_mesh, memory_plot, set_live_block, set_tiled_block, tile_picture
from ..projections import init_params
from ._base import Explorer, check_start, divisors, fixed_margins, pin_axis_labels, settle_layout

# --- tiled attention: peak memory and the live tile ---------------------------------------------------------


def tiled_memory(n: int = 8192, block: int = 512, live: int = 3) -> dict[str, Any]:
    """Measured and predicted peak bytes of one float32 head at (n, block), and the keys of key block `live`.

    live counts from 1. Measured values come from memory_table (standard only up to the lengths it measures).
    """
    if n not in NS:
        raise ValueError(f"n: expected one of {NS}, got {n!r}")
    if block not in BLOCKS:
        raise ValueError(f"block: expected one of {BLOCKS}, got {block!r}")
    blocks = -(-n // block)
    if isinstance(live, bool) or not isinstance(live, (int, np.integer)) or not 1 <= live <= blocks:
        raise ValueError(f"live: expected a key block from 1 to {blocks}, got {live!r}")
    table = memory_table()
    col = NS.index(n)
    standard = table["standard"][col]
    return {
        "n": n,
        "block": block,
        "live": live,
        "blocks": blocks,
        "keys": (block * (live - 1), min(block * live, n) - 1),  # first and last key of the live block
        "tiled_measured": table["tiled"][BLOCKS.index(block), col],
        "tiled_predicted": predicted_tiled_bytes(n, block),
        "standard_measured": None if np.isnan(standard) else standard,
        "standard_predicted": predicted_standard_bytes(n),
    }


def describe_memory(data: dict[str, Any]) -> str:
    """One HTML line: the live tile and the four memory numbers."""
    first, last = data["keys"]
    measured = data["standard_measured"]
    standard = f"measured {measured / MiB:,.1f} MiB" if measured is not None else "not allocated here"
    return (
        f"Key block {data['live']} of {data['blocks']} (block = {data['block']} keys) is live: all {data['n']:,} "
        f"queries against keys {first:,}-{last:,}. <b>Tiled</b> peak: measured {data['tiled_measured'] / MiB:,.1f} "
        f"MiB, of which one block of scores is {data['tiled_predicted'] / MiB:,.1f} MiB. <b>Standard</b>: the (n, n) "
        f"weights are {data['standard_predicted'] / MiB:,.0f} MiB ({standard})."
    )


class TiledMemoryExplorer(Explorer):
    """Sliders n, block and the live key block -> the tiles of one head, and peak memory against n."""

    # One background per (n, block) seen lately: the tile axes' ticks follow n; the tiled lines, the marker and
    # the title follow the block. A move of the live block then redraws two rectangles only.
    backgrounds_kept = 8
    warm_controls = ("n", "block")
    pixel_ratio = 2  # sharp on HiDPI: a move redraws a few rectangles and lines, about 20 ms at 2x (bench widgets)

    def __init__(self, n: int = 8192, block: int = 512, live: int = 3) -> None:
        check_start("n", n, NS)
        check_start("block", block, BLOCKS)
        check_start("live", live, range(1, -(-n // block) + 1))
        controls = {
            "n": widgets.SelectionSlider(options=NS, value=n, description="n (tokens)", continuous_update=False),
            "block": widgets.SelectionSlider(options=BLOCKS, value=block, description="block", continuous_update=False),
            "live": widgets.IntSlider(
                value=live, min=1, max=-(-n // block), description="live block", continuous_update=False
            ),
        }
        self.text = widgets.HTML()
        super().__init__(controls, figsize=(7.3, 4.4), dpi=80)  # 584 CSS px wide: fits a laptop's 588
        self.add_readout(self.text)
        self.before_redraw(self._keep_live_valid, "n", "block")

    def _keep_live_valid(self, change: dict) -> None:
        """Give the live-block slider as many stops as there are key blocks, keeping its value when it still exists."""
        live = self.controls["live"]
        with self.hold():
            live.max = -(-self.controls["n"].value // self.controls["block"].value)  # ipywidgets clamps value

    def setup(self, fig: Figure) -> None:
        """The tile square on the left, peak memory against n on the right, their legend below both."""
        ax_tiles, ax_mem = fig.subplots(1, 2, width_ratios=(1, 1.5))
        n, block = self.controls["n"].value, self.controls["block"].value
        self.done, self.live = tile_picture(ax_tiles, n)
        ax_tiles.set_title("live key block: orange\ndone: pale")
        self.ticked_n: int | None = None  # the n whose ticks the tile axes show
        self._tick(NS[-1])  # the widest tick labels, so that the layout leaves room for every n
        self.table = memory_table()
        self.lines = memory_plot(ax_mem, self.table, block)
        # Below the panels, in two columns (standard | tiled): inside the narrow memory axes it would hide the points.
        ax_mem.get_legend().remove()
        fig.legend(*ax_mem.get_legend_handles_labels(), loc="outside lower center", ncols=2)
        ax_mem.set_ylabel("peak memory (MiB, log scale)")  # "of one head": the title says it
        # Limits that hold every block's tiled line and points (the smallest block's lie lowest), not only this one's.
        lowest = min(self.table["tiled"].min(), predicted_tiled_bytes(NS[0], BLOCKS[0])) / MiB
        ax_mem.set_ylim(lowest / 1.5, 1.5 * predicted_standard_bytes(NS[-1]) / MiB)
        (self.marker,) = ax_mem.plot([n, n], [0, 0], "o", color="k", ms=9, mfc="none", label="this n")
        ax_mem.set_title(self._memory_title(BLOCKS[-1]))  # the longest, for the layout
        settle_layout(fig)
        pin_axis_labels(ax_tiles)  # its tick labels change with n: keep its axis labels from re-measuring them
        self.follow_key(ax_tiles.xaxis, ax_tiles.yaxis, ax_mem.title, self.marker, *self.lines.values())
        self.animate(self.done, self.live)

    def compute(self, n: int, block: int, live: int) -> dict[str, Any]:
        """tiled_memory at the controls' values."""
        return tiled_memory(n, block, live)

    def draw(self, data: dict[str, Any]) -> None:
        """Move the live tile; the ticks, the tiled lines, the marker and the title follow (n, block)."""
        n, block = data["n"], data["block"]
        first, last = data["keys"]
        set_live_block(self.done, self.live, n, first, last + 1)
        if self.ticked_n != n:
            self._tick(n)
        set_tiled_block(self.lines, self.table, block)
        self.marker.set_data([n, n], [data["tiled_measured"] / MiB, data["standard_predicted"] / MiB])
        self.marker.axes.title.set_text(self._memory_title(block))
        self.text.value = describe_memory(data)

    @staticmethod
    def _memory_title(block: int) -> str:
        return f"peak memory of one head\nfloat32, d_k = {D_K}, block = {block:,}"

    def _tick(self, n: int) -> None:
        """Limits and ticks of the tile square for sequence length n."""
        ax, ticks = self.done.axes, [0, n // 2, n]
        ax.set_xticks(ticks, [f"{t:,}" for t in ticks])
        ax.set_yticks(ticks, [f"{t:,}" for t in ticks])
        ax.set_xlim(0, n)
        ax.set_ylim(n, 0)
        self.ticked_n = n

    def background_key(self) -> tuple[int, int]:
        """The tile axes' ticks follow n; the tiled lines, the marker and the title follow the block too."""
        return self.data["n"], self.data["block"]


def tiled_memory_explorer(**values: Any) -> TiledMemoryExplorer:
    """The tiled-attention memory explorer of lesson 17."""
    return TiledMemoryExplorer(**values)


# --- grouped-query attention: shared keys and values, own queries ----------------------------------------------

GQA_D_MODEL, GQA_H, GQA_TOKENS = 32, 8, 8
H_KV_OPTIONS = tuple(divisors(GQA_H))  # 1 (multi-query), 2, 4, 8 (plain multi-head)


def gqa_heads(h_kv: int = 2, shared_queries: bool = False, seed: int = 0) -> dict[str, Any]:
    """A random 8-head layer (d_model 32) pooled to h_kv key/value heads, on 8 random tokens.

    shared_queries=True also gives every query head head 0's W^Q (lesson 11's mistake). Returns the weights
    (h, n, n), each query head's key/value head, the closest two maps within a group, and the costs: this
    layer's parameters, its K and V bytes per token (float32), and a 7B-class model's cache at the same h_kv/h.
    """
    if h_kv not in H_KV_OPTIONS:
        raise ValueError(f"h_kv: expected a divisor of h={GQA_H}, one of {H_KV_OPTIONS}, got {h_kv!r}")
    params = pool_kv_heads(init_params(GQA_D_MODEL, GQA_H, seed=seed), h_kv)
    if shared_queries:
        params = queries_shared(params)
    # Scaled by 2: larger scores give maps with visible structure (random unit-variance inputs give nearly flat ones).
    x = 2.0 * np.random.default_rng(seed + 1).standard_normal((GQA_TOKENS, GQA_D_MODEL))
    _, weights = multi_head_attention(x, x, x, params)
    group = params.group_size
    big_h = MODEL_7B["h"]
    big_h_kv = big_h * h_kv // GQA_H  # the same fraction of key/value heads
    big_d_k = MODEL_7B["d_model"] // big_h
    return {
        "weights": weights,
        "h_kv": h_kv,
        "shared_queries": shared_queries,
        "kv_head": np.arange(GQA_H) // group,
        "closest_in_group": float(group_differences(weights, group).min()) if group > 1 else None,
        "params": param_count(GQA_D_MODEL, GQA_H, h_kv=h_kv),
        "params_mha": param_count(GQA_D_MODEL, GQA_H),
        "kv_bytes_per_token": kv_cache_bytes(1, 1, h_kv, params.d_k, np.float32),
        "big_h_kv": big_h_kv,
        "big_cache": kv_cache_bytes(MODEL_7B["layers"], MODEL_7B["n"], big_h_kv, big_d_k, np.float16),
    }


def describe_gqa(data: dict[str, Any]) -> str:
    """One HTML line: the grouping, whether maps in a group differ, and the costs."""
    h_kv, g = data["h_kv"], GQA_H // data["h_kv"]
    kind = {1: "multi-query attention", GQA_H: "plain multi-head attention"}.get(h_kv, "grouped-query attention")
    if data["closest_in_group"] is None:
        same = "every head has its own K and V"
    else:
        same = f"even the two most alike maps of a group differ by {data['closest_in_group']:.3f} (largest weight gap)"
    return (
        f"h_kv = {h_kv} ({kind}): {g} query head{'s' if g > 1 else ''} per key/value head; {same}.<br>"
        f"This layer: {data['params']:,} parameters (plain MHA {data['params_mha']:,}); K and V cost "
        f"{data['kv_bytes_per_token']:,} bytes per token (float32). A 7B-class model with h_kv = {data['big_h_kv']} "
        f"of {MODEL_7B['h']}: KV cache {data['big_cache'] / 2**30:.3g} GiB at {MODEL_7B['n']:,} tokens (float16)."
    )


KV_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f")


class GQAExplorer(Explorer):
    """An h_kv slider and a 'queries shared too' box -> the 8 heads' attention maps, grouped by key/value head."""

    pixel_ratio = 2  # sharp on HiDPI: eight small maps, about 30 ms a move at 2x (bench widgets)

    def __init__(self, h_kv: int = 2, shared_queries: bool = False) -> None:
        check_start("h_kv", h_kv, H_KV_OPTIONS)
        check_start("shared_queries", shared_queries, (False, True))
        controls = {
            "h_kv": widgets.SelectionSlider(
                options=H_KV_OPTIONS, value=h_kv, description="h_kv", continuous_update=False
            ),
            "shared_queries": widgets.Checkbox(
                value=shared_queries, description="queries shared too (lesson 11's mistake)"
            ),
        }
        self.text = widgets.HTML()
        super().__init__(controls, figsize=(7.3, 4.45), dpi=80)  # 584 CSS px wide: fits a laptop's 588
        self.add_readout(self.text)

    def setup(self, fig: Figure) -> None:
        """Two rows of four heatmaps, one per query head, with token labels on the outer axes only."""
        # Fixed margins (inches) instead of a layout pass over eight labelled axes: half the explorer's start-up.
        fixed_margins(fig, left=0.62, right=0.55, top=1.15, bottom=0.1, wspace=0.1, hspace=0.3)
        axes = fig.subplots(2, GQA_H // 2, sharex=True, sharey=True)
        labels = [f"t{i}" for i in range(GQA_TOKENS)]
        self.images = []
        for i, ax in enumerate(axes.flat):
            im = attention_heatmap(ax, np.zeros((GQA_TOKENS, GQA_TOKENS)), labels, labels, title=f"query head {i}",
                                   annotate=False, colorbar=False)  # fmt: skip
            im = as_mesh(im)  # the same cells, several times cheaper to redraw
            first_row, first_column = i < GQA_H // 2, i % (GQA_H // 2) == 0
            ax.set_xlabel("key" if first_row else "")
            ax.set_ylabel("query" if first_column else "")
            # Labels on the outer edges only; no key ticks under the second row's titles.
            ax.tick_params(top=first_row, labeltop=first_row, labelleft=first_column)
            for spine in ax.spines.values():
                spine.set_linewidth(3)
            self.images.append(im)
        fig.colorbar(self.images[0], ax=axes, label="weight", shrink=0.8, fraction=0.04, pad=0.02)
        fig.suptitle(f"{GQA_H} query heads on {GQA_TOKENS} random tokens;\nframe colour = the key/value head it reads",
                     y=0.985)  # fmt: skip
        # A move changes the maps and the frames' colours only; the readout names the groups (text is costly to draw).
        self.animate(*self.images, *(spine for ax in axes.flat for spine in ax.spines.values()))

    def compute(self, h_kv: int, shared_queries: bool) -> dict[str, Any]:
        """gqa_heads at the controls' values."""
        return gqa_heads(h_kv, shared_queries)

    def draw(self, data: dict[str, Any]) -> None:
        """Swap each head's weights in and colour its frame by its key/value head."""
        for im, w, j in zip(self.images, data["weights"], data["kv_head"], strict=True):
            im.set_array(w)
            for spine in im.axes.spines.values():
                spine.set_edgecolor(KV_COLOURS[int(j)])
        self.text.value = describe_gqa(data)


def gqa_explorer(**values: Any) -> GQAExplorer:
    """The grouped-query attention explorer of lesson 17."""
    return GQAExplorer(**values)
