"""Lesson 19's explorers: a sink logit against the attention map and output norm; MLA's latent width against cache
and retrieval; the local:global ratio and window against reach and KV memory at 128K tokens.

Each compute is a pure function (tests call it); each move redraws only the artists it changes (the map and
bars, a marker, a line and bars), over a cached background.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from ..demos.today import GEMMA3_27B, GiB, layer_pattern, mla_reference, reach_by_layer, sink_demo, stack_kv_bytes
from ..plots.today import mla_cache_plot, mla_quality_plot, reach_plot, sink_bars, sink_map
from ._base import Explorer, settle_layout

# --- the sink logit ------------------------------------------------------------------------------------------


def sink_view(sink: float = 2.0) -> dict[str, Any]:
    """The sink demo at one sink logit: weights, row sums, output norms (demos.today.sink_demo)."""
    if not np.isfinite(sink):
        raise ValueError(f"sink: expected a finite logit, got {sink!r}")
    return {"sink": float(sink), **sink_demo(sink)}


class SinkExplorer(Explorer):
    """Move the sink logit: rows with nothing to find give their weight to the sink; rows with a match keep it."""

    def __init__(self) -> None:
        controls = {
            "sink": widgets.FloatSlider(
                value=2.0, min=-8.0, max=8.0, step=0.5, description="sink logit", continuous_update=True
            )
        }
        # 585 x 378 CSS pixels: no wider than a laptop's output area (plots.style.LAPTOP_OUTPUT_PX), so its 9-point
        # text shows at 11 CSS pixels there too. The bars keep the map's rows (query 0 on top in both), the legend
        # goes below the two panels, where no bar reaches it.
        super().__init__(controls, figsize=(6.5, 4.2))

    def setup(self, fig: Figure) -> None:
        data = sink_view(2.0)
        self.ax_map, self.ax_bar = fig.subplots(1, 2, width_ratios=(1.15, 1))
        self.heat = sink_map(self.ax_map, data["weights"])
        fig.colorbar(self.heat, ax=self.ax_map, label="weight")
        self.sums, self.norms = sink_bars(self.ax_bar, data["row_sums"], data["norms"])
        self.ax_bar.set_ylim(self.ax_map.get_ylim())  # row i of the bars beside row i of the map
        self.ax_bar.tick_params(labelleft=False)  # the map's query labels name both panels' rows
        self.ax_map.set_title("attention weights\n(sink column dropped)")
        self.title = self.ax_bar.set_title(" \n ")
        settle_layout(fig)
        self.animate(self.heat, *self.sums, *self.norms, self.title)

    def compute(self, sink: float) -> dict[str, Any]:
        return sink_view(sink)

    def draw(self, data: dict[str, Any]) -> None:
        self.heat.set_data(data["weights"])
        for bar, value in zip(self.sums, data["row_sums"], strict=True):
            bar.set_width(value)
        for bar, value in zip(self.norms, data["norms"], strict=True):
            bar.set_width(value)
        none = data["row_sums"][3:].mean()
        self.title.set_text(f"sink logit s = {data['sink']:g}:\n'none' rows sum to {none:.2f}")


# --- MLA: latent width against cache and retrieval -----------------------------------------------------------

MINILM_KV_NUMBERS = 2 * 384  # MiniLM's keys and values per token per layer: 2 · h · d_k = 2 · 12 · 32


def mla_view(d_c: int = 128) -> dict[str, Any]:
    """The shipped MiniLM latent sweep, and the row of one d_c: cache numbers, share of MHA's, accuracy, margin."""
    ref = mla_reference()
    d_cs = [int(d) for d in ref["d_c"]]
    if d_c not in d_cs:
        raise ValueError(f"d_c: expected one of {d_cs}, got {d_c!r}")
    i = d_cs.index(d_c)
    return {
        "ref": ref,
        "d_c": d_c,
        "share": d_c / MINILM_KV_NUMBERS,
        "accuracy": float(ref["accuracy"][i]),
        "margin": float(ref["margin"][i] / ref["margin"][0]),
    }


class MLAExplorer(Explorer):
    """Move d_c: the cache per token (top) against MiniLM's paraphrase retrieval with rank-d_c keys and values."""

    def __init__(self) -> None:
        d_cs = sorted(int(d) for d in mla_reference()["d_c"])
        controls = {"d_c": widgets.SelectionSlider(options=d_cs, value=128, description="d_c")}
        # 585 x 495 CSS pixels: no wider than a laptop's output area (plots.style.LAPTOP_OUTPUT_PX), so its 9-point
        # text shows at 11 CSS pixels there too; the two panels share their d_c axis, one above the other.
        super().__init__(controls, figsize=(6.5, 5.5))

    def setup(self, fig: Figure) -> None:
        data = mla_view(128)
        ref = data["ref"]
        self.ax_cache, self.ax_quality = fig.subplots(2, 1, sharex=True)
        mla_cache_plot(self.ax_cache, ref["d_c"], MINILM_KV_NUMBERS)
        mla_quality_plot(self.ax_quality, ref)
        self.ax_cache.set_xlabel("")  # the shared d_c axis is labelled once, under the lower panel
        self.ax_quality.set_title("MiniLM's paraphrase retrieval with rank-d_c keys and values")
        (self.cache_marker,) = self.ax_cache.plot([128], [128], "o", ms=12, mfc="none", mec="C3", mew=2)
        self.line_cache = self.ax_cache.axvline(128, color="C3", lw=1)
        self.line_quality = self.ax_quality.axvline(128, color="C3", lw=1)
        self.title = self.ax_cache.set_title(" ")
        settle_layout(fig)
        # The legends are drawn after the red lines, over them: a line at any d_c crosses one legend's box or other.
        legends = (self.ax_cache.get_legend(), self.ax_quality.get_legend())
        self.animate(self.cache_marker, self.line_cache, self.line_quality, self.title, *legends)

    def compute(self, d_c: int) -> dict[str, Any]:
        return mla_view(d_c)

    def draw(self, data: dict[str, Any]) -> None:
        d = data["d_c"]
        self.cache_marker.set_data([d], [d])
        self.line_cache.set_xdata([d, d])
        self.line_quality.set_xdata([d, d])
        self.title.set_text(f"d_c = {d}: {data['share']:.0%} of MHA's cache, margin ratio {data['margin']:.0%}")


