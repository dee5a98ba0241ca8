"""mha_lesson.demos.complexity: every helper against a second, independent computation."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha_lesson as mha
from mha_lesson import cost
from mha_lesson.demos import complexity as cx

heads_and_width = st.tuples(st.integers(1, 8), st.integers(1, 8)).map(lambda t: (t[0] * t[1], t[1]))  # (d, h)


@given(heads_and_width, st.booleans())
def test_counted_params_match_the_closed_form(dh, bias):
    d, h = dh
    params = mha.init_params(d, h, bias=bias, dtype=np.float32)
    assert cx.count_params(params) == 4 * d * d + (4 * d if bias else 0)


@given(heads_and_width, st.booleans())
def test_heads_own_every_parameter_but_the_output_bias(dh, bias):
    d, h = dh
    params = mha.init_params(d, h, bias=bias, dtype=np.float32)
    per_head = [cx.count_head_params(params, i) for i in range(h)]
    d_k = d // h
    assert per_head == [4 * d * d_k + (3 * d_k if bias else 0)] * h
    assert sum(per_head) + (d if bias else 0) == cx.count_params(params)


def test_param_table_rows_follow_four_d_squared():
    for row, (name, d, h) in zip(cx.param_table(), cx.KNOWN_SIZES, strict=True):
        assert (row["name"], row["d_model"], row["h"], row["d_k"]) == (name, d, h, d // h)
        assert row["total"] == 4 * d**2 == cost.param_count(d, h)
        assert row["total_bias"] == 4 * d**2 + 4 * d == cost.param_count(d, h, bias=True)
        assert row["per_head"] == 4 * d * (d // h)
        assert row["per_head_bias"] == 4 * d * (d // h) + 3 * (d // h)


@given(st.integers(1, 3000), heads_and_width)
def test_flop_table_formulas_equal_cost_flop_count(n, dh):
    d, h = dh
    rows = cx.flop_table(n, d, h)
    assert [r[0] for r in rows] == list(cost.PARTS)
    for _, text, by_formula, by_cost in rows:
        assert by_formula == by_cost, text
    assert sum(r[2] for r in rows) == 8 * n * d * d + 4 * n * n * d + 5 * h * n * n


@given(heads_and_width, st.integers(1, 5000))
def test_flop_coefficients_describe_every_n(dh, n):
    d, h = dh
    lin, quad = cx.flop_coefficients(d, h)
    assert (lin, quad) == (8 * d * d, 4 * d + 5 * h)
    assert cost.flop_count(n, n, d, h)["total"] == lin * n + quad * n * n


@given(heads_and_width)
def test_crossover_closed_form_and_search_agree(dh):
    d, h = dh
    exact = Fraction(8 * d * d, 4 * d + 5 * h)
    assert cx.crossover_n(d, h) == pytest.approx(float(exact), rel=1e-12)
    assert cx.crossover_n_search(d, h) == math.ceil(exact)
    assert cx.crossover_n(d, h) < 2 * d  # the softmax only ever pulls n* below 2*d_model
    assert (cx.crossover_n(d, h) >= d) == (4 * d >= 5 * h)  # n* < d_model only when d_k = 1


def test_crossover_search_matches_a_linear_scan():
    for d, h in [(8, 2), (12, 3), (64, 8), (96, 4)]:
        parts = [cost.flop_count(n, n, d, h) for n in range(1, 2 * d + 1)]
        scan = next(
            n
            for n, p in enumerate(parts, start=1)
            if sum(p[k] for k in cx.QUADRATIC_PARTS) >= sum(p[k] for k in cx.LINEAR_PARTS)
        )
        assert cx.crossover_n_search(d, h) == scan


def test_crossover_over_d_model_depends_only_on_d_k():
    # n*/d = 8/(4 + 5/d_k): the lesson's models all have d_k = 64, so all share the same ratio, just under 2.
    ratios = [cx.crossover_n(64 * k, k) / (64 * k) for k in (1, 4, 8, 12, 16, 64)]
    assert ratios == pytest.approx([8 / (4 + 5 / 64)] * 6, rel=1e-12)
    assert cx.crossover_n(4096, 1) / 4096 == pytest.approx(2, abs=1e-3)  # one wide head: the softmax is negligible


@given(heads_and_width, st.floats(2.0, 1e5))
def test_local_slope_matches_finite_differences(dh, n):
    d, h = dh
    lin, quad = cx.flop_coefficients(d, h)
    flops = lambda m: lin * m + quad * m * m  # noqa: E731
    eps = 1e-4
    numeric = (math.log(flops(n * math.exp(eps))) - math.log(flops(n * math.exp(-eps)))) / (2 * eps)
    assert cx.local_slope(n, d, h) == pytest.approx(numeric, abs=1e-6)


@given(heads_and_width)
def test_local_slope_is_one_and_a_half_at_the_crossover(dh):
    d, h = dh
    assert cx.local_slope(cx.crossover_n(d, h), d, h) == pytest.approx(1.5, abs=1e-12)


@given(st.floats(-1.0, 3.0), st.floats(1e-6, 1e3))
def test_fit_recovers_the_exponent_of_a_power_law(p, c):
    x = np.geomspace(10, 10_000, 9)
    assert cx.fit_loglog_slope(x, c * x**p) == pytest.approx(p, abs=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_fit_on_noisy_quadratic_plus_linear_timings(seed):
    ns = 2 ** np.arange(4, 17)
    a, b = 2e-9, 1e-6  # b/a = 500: linear below ~500 tokens, quadratic well above
    noisy = cx.synthetic_timings(ns, a, b, noise=0.05, seed=seed)
    long, short = ns >= 16384, ns <= 64
    # The noise-free law's slope over the same range is the target; 5% noise moves the fit by a few hundredths.
    for sel in (long, short):
        exact = cx.fit_loglog_slope(ns[sel], a * ns[sel] ** 2.0 + b * ns[sel])
        assert cx.fit_loglog_slope(ns[sel], noisy[sel]) == pytest.approx(exact, abs=0.12)
    assert cx.fit_loglog_slope(ns[long], noisy[long]) == pytest.approx(2, abs=0.15)
    assert cx.fit_loglog_slope(ns[short], noisy[short]) == pytest.approx(1, abs=0.15)


def test_synthetic_timings_are_seeded_and_exact_without_noise():
    ns = [10, 100, 1000]
    assert np.array_equal(cx.synthetic_timings(ns, 1.0, 2.0, 0.0), [120.0, 10200.0, 1002000.0])
    assert np.array_equal(
        cx.synthetic_timings(ns, 1.0, 2.0, 0.1, seed=3), cx.synthetic_timings(ns, 1.0, 2.0, 0.1, seed=3)
    )
    assert not np.array_equal(cx.synthetic_timings(ns, 1.0, 2.0, 0.1, seed=3), cx.synthetic_timings(ns, 1.0, 2.0, 0.1))


@pytest.mark.parametrize(
    "x, y, match",
    [
        ([1, 2, 3], [1, 2], "same length"),
        ([1], [1], "length >= 2"),
        ([1, 0], [1, 2], "positive"),
        ([1, 2], [1, -2], "positive"),
        ([3, 3], [1, 2], "different values"),
    ],
)
def test_fit_rejects_bad_input(x, y, match):
    with pytest.raises(ValueError, match=match):
        cx.fit_loglog_slope(x, y)


def test_time_forward_measures_every_pair_of_a_tiny_grid():
    t = cx.time_forward([4, 8, 16], [8, 16], h=2, repeats=2, seed=1)
    assert t.seconds.shape == t.flops.shape == (2, 3)
    assert (t.seconds > 0).all() and np.isfinite(t.seconds).all()
    assert t.flops[1, 2] == cost.flop_count(16, 16, 16, 2)["total"]
    assert list(t.ns) == [4, 8, 16] and list(t.d_models) == [8, 16] and t.h == 2


def test_time_forward_runs_on_the_requested_number_of_threads(monkeypatch):
    from threadpoolctl import threadpool_info

    seen = []

    def spy(*args, **kwargs):
        seen.append({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"})
        return mha.multi_head_attention(*args, **kwargs)

    monkeypatch.setattr(cx, "multi_head_attention", spy)
    cx.time_forward([4], [8], h=2, repeats=1)
    assert seen and all(s <= {1} for s in seen)
    with pytest.raises(ValueError, match="threads"):
        cx.time_forward([4], [8], h=2, threads=0)
    assert (cx.time_forward([4], [8], h=2, repeats=1, threads=None).seconds > 0).all()


def test_single_threaded_timings_use_cpu_time_and_multi_threaded_ones_wall_time(monkeypatch):
    # On one thread the process's CPU time is the work's time and ignores other programs; on several threads
    # CPU time would add the threads up, so the wall clock is used. Fake clocks tell the two apart.
    clocks = {"process": 0.0, "wall": 0.0}

    def tick(name, step):
        def clock():
            clocks[name] += step
            return clocks[name]

        return clock

    monkeypatch.setattr(cx.time, "process_time", tick("process", 1.0))
    monkeypatch.setattr(cx.time, "perf_counter", tick("wall", 3.0))
    monkeypatch.setattr(cx, "multi_head_attention", lambda *args, **kwargs: None)
    # Each timed call spans exactly one tick of the clock it is measured with.
    assert cx.time_forward([4], [8], h=2, repeats=2, budget_seconds=1e9).seconds[0, 0] == 1.0
    assert cx.time_forward([4], [8], h=2, repeats=2, budget_seconds=1e9, threads=2).seconds[0, 0] == 3.0


def test_time_forward_past_its_budget_still_fills_the_grid():
    t = cx.time_forward([4, 8], [8], h=2, repeats=3, budget_seconds=0.0)
    assert (t.seconds > 0).all()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"ns": [8], "d_models": [10], "h": 4}, "h: expected a divisor"),
        ({"ns": [], "d_models": [8], "h": 2}, "non-empty"),
        ({"ns": [0], "d_models": [8], "h": 2}, "ns: expected a positive integer"),
        ({"ns": [8], "d_models": [8], "h": 2, "repeats": 0}, "repeats"),
        ({"ns": [100_000], "d_models": [1024], "h": 16}, "FLOPs in total"),  # refused before any timing
    ],
)
def test_time_forward_rejects_bad_grids(kwargs, match):
    with pytest.raises(ValueError, match=match):
        cx.time_forward(**kwargs)


def test_fitted_rate_recovers_a_constant_rate():
    flops = np.array([[1e6, 4e6], [2e6, 8e6]])
    t = cx.Timings(np.array([1, 2]), np.array([8, 16]), 2, flops / 5e9, flops)
    assert cx.fitted_rate(t) == pytest.approx(5e9)


def test_memory_table_counts_h_n_squared_numbers():
    rows = cx.memory_table(10_000, [8, 12, 16], layers=12)
    for row, h in zip(rows, [8, 12, 16], strict=True):
        assert row["numbers"] == h * 10_000**2
        assert row["per_layer"] == 4 * h * 10_000**2
        assert row["per_model"] == 12 * row["per_layer"]
    assert cx.memory_table(100, [2], 1, dtype=np.float16)[0]["per_layer"] == 2 * 2 * 100**2
    with pytest.raises(ValueError, match="layers"):
        cx.memory_table(100, [2], 0)


def test_flop_curves_are_flop_count_at_each_n():
    curves = cx.flop_curves([3, 50], 16, 4)
    for j, n in enumerate([3, 50]):
        for part, value in cost.flop_count(n, n, 16, 4).items():
            assert curves[part][j] == value


def test_markdown_table_formats_counts():
    text = cx.markdown_table(["a", "b"], [(1234567, "x"), (np.int64(5), 2.5)])
    assert text.splitlines() == ["| a | b |", "|---|---|", "| 1,234,567 | x |", "| 5 | 2.5 |"]


def test_time_parts_reports_rates_consistent_with_the_flop_count():
    parts = cx.time_parts(32, 16, 4, repeats=1)
    lin, quad = cx.flop_coefficients(16, 4)
    assert parts["linear_seconds"] > 0 and parts["quadratic_seconds"] > 0
    assert parts["linear_rate"] * parts["linear_seconds"] == pytest.approx(lin * 32)
    assert parts["quadratic_rate"] * parts["quadratic_seconds"] == pytest.approx(quad * 32 * 32)
    with pytest.raises(ValueError, match="h: expected a divisor"):
        cx.time_parts(32, 16, 3)


@pytest.mark.parametrize(
    ("in_n", "in_d", "want"),
    [
        ({64: (1.9, 1.8), 256: (1.7, 1.6)}, (1.5, 1.7), "steeper than the FLOP count's for every width"),
        ({64: (1.80, 1.90), 256: (1.66, 1.67)}, (1.5, 1.7), "flatter at d_model = 64; about equal at d_model = 256"),
        ({64: (1.80, 1.90), 256: (1.56, 1.67)}, (1.8, 1.7), "flatter than the FLOP count's for every width"),
    ],
)
def test_slope_sentence_follows_the_run(in_n, in_d, want):
    text = cx.slope_sentence(in_n, in_d)
    assert want in text
    d_side = "steeper" if in_d[0] > in_d[1] else "flatter"
    assert text.endswith(f"the one in d_model {d_side} than the FLOP count's.")
