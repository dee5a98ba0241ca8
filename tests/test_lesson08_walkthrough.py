"""Lesson 8: the printing helpers round-trip the trace's numbers, and the lesson's stated claims hold."""

import contextlib
import io
import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import mha_lesson as mha
from mha_lesson.demos import walkthrough as wt
from mha_lesson.demos.examples import TOKENS, worked_example

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@pytest.fixture(scope="module")
def example():
    x, params = worked_example()
    out, weights, trace = mha.multi_head_attention_loop(x, x, x, params, return_trace=True)
    return x, params, out, weights, trace


def _printed(fn, *args, **kwargs) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn(*args, **kwargs)
    return buf.getvalue()


def _matrix_numbers(text: str) -> np.ndarray:
    """The numbers between the brackets of each printed row."""
    rows = re.findall(r"\[(.*?)\]", text)
    return np.array([[float(v) for v in NUMBER.findall(r)] for r in rows])


@given(arrays(np.float64, st.tuples(st.integers(1, 5), st.integers(1, 6)), elements=st.floats(-100, 100)))
def test_format_matrix_round_trips_to_three_decimals(a):
    assert np.allclose(_matrix_numbers(wt.format_matrix(a)), a, atol=5e-4 + 1e-9)


def test_whole_numbers_print_without_decimals_and_labels_align():
    text = wt.format_matrix(np.array([[0.0, 2.0], [4.0, 10.0]]), rows=["a", "bbb"], cols=["x", "y"])
    assert text.splitlines() == ["       x  y", "  a  [ 0  2]", "bbb  [ 4 10]"]
    assert wt.format_matrix(np.array([0.5, 1.0])) == "[0.500 1.000]"


@pytest.mark.parametrize(
    "kwargs, match", [({"rows": ["a"]}, "rows: expected 2"), ({"cols": ["a"]}, "cols: expected 2")]
)
def test_format_matrix_checks_label_counts(kwargs, match):
    with pytest.raises(ValueError, match=match):
        wt.format_matrix(np.eye(2), **kwargs)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        wt.format_matrix(np.zeros((2, 2, 2)))


def _head_numbers(text: str) -> list[np.ndarray]:
    """The numbers of each head's block, from rows printed side by side: '[...]    [...]'."""
    rows = [re.findall(r"\[(.*?)\]", line) for line in text.splitlines() if "[" in line]
    return [np.array([[float(v) for v in NUMBER.findall(r[i])] for r in rows]) for i in range(len(rows[0]))]


def test_show_trace_prints_every_head_side_by_side_with_its_shape_and_numbers(example):
    *_, trace = example
    for name in ("Q_i", "scores", "weights", "head_i"):
        text = _printed(wt.show_trace, trace, name, rows=TOKENS)
        lines = text.strip().splitlines()
        assert lines[0].startswith(f"{name}   shape {trace[name][0].shape} per head")
        labels = [f"{name[:-2]}_{i}" if name.endswith("_i") else f"head {i}" for i in range(2)]
        assert re.split(r"\s{2,}", lines[1].strip()) == labels  # each head's title, in order
        assert sum(line.startswith("fish") for line in lines) == 1  # row labels print once, on the left
        for got, want in zip(_head_numbers(text), trace[name], strict=True):
            assert np.allclose(got, want, atol=5e-4)
    text = _printed(wt.show_trace, trace, "output")
    assert text.startswith("output   shape (4, 8)")
    assert np.allclose(_matrix_numbers(text), trace["output"], atol=5e-4)
    with pytest.raises(ValueError, match="name: expected one of"):
        wt.show_trace(trace, "Q")


@pytest.mark.parametrize("name", ["Q_i", "K_i", "V_i", "head_i"])
def test_each_heads_block_prints_under_its_column_names(example, name):
    """Q_0 ... V_1 and head_0, head_1 print with a header row naming head i's columns h{i}.0 ... h{i}.{d_k - 1}."""
    x, params, *_, trace = example
    lines = _printed(wt.show_trace, trace, name, rows=TOKENS).strip().splitlines()
    header = lines[2]  # under the shape line and the heads' titles
    assert header.split() == [f"h{i}.{j}" for i in range(params.h) for j in range(params.d_k)]
    full = {"Q_i": x @ params.w_q, "K_i": x @ params.w_k, "V_i": x @ params.w_v}.get(name)
    for i, got in enumerate(_head_numbers("\n".join(lines))):
        want = full[:, i * params.d_k : (i + 1) * params.d_k] if full is not None else trace[name][i]
        assert np.allclose(got, want, atol=5e-4)  # the numbers under h{i}.j: column j of head i's block
    # each number sits under its column's label (right-aligned, as format_matrix pads both)
    heads = [m.end() for m in re.finditer(r"h\d\.\d", header)]
    for row in lines[3:]:
        cells = [m.end() for m in re.finditer(r"-?\d+\.?\d*", row.split("  ", 1)[1])]
        offset = len(row.split("  ", 1)[0]) + 2
        assert [offset + c for c in cells] == heads


def test_side_by_side_puts_each_title_over_its_block_and_checks_its_input():
    left, right = wt.format_matrix(np.eye(2), rows=["a", "b"]), wt.format_matrix(2 * np.eye(2))
    assert wt.side_by_side([left, right], ["L", "R"], gap=2).splitlines() == [
        "   L      R",  # each title over its block's "["
        "a  [1 0]  [2 0]",
        "b  [0 1]  [0 2]",
    ]
    with pytest.raises(ValueError, match="titles: expected 2"):
        wt.side_by_side([left, right], ["L"])
    with pytest.raises(ValueError, match="blocks: expected the same number of lines"):
        wt.side_by_side([left, "[1]"], ["L", "R"])


