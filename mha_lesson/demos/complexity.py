"""Parameters-and-complexity lesson: parameter counts by hand, the n^2-versus-n crossover, timings, slopes.

Everything here stands on mha_lesson.cost (the closed-form counts) and checks it a second way: parameters by
counting the arrays of init_params, the crossover by solving the equality and by searching flop_count,
FLOPs by writing each part's formula out again, and the n^2 law by timing the real forward pass.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from .. import cost
from .._checks import check_heads, check_positive_int
from ..attention import scaled_dot_product_attention
from ..multihead import multi_head_attention
from ..projections import MHAParams, init_params

# Parts that grow as n (a matmul against a d_model-wide weight per token) and as n^2 (every query-key pair).
LINEAR_PARTS = ("projections", "output_projection")
QUADRATIC_PARTS = ("scores", "softmax", "weighted_sum")

# Self-attention (n_q = n_kv = n), each part's FLOPs written out from its matrix shapes, as in the lesson.
# A multiply-add is 2 FLOPs, so an (m, k) @ (k, p) matmul costs 2*m*k*p.
FORMULAS: dict[str, tuple[str, Callable[[int, int, int], int]]] = {
    "projections": ("3 matmuls (n, d) @ (d, d): 3·2·n·d²", lambda n, d, h: 3 * 2 * n * d * d),
    "scores": ("h matmuls (n, d_k) @ (d_k, n): h·2·n²·d_k", lambda n, d, h: h * 2 * n * n * (d // h)),
    "softmax": ("5 ops per weight, h·n² weights: 5·h·n²", lambda n, d, h: 5 * h * n * n),
    "weighted_sum": ("h matmuls (n, n) @ (n, d_k): h·2·n²·d_k", lambda n, d, h: h * 2 * n * n * (d // h)),
    "output_projection": ("1 matmul (n, d) @ (d, d): 2·n·d²", lambda n, d, h: 2 * n * d * d),
}

# Well-known layer sizes for the parameter table: (name, d_model, h).
KNOWN_SIZES = (
    ("Transformer base (2017)", 512, 8),
    ("BERT-base / GPT-2 small", 768, 12),
    ("BERT-large / GPT-2 medium", 1024, 16),
)


# --- parameters -------------------------------------------------------------------------------------------
def count_params(params: MHAParams) -> int:
    """Numbers stored in every array of params (weights, and biases when set)."""
    return sum(a.size for a in params.arrays().values())


def count_head_params(params: MHAParams, i: int) -> int:
    """Numbers head i owns: its slices W_i^Q, W_i^K, W_i^V (d_model, d_k), W_i^O (d_k, d_model), its bias slices."""
    arrays = [params.w_q_head(i), params.w_k_head(i), params.w_v_head(i), params.w_o_head(i)]
    arrays += [b for name in ("b_q", "b_k", "b_v") if (b := params.b_head(name, i)) is not None]
    return sum(a.size for a in arrays)


def param_table(sizes: Sequence[tuple[str, int, int]] = KNOWN_SIZES) -> list[dict[str, object]]:
    """One row per (name, d_model, h): per-head and total counts, counted from init_params' arrays."""
    rows = []
    for name, d_model, h in sizes:
        # float32 halves the memory of the counting; the counts do not depend on the dtype.
        plain = init_params(d_model, h, dtype=np.float32)
        biased = init_params(d_model, h, bias=True, dtype=np.float32)
        rows.append(
            {
                "name": name,
                "d_model": d_model,
                "h": h,
                "d_k": plain.d_k,
                "per_head": count_head_params(plain, 0),
                "per_head_bias": count_head_params(biased, 0),
                "total": count_params(plain),
                "total_bias": count_params(biased),
            }
        )
    return rows


# --- FLOPs and the crossover --------------------------------------------------------------------------------
def flop_table(n: int, d_model: int, h: int) -> list[tuple[str, str, int, int]]:
    """Rows (part, formula, value from the formula, value from cost.flop_count) for self-attention of n tokens."""
    counted = cost.flop_count(n, n, d_model, h)
    return [(part, text, f(n, d_model, h), counted[part]) for part, (text, f) in FORMULAS.items()]


