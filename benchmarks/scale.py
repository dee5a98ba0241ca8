"""Attention at scale: tiled against standard attention (time and peak memory), and decoding with a KV cache.

`python -m benchmarks scale [--ns 1024,2048,4096,8192,16384,32768 --standard-max 16384 --d-k 64
--block 512 --repeats 3 --tokens 1024 --d-model 128 --h 4 --h-kv 4]` prints two tables, each measured
side by side in one run:
- one float32 head (n_q = n_kv = n, width d_k) per n: the median time of tiled_attention and of
  scaled_dot_product_attention over interleaved repeats, and each one's tracemalloc peak against its
  prediction (n * block * 4 bytes for one block of scores, n^2 * 4 bytes for the weights); the standard
  version only up to --standard-max, where its weights still fit;
- decoding `tokens` tokens one at a time: decode_step with a KV cache against recomputing causal
  multi_head_attention over the whole prefix for every new token, the two alternating token by token.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import numpy as np

import mha_lesson as mha
from benchmarks.core import timed
from mha_lesson._blas import one_blas_thread
from mha_lesson.kv_cache import KVCache, decode_step
from mha_lesson.measure import peak_bytes

MiB = 2**20


def attention_candidates(n: int, d_k: int, block: int, standard: bool) -> dict[str, Callable[[], object]]:
    """No-argument callables computing one float32 head of length n: tiled, and standard when asked."""
    q, k, v = (np.random.default_rng(i).standard_normal((n, d_k), dtype=np.float32) for i in range(3))
    candidates = {"tiled": lambda: mha.tiled_attention(q, k, v, block=block)}
    if standard:
        candidates["standard"] = lambda: mha.scaled_dot_product_attention(q, k, v)
    return candidates


def attention_table(ns: list[int], d_k: int, block: int, standard_max: int, repeats: int) -> None:
    """Print time and peak memory of tiled and standard attention for one float32 head at each n."""
    print(f"one head, float32, d_k {d_k}, block {block}; time: median of {repeats} interleaved repeats")
    print(f"{'n':>7} {'tiled s':>9} {'standard s':>11} {'ratio':>6}   {'tiled MiB (predicted)':>22}"
          f"   {'standard MiB (predicted)':>25}")  # fmt: skip
    for n in ns:
        candidates = attention_candidates(n, d_k, block, standard=n <= standard_max)
        peaks = {name: peak_bytes(fn) / MiB for name, fn in candidates.items()}  # also the warm-up
        times: dict[str, list[float]] = {name: [] for name in candidates}
        for _ in range(repeats):  # interleaved, so that load on the machine hits both alike
            for name, fn in candidates.items():
                times[name].append(timed(fn))
        t = {name: statistics.median(ts) for name, ts in times.items()}
        # Predicted: one (n, block) block of scores for tiled, the (n, n) weights for standard, 4 bytes each.
        tiled = f"{peaks['tiled']:>10.1f} ({n * min(block, n) * 4 / MiB:>8.1f})"
        if "standard" in t:
            standard = f"{peaks['standard']:>12.1f} ({n * n * 4 / MiB:>9.1f})"
            ratio = f"{t['tiled'] / t['standard']:>6.2f}"
            print(f"{n:>7} {t['tiled']:>9.3f} {t['standard']:>11.3f} {ratio}   {tiled:>22}   {standard:>25}")
        else:
            skipped = f"(needs {n * n * 4 / 2**30:.0f} GiB)"
            print(f"{n:>7} {t['tiled']:>9.3f} {'-':>11} {'-':>6}   {tiled:>22}   {skipped:>25}")


def decode_table(tokens: int, d_model: int, h: int, h_kv: int) -> None:
    """Print the time to decode `tokens` tokens with a KV cache against recomputing the prefix each time."""
    params = mha.init_params(d_model, h, h_kv=h_kv, seed=0, dtype=np.float32)
    x = np.random.default_rng(1).standard_normal((tokens, d_model), dtype=np.float32)
    cache = KVCache()
    cached, recomputed = np.empty(tokens), np.empty(tokens)  # seconds spent on token t
    diff = 0.0
    # One BLAS thread for both: on a busy machine, threads waiting for each other would swamp the
    # recomputation's mid-sized products and measure the machine's load instead of the two algorithms.
    with one_blas_thread():
        for t in range(tokens):  # alternating token by token, so that load hits both alike
            start = time.perf_counter()
            out_cached = decode_step(x[t], params, cache)
            cached[t] = time.perf_counter() - start
            prefix, causal = x[: t + 1], mha.causal_mask(t + 1)
            start = time.perf_counter()
            out_full, _ = mha.multi_head_attention(prefix, prefix, prefix, params, causal, need_weights=False)
            recomputed[t] = time.perf_counter() - start
            diff = max(diff, float(np.abs(out_cached - out_full[-1]).max()))
    print(f"\ndecoding {tokens} tokens, d_model {d_model}, h {h}, h_kv {h_kv}, float32, one BLAS thread")
    print(f"max |cached - recomputed| over all tokens: {diff:.1e}")
    print(f"{'':>34} {'with KV cache':>14} {'recompute prefix':>17} {'ratio':>7}")
    print(f"{'total s':>34} {cached.sum():>14.3f} {recomputed.sum():>17.3f} {recomputed.sum() / cached.sum():>7.1f}")
    for first in sorted({0, tokens // 4, tokens // 2, max(0, tokens - 16)}):
        window = slice(first, first + 16)  # median over 16 tokens: one token's time is too noisy alone
        c, r = np.median(cached[window]), np.median(recomputed[window])
        label = f"ms per token, tokens {first + 1}-{min(first + 16, tokens)}"
        print(f"{label:>34} {c * 1e3:>14.3f} {r * 1e3:>17.3f} {r / c:>7.1f}")


def main(argv: list[str]) -> None:
    """Run both measurements and print the tables."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks scale")
    parser.add_argument("--ns", default="1024,2048,4096,8192,16384,32768", help="comma-separated sequence lengths")
    parser.add_argument("--standard-max", type=int, default=16384, help="largest n for the standard version")
    parser.add_argument("--d-k", type=int, default=64)
    parser.add_argument("--block", type=int, default=mha.tiled.DEFAULT_BLOCK)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--h", type=int, default=4)
    parser.add_argument("--h-kv", type=int, default=None, help="key/value heads (default: h)")
    args = parser.parse_args(argv)
    print(f"{os.cpu_count()} CPUs; numbers from a shared machine vary with its load\n")
    attention_table([int(n) for n in args.ns.split(",")], args.d_k, args.block, args.standard_max, args.repeats)
    decode_table(args.tokens, args.d_model, args.h, args.h_kv or args.h)