# --- local and global layers ---------------------------------------------------------------------------------

CONTEXT = 131_072  # 128K tokens
WINDOWS = (128, 256, 512, 1024, 2048, 4096, 8192)


def local_global_view(local_per_global: int = 5, window: int = 1024) -> dict[str, Any]:
    """Gemma 3 27B's sizes with another ratio or window: reach per layer and KV bytes at 128K tokens (bfloat16)."""
    if window not in WINDOWS:
        raise ValueError(f"window: expected one of {WINDOWS}, got {window!r}")
    g = GEMMA3_27B
    pattern = layer_pattern(g["layers"], local_per_global)
    kv = {
        "all global": stack_kv_bytes(CONTEXT, window, ["global"] * g["layers"], g["h_kv"], g["d_k"]),
        "pattern, full cache": stack_kv_bytes(CONTEXT, window, pattern, g["h_kv"], g["d_k"], windowed_cache=False),
        "pattern, windowed cache": stack_kv_bytes(CONTEXT, window, pattern, g["h_kv"], g["d_k"]),
    }
    return {
        "pattern": pattern,
        "reach": reach_by_layer(CONTEXT, window, pattern),
        "kv_gib": {k: v / GiB for k, v in kv.items()},
        "globals": pattern.count("global"),
        "local_per_global": local_per_global,
        "window": window,
    }


class LocalGlobalExplorer(Explorer):
    """Move the ratio and window: how far back the last token reaches per layer (top), and the KV cache at 128K
    tokens (bottom)."""

    def __init__(self) -> None:
        controls = {
            "local_per_global": widgets.IntSlider(value=5, min=0, max=11, description="local:global"),
            "window": widgets.SelectionSlider(options=WINDOWS, value=1024, description="window"),
        }
        # 585 x 540 CSS pixels: no wider than a laptop's output area (plots.style.LAPTOP_OUTPUT_PX), so its 9-point
        # text shows at 11 CSS pixels there too; the reach above, the cache sizes below, each in its own subfigure so
        # that the bars' long labels do not push the reach plot's left edge in with them.
        super().__init__(controls, figsize=(6.5, 6.0))

    def setup(self, fig: Figure) -> None:
        data = local_global_view()
        top, bottom = fig.subfigures(2, 1, height_ratios=(1.4, 1))
        self.ax_reach, self.ax_kv = top.subplots(), bottom.subplots()
        self.line = reach_plot(self.ax_reach, data["reach"], CONTEXT)
        self.ax_reach.set_title(f"{GEMMA3_27B['layers']} layers, {CONTEXT:,} tokens: reach of the last token")
        names = list(data["kv_gib"])
        self.bars = self.ax_kv.barh(range(3), list(data["kv_gib"].values()), color=["0.5", "C1", "C2"])
        self.ax_kv.set_yticks(range(3), names)
        self.ax_kv.invert_yaxis()
        self.ax_kv.set_xlim(0, data["kv_gib"]["all global"] * 1.15)
        self.ax_kv.set_xlabel("KV cache at 128K tokens (GiB, bf16)")
        self.ax_kv.set_ylabel("how the caches are kept")
        self.labels = [self.ax_kv.text(0, i, "", va="center") for i in range(3)]
        self.title = self.ax_kv.set_title(" ")
        settle_layout(fig)
        self.animate(self.line, *self.bars, *self.labels, self.title)

    def compute(self, local_per_global: int, window: int) -> dict[str, Any]:
        return local_global_view(local_per_global, window)

    def draw(self, data: dict[str, Any]) -> None:
        self.line.set_ydata(np.maximum(data["reach"], 1))
        for i, (bar, value) in enumerate(zip(self.bars, data["kv_gib"].values(), strict=True)):
            bar.set_width(value)
            self.labels[i].set_position((value, i))
            self.labels[i].set_text(f" {value:.1f}")
        self.title.set_text(f"{data['local_per_global']}:1, window {data['window']}: {data['globals']} global layers")


# --- what the lesson calls ------------------------------------------------------------------------------------


def sink_explorer() -> SinkExplorer:
    """The sink-logit explorer of lesson 19."""
    return SinkExplorer()


def mla_explorer() -> MLAExplorer:
    """The latent-width explorer of lesson 19."""
    return MLAExplorer()


def local_global_explorer() -> LocalGlobalExplorer:
    """The local:global ratio and window explorer of lesson 19."""
    return LocalGlobalExplorer()
