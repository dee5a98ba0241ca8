"""Lesson 17's figures: tiled attention's memory and tiles, time, decoding cost, RoPE, windows, pre/post-LN."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import QuadMesh
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter, NullLocator

from ..demos.scale import MiB, predicted_standard_bytes, predicted_tiled_bytes

TILED, STANDARD = "#2b6ca3", "#c0392b"
# Key blocks already folded into the running sums, and the live one (those still to come stay white).
DONE, LIVE = "#c6dbef", "#e6550d"


def _tokens_axis(ax: Axes, ns: Sequence[int], label: str = "sequence length n (tokens)") -> None:
    """Log-2 x axis with one labelled tick per n (512, 1k, ..., 32k) and no minor ticks."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(ns), [f"{n // 1024}k" if n >= 1024 else str(n) for n in ns])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(label)


def memory_plot(ax: Axes, table: Mapping[str, np.ndarray], block: int) -> dict[str, Line2D]:
    """Peak MiB against n, log-log: measured points and predicted lines, standard (n²) and tiled (n·block).

    Returns the tiled lines and a marker line, which the explorer moves ('tiled_measured', 'tiled_predicted').
    """
    ns = np.asarray(table["ns"])
    fine = np.geomspace(ns[0], ns[-1], 50)
    standard_measured = np.asarray(table["standard"]) / MiB
    ax.plot(fine, predicted_standard_bytes(fine) / MiB, "--", color=STANDARD, lw=1,
            label="standard, predicted: n² weights × 4 bytes")  # fmt: skip
    ax.plot(ns, standard_measured, "o", color=STANDARD, label="standard, measured (tracemalloc)")
    row = list(table["blocks"]).index(block)
    (predicted,) = ax.plot(fine, predicted_tiled_bytes(fine, block) / MiB, "--", color=TILED, lw=1,
                           label="tiled, predicted: n × block scores × 4 bytes")  # fmt: skip
    (measured,) = ax.plot(ns, table["tiled"][row] / MiB, "s", color=TILED, label="tiled, measured (tracemalloc)")
    _tokens_axis(ax, ns)
    ax.set_yscale("log")
    ax.set_ylabel("peak memory of one head (MiB, log scale)")
    ax.legend(loc="upper left")  # the rc legend size: readable at an explorer's 80 dpi too
    return {"tiled_measured": measured, "tiled_predicted": predicted}


def set_tiled_block(lines: Mapping[str, Line2D], table: Mapping[str, np.ndarray], block: int) -> None:
    """Point memory_plot's tiled lines at another block size."""
    row = list(table["blocks"]).index(block)
    lines["tiled_measured"].set_ydata(table["tiled"][row] / MiB)
    fine = lines["tiled_predicted"].get_xdata()
    lines["tiled_predicted"].set_ydata(predicted_tiled_bytes(np.asarray(fine), block) / MiB)


def tile_picture(ax: Axes, n: int) -> tuple[Rectangle, Rectangle]:
    """The (query, key) square of one head, n tokens a side: key blocks done (pale), live (orange), to come (white).

    Tiled attention holds the scores of the live block only: every query (all n rows) against `block` keys.
    Returns the done and live rectangles, which set_live_block moves.
    """
    done = ax.add_patch(Rectangle((0, 0), 0, n, facecolor=DONE, edgecolor="none"))
    # An edge in its own colour keeps a narrow live block (64 of 32,768 keys) visible as a line.
    live = ax.add_patch(Rectangle((0, 0), 0, n, facecolor=LIVE, edgecolor=LIVE, linewidth=1))
    ax.set_xlim(0, n)
    ax.set_ylim(n, 0)  # query 0 at the top, as in an attention map
    ax.set_xlabel("key position (tokens)")
    ax.set_ylabel("query position (tokens)")
    return done, live


def set_live_block(done: Rectangle, live: Rectangle, n: int, first: int, stop: int) -> None:
    """Of n keys, 0..first-1 are done and first..stop-1 live; both rectangles span all n queries."""
    done.set_width(first)
    live.set_x(first)
    live.set_width(stop - first)
    for rect in (done, live):
        rect.set_height(n)


def as_mesh(im: AxesImage) -> QuadMesh:
    """The cells of im (an imshow heatmap) as a QuadMesh in its place: the same colours, limits and labels.

    Agg draws an 8 x 8 mesh several times faster than it resamples an image to the screen's pixels, which was
    most of the time an explorer spent redrawing eight small maps on each move.
    """
    ax, data = im.axes, im.get_array()
    n_rows, n_cols = data.shape
    xlim, ylim = ax.get_xlim(), ax.get_ylim()
    vmin, vmax = im.get_clim()
    mesh = ax.pcolormesh(np.arange(n_cols + 1) - 0.5, np.arange(n_rows + 1) - 0.5, data, cmap=im.get_cmap(),
                         vmin=vmin, vmax=vmax, antialiased=False)  # fmt: skip
    im.remove()
    ax.set_xlim(xlim)
    ax.set_ylim(ylim)  # as imshow left them: row 0 at the top
    return mesh


def time_plot(ax: Axes, timings: Mapping[str, np.ndarray]) -> None:
    """Milliseconds of tiled and standard attention against n, log-log."""
    ns = timings["ns"]
    ax.plot(ns, 1e3 * timings["standard"], "o-", color=STANDARD, label="standard (all n² weights at once)")
    ax.plot(ns, 1e3 * timings["tiled"], "s-", color=TILED, label="tiled (one block of keys at a time)")
    _tokens_axis(ax, ns)
    ax.set_yscale("log")
    ax.set_ylabel("time for one head (ms, log scale)")
    ax.set_title("time: median of interleaved runs (varies from run to run)")
    ax.legend()


def rolling_median(x: np.ndarray, window: int) -> np.ndarray:
    """Median of each run of `window` consecutive values: (len(x) - window + 1,)."""
    return np.median(np.lib.stride_tricks.sliding_window_view(x, window), axis=-1)


def decode_plot(
    fig: Figure, timings: Mapping[str, np.ndarray], flops: Mapping[str, np.ndarray], window: int = 16
) -> None:
    """Left: measured ms per new token against its position; right: FLOPs per new token (closed form).

    One legend below both panels: the two share their lines, and a panel a half-cell wide has no room for one.
    """
    ax_t, ax_f = fig.subplots(1, 2)
    position = timings["position"]
    centre = rolling_median(position.astype(float), window)
    for name, colour, label in (("recomputed", STANDARD, "recompute the whole prefix"),
                                ("cached", TILED, "decode_step with a KV cache")):  # fmt: skip
        ax_t.plot(centre, 1e3 * rolling_median(timings[name], window), color=colour, label=label)
        ax_f.plot(position, flops[name], color=colour, label=label)
    ax_t.set(xlabel="position of the new token", ylabel=f"ms per token (median over {window} tokens)",
             title="measured (varies from run to run)")  # fmt: skip
    ax_f.set(xlabel="position of the new token", ylabel="FLOPs per token (log scale)", yscale="log",
             title="counted: cached O(t·d),\nrecomputed O(t·d² + t²·d)")  # fmt: skip
    fig.legend(handles=ax_f.get_lines(), loc="outside lower center", ncols=2)


def rope_plot(fig: Figure, table: np.ndarray) -> None:
    """Left: the score table rope(q)_m · rope(k)_j; right: its rows against the offset j - m, on top of each other."""
    ax_map, ax_rows = fig.subplots(1, 2)
    n = len(table)
    # A sequential map over the scores' own range: its whole contrast goes to the diagonals (a symmetric diverging
    # one would leave half its colours unused when every score has one sign). The bar sits below the map, so its
    # label does not stand beside the right panel's identical axis label.
    im = ax_map.imshow(table, cmap="viridis", vmin=table.min(), vmax=table.max(), interpolation="nearest")
    fig.colorbar(im, ax=ax_map, label="score (unitless)", location="bottom", shrink=0.85, aspect=30)
    ax_map.set(
        xlabel="key position j", ylabel="query position m", title="rope(q)_m · rope(k)_j:\nconstant along diagonals"
    )
    for m, style in zip((2, n // 2, n - 3), ("-", "--", ":"), strict=True):
        ax_rows.plot(np.arange(n) - m, table[m], style, marker="o", ms=3, label=f"query at m = {m}")
    ax_rows.set(xlabel="offset j − m (tokens)", ylabel="score (unitless)",
                title="every row is one curve\nof the offset")  # fmt: skip
    ax_rows.legend()


def receptive_field_plot(fig: Figure, reaches: Sequence[np.ndarray], window: int) -> None:
    """One panel per depth: which input tokens (columns) can reach each position (rows) after that many layers."""
    axes = fig.subplots(1, len(reaches), sharey=True)
    for depth, (ax, reach) in enumerate(zip(axes, reaches, strict=True), start=1):
        ax.imshow(reach, cmap="Greys", vmin=0, vmax=1.4, interpolation="nearest")
        # Two lines: four titles on one line each run into each other across a cell-wide figure.
        ax.set_title(f"{depth} layer{'s' if depth > 1 else ''}:\nback {depth * (window - 1)} tokens")
        ax.set_xlabel("input token")
    axes[0].set_ylabel("position after the layers")


def _minor_2_to_5(value: float, _position: int) -> str:
    """A log axis' minor tick label: 20, 30, 40, 50 shown, 60-90 left blank (they crowd against the next decade)."""
    mantissa = value / 10 ** np.floor(np.log10(value))
    return f"{value:g}" if round(mantissa) <= 5 else ""


def ln_plot(fig: Figure, stream: Mapping[str, np.ndarray], depths: np.ndarray, grads: Mapping[str, np.ndarray]) -> None:
    """Left: a token's norm in the residual stream per layer; right: last layer's w_2 gradient norm against depth.

    One legend below both panels: they share the post-LN and pre-LN lines, and the long names would cover data.
    """
    ax_s, ax_g = fig.subplots(1, 2)
    colours = {"post": STANDARD, "pre": TILED}
    names = {"post": "post-LN (original Transformer, BERT)", "pre": "pre-LN (GPT-2, Llama, Mistral)"}
    for norm, values in stream.items():
        ax_s.plot(np.arange(len(values)), values, "o-", ms=3, color=colours[norm], label=names[norm])
    ax_s.set(xlabel="layer (0 = the input)", ylabel="mean norm of a token's vector",
             title="the residual stream,\nlayer by layer")  # fmt: skip
    for norm, values in grads.items():
        ax_g.plot(depths, values, "o-", color=colours[norm], label=names[norm])
    reference = grads["pre"][0] / np.sqrt(depths)
    ax_g.plot(depths, reference, ":", color="0.4", label="∝ 1/√L")
    ax_g.set(xscale="log", yscale="log", xlabel="layers L in the stack", ylabel="‖∂loss/∂w₂‖ of the last layer",
             title="last layer's FFN weight gradient,\nat initialisation")  # fmt: skip
    ax_g.set_xticks(depths, [str(d) for d in depths])
    ax_g.xaxis.set_minor_locator(NullLocator())
    ax_g.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))  # 40, not 4×10¹
    ax_g.yaxis.set_minor_formatter(FuncFormatter(_minor_2_to_5))
    fig.legend(handles=ax_g.get_lines(), loc="outside lower center", ncols=3)
