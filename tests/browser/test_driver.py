"""The browser driver's pure helpers (no browser needed)."""

from __future__ import annotations

import statistics

import pytest

from benchmarks import _lab


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:8888/lab", True),
        ("ws://127.0.0.1:8888/api/kernels/x/channels", True),
        ("http://localhost:1/static/x.js", True),
        ("http://[::1]:8888/api", True),
        ("data:image/png;base64,AAAA", True),
        ("blob:http://127.0.0.1:8888/1234", True),
        ("https://cdn.jsdelivr.net/npm/x.js", False),
        ("http://127.0.0.1.example.com/x", False),
        ("http://10.0.0.1/x", False),
        ("file:///etc/passwd", False),
    ],
)
def test_is_local(url, local):
    assert _lab.is_local(url) is local


def test_latency_rows_group_moves_by_explorer_and_skip_unchanged_moves():
    moves = [_lab.Move("a", "s", ms) for ms in (10.0, 30.0, 20.0, 400.0)]
    moves += [_lab.Move("b", "t", 5.0), _lab.Move("b", "t", None, ["no change"])]
    rows = {r["explorer"]: r for r in _lab.latency_rows([_lab.Visit("x.ipynb", moves=moves)])}
    assert rows["a"]["median_ms"] == statistics.median([10.0, 30.0, 20.0, 400.0]) == 25.0
    assert (rows["a"]["max_ms"], rows["a"]["moves"]) == (400.0, 4)
    assert (rows["b"]["median_ms"], rows["b"]["moves"]) == (5.0, 1)
    assert "a" in _lab.latency_table(list(rows.values())).splitlines()[1]


def test_latency_rows_keep_sliders_and_other_controls_apart():
    moves = [_lab.Move("a", "n", 10.0), _lab.Move("a", "mode", 50.0, kind="toggle buttons")]
    visit = _lab.Visit("x.ipynb", moves=moves)
    rows, others = _lab.latency_rows([visit]), _lab.latency_rows([visit], sliders=False)
    assert [(r["explorer"], r["median_ms"]) for r in rows] == [("a", 10.0)]
    assert [(r["explorer"], r["median_ms"]) for r in others] == [("a", 50.0)]
    lines = _lab.latency_table(rows, others).splitlines()
    assert lines[1].split()[:2] == ["a", "10"]
    assert lines[-1].split()[:2] == ["a", "50"]


def test_problems_are_reported_by_kind_of_control():
    moves = [_lab.Move("a", "n", None, ["stuck"]), _lab.Move("a", "mode", None, ["no change"], kind="toggle buttons")]
    visit = _lab.Visit("x.ipynb", moves=moves, unchangeable=["a / widget-radio: cannot change it"])
    assert visit.slider_problems == ["a / n: stuck"]
    assert visit.other_control_problems == ["a / mode: no change", "a / widget-radio: cannot change it"]


@pytest.mark.parametrize(
    ("name", "source", "expected"),
    [
        (None, "wc.cross_attention_explorer()", "09_x:cross_attention_explorer"),
        (None, "head_browser(\n    model=model,\n)", "09_x:head_browser"),
        (None, "e = m.widgets.cost.CostExplorer(d_model=8)", "09_x:CostExplorer"),
        (None, "explorer = CostExplorer()\nexplorer.widget", "09_x:cell 3"),
        ("CostExplorer", "anything()", "09_x:CostExplorer"),
    ],
)
def test_explorer_name_prefers_the_dom_class_then_the_cells_last_call(name, source, expected):
    cells = [{"source": ""}] * 3 + [{"source": source}]
    assert _lab.explorer_name("09_x.ipynb", {"name": name, "cell": 3}, cells) == expected


def test_percentile_interpolates_like_numpy():
    values = [40.0, 10.0, 30.0, 20.0, 100.0]
    # numpy.percentile(values, 90) with linear interpolation: rank 3.6 between 40 and 100
    assert _lab.percentile(values, 90) == pytest.approx(40.0 + 0.6 * 60.0)
    assert _lab.percentile(values, 50) == statistics.median(values)
    assert _lab.percentile([7.0], 90) == 7.0


def test_the_table_reports_the_90th_percentile_over_every_slider_move():
    moves = [_lab.Move("a", "s", float(ms)) for ms in range(10, 110, 10)] + [_lab.Move("b", "t", 500.0)]
    rows = _lab.latency_rows([_lab.Visit("x.ipynb", moves=moves)])
    assert {r["explorer"]: r["p90_ms"] for r in rows} == {"a": pytest.approx(91.0), "b": 500.0}
    every = _lab.pooled(rows)
    assert every["moves"] == 11 and every["p90_ms"] == pytest.approx(100.0)  # 10..100 and 500: rank 9 of 0..10
    line = next(x for x in _lab.latency_table(rows).splitlines() if x.startswith("every slider move"))
    assert line.split()[3:5] == ["60", "100"]  # median and p90