def flop_coefficients(d_model: int, h: int) -> tuple[int, int]:
    """(c1, c2) with self-attention FLOPs = c1·n + c2·n², read off cost.flop_count's parts at n = 1 and 2."""
    one, two = cost.flop_count(1, 1, d_model, h), cost.flop_count(2, 2, d_model, h)
    lin, quad = sum(one[p] for p in LINEAR_PARTS), sum(one[p] for p in QUADRATIC_PARTS)
    # The parts are pure n and pure n^2 terms exactly when doubling n doubles one group and quadruples the other.
    if sum(two[p] for p in LINEAR_PARTS) != 2 * lin or sum(two[p] for p in QUADRATIC_PARTS) != 4 * quad:
        raise ValueError("cost.flop_count: expected parts linear and quadratic in n; the cost model has changed")
    return lin, quad


def crossover_n(d_model: int, h: int) -> float:
    """Sequence length n* where the n² parts equal the n parts: c1·n = c2·n², so n* = c1 / c2 = 8d² / (4d + 5h)."""
    lin, quad = flop_coefficients(d_model, h)
    return lin / quad


def crossover_n_search(d_model: int, h: int) -> int:
    """Smallest whole n whose n² parts reach its n parts, found by bisection on cost.flop_count (no formula)."""
    check_heads(d_model, h)

    def quadratic_wins(n: int) -> bool:
        parts = cost.flop_count(n, n, d_model, h)
        return sum(parts[p] for p in QUADRATIC_PARTS) >= sum(parts[p] for p in LINEAR_PARTS)

    lo, hi = 1, 2 * d_model  # without the softmax the crossover is exactly 2*d_model; with it, earlier
    if not quadratic_wins(hi):
        raise ValueError(f"d_model: expected the crossover below 2*d_model={hi}, but n={hi} is still linear-bound")
    while lo < hi:  # invariant: the answer lies in [lo, hi]
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if quadratic_wins(mid) else (mid + 1, hi)
    return lo


def ffn_flops(n: int, d_model: int, d_ff: int | None = None) -> int:
    """FLOPs of a feed-forward network on n tokens: (n, d) @ (d, d_ff) then (n, d_ff) @ (d_ff, d); d_ff=None: 4·d.

    Biases, the activation and the block's layer norms and residual additions cost O(n·d) more; like the
    attention biases they are left out: nothing next to the O(n·d·d_ff) of the two products.
    """
    check_positive_int("n", n)
    check_positive_int("d_model", d_model)
    d_ff = 4 * d_model if d_ff is None else check_positive_int("d_ff", d_ff)
    return 2 * n * d_model * d_ff + 2 * n * d_ff * d_model


def block_crossover_n(d_model: int, h: int, d_ff: int | None = None) -> float:
    """n* of a whole block (attention + FFN): (c1 + FFN FLOPs per token) / c2 = 24d² / (4d + 5h) at d_ff = 4d.

    The FFN works on each token alone, so it adds only to the n parts; the n² parts are attention's, unchanged.
    """
    lin, quad = flop_coefficients(d_model, h)
    return (lin + ffn_flops(1, d_model, d_ff)) / quad


def local_slope(n: np.ndarray | float, d_model: int, h: int) -> np.ndarray:
    """d log(FLOPs) / d log(n) = (c1·n + 2·c2·n²) / (c1·n + c2·n²): 1 for short sequences, 2 for long, 1.5 at n*."""
    lin, quad = flop_coefficients(d_model, h)
    n = np.asarray(n, dtype=np.float64)
    return (lin * n + 2 * quad * n**2) / (lin * n + quad * n**2)


# --- memory -----------------------------------------------------------------------------------------------
def memory_table(n: int, hs: Sequence[int], layers: int, dtype: np.dtype | type = np.float32) -> list[dict[str, int]]:
    """Rows per head count: bytes of one layer's attention weights (h·n² numbers) and of `layers` layers."""
    check_positive_int("layers", layers)
    rows = []
    for h in hs:
        per_layer = cost.attention_memory_bytes(n, n, h, dtype)
        rows.append({"h": h, "numbers": h * n * n, "per_layer": per_layer, "per_model": layers * per_layer})
    return rows


# --- measuring ----------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Timings:
    """Seconds of one self-attention forward pass: seconds[i, j] for d_models[i] and ns[j]."""

    ns: np.ndarray
    d_models: np.ndarray
    h: int
    seconds: np.ndarray  # (len(d_models), len(ns))
    flops: np.ndarray  # (len(d_models), len(ns)), from cost.flop_count