def test_show_heads_any_other_matrix_with_column_indices():
    text = _printed(wt.show, "w", np.array([[1.0, 2.0, 3.0]]), rows=["a"])
    assert text.splitlines()[1].split() == ["0", "1", "2"] and "[1 2 3]" in text
    assert _printed(wt.show, "w", np.eye(2), cols=["p", "q"]).splitlines()[1].split() == ["p", "q"]


@given(st.lists(st.integers(-9, 9), min_size=1, max_size=8), st.integers(0, 10**6))
def test_dot_terms_writes_the_products_and_their_sum(a, seed):
    b = np.random.default_rng(seed).integers(-9, 10, len(a))
    text = wt.dot_terms(np.array(a, float), b.astype(float))
    terms, total = text.split(" = ")
    products = [tuple(map(float, t.split("·"))) for t in terms.split(" + ")]
    assert products == list(zip(map(float, a), map(float, b), strict=True))
    assert float(total) == float(np.dot(a, b))


# --- the lesson's claims ----------------------------------------------------------------------------------
def test_head_blocks_are_column_slices_of_q_k_v(example):
    x, params, *_, trace = example
    for i in range(params.h):
        cols = slice(i * params.d_k, (i + 1) * params.d_k)
        for name, w in (("Q_i", params.w_q), ("K_i", params.w_k), ("V_i", params.w_v)):
            assert np.array_equal(trace[name][i], (x @ w)[:, cols])


def test_scores_and_scaled_scores_are_whole_numbers(example):
    *_, trace = example
    assert math.sqrt(trace["Q_i"][0].shape[1]) == 2
    for i in range(2):
        for name in ("scores", "scaled_scores"):
            assert np.array_equal(trace[name][i], np.round(trace[name][i]))


def test_softmax_by_hand_equals_the_trace(example):
    *_, trace = example
    row = trace["scaled_scores"][0][1]
    e = np.exp(row)
    assert list(row) == [0, 2, 0, 2]
    assert np.allclose(e / e.sum(), trace["weights"][0][1])


def test_the_two_heads_attend_as_the_lesson_says(example):
    *_, weights, _ = example
    cat, fish = TOKENS.index("cat"), TOKENS.index("fish")
    # Head 0: cat and fish look at each other (and at themselves) equally; the and ate most at themselves.
    for q in (cat, fish):
        assert weights[0, q, cat] == weights[0, q, fish] == weights[0, q].max()
    for q in (TOKENS.index("the"), TOKENS.index("ate")):
        assert weights[0, q].argmax() == q and weights[0, q, q] < 0.5
    # Head 1: every token looks at the previous one; 'the' has none and spreads uniformly.
    assert np.allclose(weights[1, 0], 0.25)
    assert [int(weights[1, p].argmax()) for p in range(1, 4)] == [0, 1, 2]


def test_concat_output_and_vectorised_agree_with_the_loop(example):
    x, params, out, weights, trace = example
    assert np.array_equal(trace["concat"], np.hstack(trace["head_i"]))
    assert np.allclose(trace["output"], sum(trace["head_i"][i] @ params.w_o_head(i) for i in range(2)))
    vec_out, vec_weights = mha.multi_head_attention(x, x, x, params)
    assert np.abs(vec_out - out).max() < 1e-12 and np.abs(vec_weights - weights).max() < 1e-12


def test_worked_head_output_entry(example):
    *_, trace = example
    by_hand = sum(w * v for w, v in zip(trace["weights"][0][1], trace["V_i"][0], strict=True))
    assert np.allclose(by_hand, trace["head_i"][0][1])


def test_dot_terms_with_decimals_prints_like_the_matrices_and_rounds_the_exact_sum(example):
    *_, params, _, _, trace = example
    concat_cat, w_o_col = trace["concat"][1], params.w_o[:, 0]
    text = wt.dot_terms(concat_cat, w_o_col)
    terms, total = text.split(" = ")
    # The concat row has decimals, so every one of its numbers has exactly 3 (0.060, not 0.06); W^O stays whole.
    assert [t.split("·")[0] for t in terms.split(" + ")] == [f"{v:.3f}" for v in concat_cat]
    assert [t.split("·")[1] for t in terms.split(" + ")] == [str(int(v)) for v in w_o_col]
    assert total == f"{concat_cat @ w_o_col:.3f}"


def test_the_lessons_rounding_example_differs_in_the_last_digit(example):
    # The lesson warns that sums of printed numbers can be off by one in the last digit, and shows this case.
    *_, trace = example
    w_cat = trace["weights"][0][1]
    assert round(w_cat[1], 3) + round(w_cat[3], 3) == pytest.approx(0.880)
    assert f"{w_cat[1] + w_cat[3]:.3f}" == "0.881" == wt.format_matrix(trace["head_i"][0][1]).strip("[]").split()[0]


def test_k_is_x_v_is_the_word_features_twice_and_w_o_adds_the_heads_as_the_lesson_says(example):
    # Section 1 prints only Q because K and V are nothing new; section 5 reads the output as the heads' sum and head 1.
    x, params, out, _, trace = example
    word = x[:, :4]  # features 0-3: noun, verb, det, animal
    assert np.array_equal(x @ params.w_k, x) and np.array_equal(x @ params.w_v, np.hstack([word, word]))
    head_0, head_1 = trace["head_i"]
    assert np.allclose(out[:, :4], head_0 + head_1) and np.allclose(out[:, 4:], head_1)