def image(cell, shown, declared=None, pixels=800, explorer=False):
    return {"cell": cell, "explorer": explorer, "shown": shown, "declared": declared, "pixels": pixels}


def test_an_image_shown_beyond_its_natural_css_size_is_a_problem():
    at_1400 = [
        image(1, 950, declared=950, pixels=1900),  # retina, at its size
        image(2, 964, declared=464, pixels=928, explorer=True),  # stretched by its box: 2.08x
        image(3, 968, pixels=1510),  # a wide 1x figure shrunk: 0.64x
        image(4, 800, pixels=800),  # no declared width: natural size is its pixels
    ]
    problems = _lab.Visit("x.ipynb", images={1400: at_1400}).image_size_problems
    assert [p.split(":")[0] for p in problems] == ["cell 2", "cell 3"]
    assert "2.08x" in problems[0] and "0.64x" in problems[1]


def test_an_explorer_that_widens_with_the_window_beyond_its_natural_size_is_reported():
    # 4: scaled down to fit the narrower window, back at its natural 880 CSS px in the wider one
    narrow = [image(1, 700, 700, explorer=True), image(2, 900, 900, explorer=True), image(3, 900, 900),
              image(4, 764, 880, explorer=True)]  # fmt: skip
    wide = [image(1, 700, 700, explorer=True), image(2, 1300, 900, explorer=True), image(3, 1300, 900),
            image(4, 880, 880, explorer=True)]  # fmt: skip
    growing = _lab.Visit("x.ipynb", images={1200: narrow, 1600: wide}).growing_explorers
    assert len(growing) == 1 and growing[0].startswith("cell 2")


def fit(cell, shown, natural, area=592, height=None, over=0, scroll=0):
    aspect = 0.5
    return {"cell": cell, "name": "x", "shown": shown, "natural": natural, "area": area, "aspect": aspect,
            "shownHeight": shown * aspect if height is None else height, "figureOver": over, "explorerOver": 0,
            "scroll": scroll}  # fmt: skip


def test_an_explorer_that_does_not_fit_a_laptop_window_is_reported():
    laptop = [
        fit(1, 588, 880),  # scaled down to the area: fine
        fit(2, 500, 500),  # fits at its natural size: fine
        fit(3, 880, 880, over=290, scroll=292),  # cut off behind a sideways scroll
        fit(4, 400, 880),  # shrunk although the area is 592 px
        fit(5, 588, 880, height=400),  # squeezed out of shape
        fit(6, 590, 500),  # stretched
    ]
    problems = _lab.Visit("x.ipynb", laptop=laptop).laptop_problems
    assert [p.split(" x:")[0] for p in problems] == ["cell 3", "cell 3", "cell 4", "cell 5", "cell 6"]


def test_cut_off_labels_and_toggle_buttons_below_their_label_are_reported():
    laptop = [
        fit(1, 500, 500) | {"cut": [], "stacked": []},  # fine
        fit(2, 500, 500) | {"cut": ['"weights seed" (86 px of text in 80)'], "stacked": ['"view"']},
    ]
    problems = _lab.Visit("x.ipynb", laptop=laptop).laptop_problems
    assert problems == [
        'cell 2 x: label cut off: "weights seed" (86 px of text in 80)',
        'cell 2 x: toggle buttons below their label "view"',
    ]


def test_the_benchmark_compares_pixel_ratios_explorer_by_explorer():
    from benchmarks.browser import comparison

    one = _lab.Visit("x.ipynb", moves=[_lab.Move("a", "s", ms) for ms in (10.0, 20.0, 30.0)])
    moves = [_lab.Move("a", "s", ms) for ms in (40.0, 50.0, 60.0)] + [_lab.Move("b", "t", 9.0)]
    two = _lab.Visit("x.ipynb", moves=moves)
    lines = comparison({1: [one], 2: [two]}).splitlines()
    assert lines[0].split()[-8:] == ["1x", "median", "1x", "p90", "2x", "median", "2x", "p90"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:-1]}
    assert rows["a"] == ["20", "28", "50", "58"]  # median and p90 at 1x, then at 2x
    assert rows["b"] == ["-", "-", "9", "9"]  # measured at one ratio only
    assert lines[-1].split()[-4:] == ["20", "28", "45", "57"]  # every slider move, pooled per ratio