def _loops(fn: Callable[[], object], clock: Callable[[], float]) -> tuple[int, float]:
    """(calls per timing so that each lasts >= 2 ms, seconds of one first call); the first call also warms up.

    First-touch allocations make the first call slow, so its time is only an upper bound on the work.
    """
    start = clock()
    fn()
    once = clock() - start
    return max(1, math.ceil(2e-3 / max(once, 1e-7))), once


def _per_call(fn: Callable[[], object], number: int, clock: Callable[[], float]) -> float:
    """Seconds per call of `number` back-to-back calls."""
    start = clock()
    for _ in range(number):
        fn()
    return (clock() - start) / number


def _best_seconds(fn: Callable[[], object], repeats: int, clock: Callable[[], float] = time.process_time) -> float:
    """Fastest of `repeats` timings after a warm-up call, in seconds per call (tiny calls looped to >= 2 ms).

    The clock is this process's CPU time by default: on one thread it equals the elapsed time of the work,
    and, unlike a wall clock, it does not run on while other programs hold the processor (on a busy shared
    machine a wall clock measured 2-4x the CPU time here, differently on every run). The minimum, not the
    median: what remains (neighbours evicting our cache, interrupts) only ever adds time.
    """
    number, _ = _loops(fn, clock)
    return min(_per_call(fn, number, clock) for _ in range(repeats))


def time_forward(
    ns: Sequence[int],
    d_models: Sequence[int],
    h: int,
    repeats: int = 3,
    seed: int = 0,
    *,
    max_total_flops: float = 2e11,
    budget_seconds: float = 5.0,
    threads: int | None = 1,
) -> Timings:
    """Time multi_head_attention (self-attention, float32, need_weights=False) for every (d_model, n) pair.

    Every size gets a warm-up call, then the grid is swept `repeats` times and each size keeps its fastest
    time. Sweeping, rather than repeating one size back to back, spreads each size's runs over the whole
    measurement, so a burst of activity from other programs spoils one sweep, not all of a size's runs.
    Once budget_seconds of wall time have passed no further runs start, and sizes not yet run keep their
    warm-up time: a busy machine makes the numbers noisier instead of the lesson much slower.

    The matrix library uses `threads` threads (None: its own setting); one by default, because on a shared
    machine a multi-threaded product can stall waiting for a thread the system has paused, which measures
    the scheduler rather than the work. On one thread the times are CPU times (see _best_seconds); on
    several, CPU time would add the threads up, so the wall clock is used.
    """
    ns = [check_positive_int("ns", n) for n in ns]
    d_models = [check_positive_int("d_models", d) for d in d_models]
    if not ns or not d_models:
        raise ValueError(f"ns, d_models: expected non-empty lists, got {len(ns)} and {len(d_models)} values")
    for d in d_models:
        check_heads(d, h)
    repeats = check_positive_int("repeats", repeats)
    flops = np.array([[cost.flop_count(n, n, d, h)["total"] for n in ns] for d in d_models], dtype=np.float64)
    # Each size runs at least repeats + 1 times; refuse a grid that would keep a shared machine busy for minutes.
    if flops.sum() * (repeats + 1) > max_total_flops:
        raise ValueError(
            f"ns: expected a grid of at most {max_total_flops:.0e} FLOPs in total, got "
            f"{flops.sum() * (repeats + 1):.1e}; use shorter sequences, fewer sizes or fewer repeats"
        )
    if threads is None:
        limit = contextlib.nullcontext()
    else:
        from threadpoolctl import threadpool_limits  # only the timing needs it

        limit = threadpool_limits(limits=check_positive_int("threads", threads), user_api="blas")
    clock = time.process_time if threads == 1 else time.perf_counter
    rng = np.random.default_rng(seed)
    seconds = np.empty_like(flops)
    start = time.perf_counter()  # the budget is wall time: it bounds how long the learner waits
    calls = {}
    for i, d in enumerate(d_models):
        params = init_params(d, h, seed=seed, dtype=np.float32)
        for j, n in enumerate(ns):
            x = rng.standard_normal((n, d)).astype(np.float32)  # (n, d_model)
            calls[i, j] = functools.partial(multi_head_attention, x, x, x, params, need_weights=False)
    loops = {}
    with limit:
        for ij, call in calls.items():
            loops[ij], seconds[ij] = _loops(call, clock)
        for _ in range(repeats):
            for ij, call in calls.items():
                if time.perf_counter() - start > budget_seconds:
                    break
                seconds[ij] = min(seconds[ij], _per_call(call, loops[ij], clock))
    return Timings(np.array(ns), np.array(d_models), h, seconds, flops)


