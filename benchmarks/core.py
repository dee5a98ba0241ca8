"""Time the batched forward against the loop version and PyTorch, side by side in one run.

`python -m benchmarks [core] [--batch 8 --n 1024 --d-model 768 --h 12 --repeats 5]` prints the
machine's float32 matmul rate, the time of each implementation (median of interleaved repeats), the
ratios, and the fraction of the matmul rate each reaches. PyTorch is used only when it is installed.
Targets: numpy / torch <= 1.0; the forward at lesson sizes (n <= 64, d_model <= 256) under 1 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import numpy as np

import mha_lesson as mha


def timed(fn: Callable[[], object]) -> float:
    """Seconds for one call."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def matmul_rate(size: int = 2048, repeats: int = 5) -> float:
    """Best float32 (size, size) @ (size, size) rate of this machine's BLAS, in FLOP/s."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((size, size), dtype=np.float32) for _ in range(2))
    a @ b  # warm-up: thread pool start
    return 2 * size**3 / min(timed(lambda: a @ b) for _ in range(repeats))


def torch_forward(x: np.ndarray, params: mha.MHAParams) -> Callable[[], object] | None:
    """A no-argument callable running torch.nn.MultiheadAttention on the same weights, or None."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(os.cpu_count() or 1)
    d = params.d_model
    layer = torch.nn.MultiheadAttention(d, params.h, bias=False, batch_first=True)
    with torch.no_grad():
        # torch applies x @ W.T with the three input projections stacked row-wise.
        w_in = np.concatenate([params.w_q.T, params.w_k.T, params.w_v.T])
        layer.in_proj_weight.copy_(torch.from_numpy(w_in))
        layer.out_proj.weight.copy_(torch.from_numpy(params.w_o.T.copy()))
    layer.eval()
    xt = torch.from_numpy(x)

    def run() -> object:
        with torch.inference_mode():
            return layer(xt, xt, xt, need_weights=False)[0]

    return run


def main(argv: list[str]) -> None:
    """Run the comparison and print the table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks core")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--d-model", type=int, default=768)
    parser.add_argument("--h", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-loop", action="store_true", help="skip the (slow) loop version")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    params = mha.init_params(args.d_model, args.h, seed=0, dtype=np.float32)
    x = rng.standard_normal((args.batch, args.n, args.d_model), dtype=np.float32)
    flops = args.batch * mha.cost.flop_count(args.n, args.n, args.d_model, args.h)["total"]
    candidates: dict[str, Callable[[], object]] = {
        "numpy batched": lambda: mha.multi_head_attention(x, x, x, params, need_weights=False),
    }
    if not args.no_loop:
        candidates["numpy loop over heads"] = lambda: mha.multi_head_attention_loop(x, x, x, params)
    run_torch = torch_forward(x, params)
    if run_torch is not None:
        candidates["torch nn.MultiheadAttention"] = run_torch
        out_np = mha.multi_head_attention(x, x, x, params, need_weights=False)[0]
        err = float(np.abs(out_np - run_torch().numpy()).max())
        print(f"max |numpy - torch| on the benchmark input: {err:.2e}")

    rate = matmul_rate()
    print(f"float32 matmul rate: {rate / 1e9:.0f} GFLOP/s ({os.cpu_count()} cores)")
    print(f"shape: batch {args.batch}, n {args.n}, d_model {args.d_model}, h {args.h}, float32, no weights kept")
    for fn in candidates.values():
        fn()  # warm-up
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(args.repeats):  # interleaved, so load on the machine hits every candidate alike
        for name, fn in candidates.items():
            times[name].append(timed(fn))
    medians = {name: statistics.median(t) for name, t in times.items()}
    base = medians["numpy batched"]
    print(f"{'implementation':<30} {'median s':>9} {'ratio':>7} {'% of matmul rate':>17}")
    for name, t in medians.items():
        print(f"{name:<30} {t:>9.3f} {t / base:>7.2f} {100 * flops / t / rate:>16.0f}%")
    if run_torch is not None:
        print(f"numpy batched / torch: {base / medians['torch nn.MultiheadAttention']:.2f} (target <= 1.0)")

    small = mha.init_params(256, 8, seed=0, dtype=np.float32)
    xs = rng.standard_normal((64, 256), dtype=np.float32)
    t_small = statistics.median(timed(lambda: mha.multi_head_attention(xs, xs, xs, small)) for _ in range(200))
    print(f"lesson size (n 64, d_model 256, h 8, weights kept): {t_small * 1e3:.3f} ms (target < 1 ms)")
