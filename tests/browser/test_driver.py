"""The browser driver's pure helpers (no browser needed)."""

from __future__ import annotations

import statistics

import pytest

from mha_lesson.bench import _lab


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