def time_parts(n: int, d_model: int, h: int, repeats: int = 3, seed: int = 0) -> dict[str, float]:
    """Seconds and FLOP/s of the n-parts (four (n, d) @ (d, d) products) and the n²-parts (attention per head)."""
    from threadpoolctl import threadpool_limits  # one thread and CPU time, as in time_forward

    d_k = check_heads(d_model, h)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d_model)).astype(np.float32)  # (n, d_model)
    w = rng.standard_normal((d_model, d_model)).astype(np.float32)  # (d_model, d_model)
    q, k, v = rng.standard_normal((3, h, n, d_k)).astype(np.float32)  # (h, n, d_k) each
    with threadpool_limits(limits=1, user_api="blas"):
        linear = _best_seconds(lambda: [x @ w for _ in range(4)], repeats)
        quadratic = _best_seconds(functools.partial(scaled_dot_product_attention, q, k, v), repeats)
    lin, quad = flop_coefficients(d_model, h)
    return {
        "linear_seconds": linear,
        "quadratic_seconds": quadratic,
        "linear_rate": lin * n / linear,
        "quadratic_rate": quad * n * n / quadratic,
    }


def fit_loglog_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of log(y) against log(x): the exponent p in y ≈ c·x^p."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.size < 2:
        raise ValueError(f"x, y: expected two 1-D arrays of the same length >= 2, got shapes {x.shape} and {y.shape}")
    if (x <= 0).any() or (y <= 0).any():
        raise ValueError("x, y: expected positive values (a log-log fit needs logarithms)")
    if np.ptp(x) == 0:
        raise ValueError("x: expected at least two different values, got all equal")
    slope, _ = np.polyfit(np.log(x), np.log(y), 1)
    return float(slope)


def slope_side(measured: float, predicted: float, tol: float = 0.02) -> str:
    """How a measured log-log slope compares with the FLOP count's: "steeper", "flatter" or "about equal"."""
    if abs(measured - predicted) <= tol:
        return "about equal"
    return "steeper" if measured > predicted else "flatter"


def slope_sentence(in_n: dict[int, tuple[float, float]], in_d: tuple[float, float]) -> str:
    """One sentence saying which way this run's measured slopes went against the FLOP count's.

    in_n maps each d_model to (measured, predicted) slopes in n; in_d is (measured, predicted) in d_model.
    """
    sides = {d: slope_side(*pair) for d, pair in in_n.items()}
    if len(set(sides.values())) == 1:
        (side,) = set(sides.values())
        n_part = f"{side} than the FLOP count's for every width" if side != "about equal" else "about equal to it"
    else:
        n_part = "; ".join(f"{side} at d_model = {d}" for d, side in sides.items())
    d_side = slope_side(*in_d)
    d_part = "about equal to it" if d_side == "about equal" else f"{d_side} than the FLOP count's"
    return f"In this run the measured slope in n came out {n_part}, and the one in d_model {d_part}."


def fitted_rate(timings: Timings) -> float:
    """The one FLOP/s constant R that best turns FLOPs into seconds (geometric mean of flops / seconds)."""
    return float(np.exp(np.mean(np.log(timings.flops / timings.seconds))))


def synthetic_timings(ns: Sequence[int], a: float, b: float, noise: float, seed: int = 0) -> np.ndarray:
    """Times following a·n² + b·n, each multiplied by a seeded log-normal factor of relative size `noise`."""
    ns = np.asarray(ns, dtype=np.float64)
    rng = np.random.default_rng(seed)
    return (a * ns**2 + b * ns) * np.exp(noise * rng.standard_normal(ns.shape))


def flop_curves(ns: Sequence[int], d_model: int, h: int) -> dict[str, np.ndarray]:
    """Self-attention FLOPs of every part (and 'total') at each n in ns, from cost.flop_count."""
    ns = [check_positive_int("ns", n) for n in ns]
    rows = [cost.flop_count(n, n, d_model, h) for n in ns]
    return {part: np.array([r[part] for r in rows], dtype=np.float64) for part in (*cost.PARTS, "total")}


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table; integers get thousands separators so large counts stay readable."""

    def cell(v: object) -> str:
        return f"{v:,}" if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else str(v)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
