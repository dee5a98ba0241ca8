"""Lesson 7's exercise checks: right answers pass, wrong answers and the None placeholder get a specific hint."""

import numpy as np
import pytest

import mha_lesson as mha
from mha_lesson.demos import connections as conn
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson07 as ex

# --- exercise 1: which rows change -------------------------------------------------------------------------

RIGHT = {"causal": [3, 4, 5, 6, 7], "no mask": list(range(8)), "cross": [3]}


def _moved_rows(mask, cross):
    """Rows that move when token 3 of 8 changes, computed here with explicit loops over queries (no library mask)."""
    rng = np.random.default_rng(1)
    y, enc = rng.normal(size=(8, 6)), rng.normal(size=(5, 6))
    wq, wk, wv = 0.3 * rng.normal(size=(3, 6, 6))  # small weights: no row saturates onto one key
    y2 = y.copy()
    y2[3] += 1.0

    def run(z):
        kv = enc if cross else z
        rows = []
        for i in range(len(z)):
            keys = range(i + 1) if mask else range(len(kv))
            s = np.array([(z[i] @ wq) @ (kv[j] @ wk) for j in keys])
            a = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
            rows.append(sum(a_j * (kv[j] @ wv) for a_j, j in zip(a, keys, strict=True)))
        return np.array(rows)

    return set(np.flatnonzero(np.abs(run(y2) - run(y)).max(axis=-1) > 1e-12).tolist())


def test_changed_rows_truth_agrees_with_an_independent_computation():
    assert ex.changed_rows("causal") == _moved_rows(True, False) == set(RIGHT["causal"])
    assert ex.changed_rows("no mask") == _moved_rows(False, False) == set(RIGHT["no mask"])
    assert ex.changed_rows("cross") == _moved_rows(False, True) == set(RIGHT["cross"])
    with pytest.raises(ValueError, match="setting"):
        ex.changed_rows("sideways")


def test_changed_rows_exercise():
    assert ex.check_changed_rows(RIGHT)
    assert ex.check_changed_rows({"causal": range(3, 8), "no mask": set(range(8)), "cross": (3,)})
    hints = {
        "causal": ([0, 1, 2, 3], "rows 0-2 come before token 3"),
        "no mask": ([3, 4, 5, 6, 7], "every query attends to every key"),
        "cross": ([3, 4, 5, 6, 7], "reads only the encoder"),
    }
    for setting, (rows, hint) in hints.items():
        feedback = ex.check_changed_rows({**RIGHT, setting: rows})
        assert not feedback.correct and hint in feedback.message, feedback.message
    assert "may attend to itself" in ex.check_changed_rows({**RIGHT, "causal": [4, 5, 6, 7]}).message
    assert "every later query" in ex.check_changed_rows({**RIGHT, "causal": [3]}).message
    assert "Replace None" in ex.check_changed_rows(None).message
    assert "exactly the keys" in ex.check_changed_rows({"causal": [3]}).message
    assert "row numbers from 0 to 7" in ex.check_changed_rows({**RIGHT, "cross": [9]}).message
    assert "row numbers" in ex.check_changed_rows({**RIGHT, "cross": "3"}).message


# --- exercise 2: the left-padded decoder mask --------------------------------------------------------------


def _explicit_left_padded_mask():
    """(3, 1, 6, 6) with loops: query i of sequence b may see key j when j <= i and j is one of its last tokens."""
    m = np.zeros((3, 1, 6, 6), dtype=bool)
    for b, length in enumerate(ex.LENGTHS):
        for i in range(6):
            for j in range(6):
                m[b, 0, i, j] = j <= i and j >= 6 - length
    return m


def test_decoder_mask_exercise():
    want = _explicit_left_padded_mask()
    np.testing.assert_array_equal(ex.decoder_mask(), want)
    assert ex.check_decoder_mask(want) and ex.check_decoder_mask(want[:, 0:1])
    # padded query rows may hold anything: hiding them too is also right
    assert ex.check_decoder_mask(want & want.any(axis=-1, keepdims=True))
    causal = mha.causal_mask(6)
    cases = [
        (~want, "True means may attend"),
        (causal, "the padding comes first here"),
        (causal & mha.padding_mask(list(ex.LENGTHS), 6), "padding_mask assumes the padding comes last"),
        (ex.left_padding_mask(), "tokens after it"),
        (causal.T & ex.left_padding_mask(), "lower triangle"),
        (want[:, 0], "a 3-D mask is read as (h, n_q, n_kv)"),
        (want.astype(int), "got dtype int64"),
        (np.ones((6, 6), dtype=bool), "Build it from two parts"),
    ]
    for mask, hint in cases:
        feedback = ex.check_decoder_mask(mask)
        assert not feedback.correct and hint in feedback.message, (hint, feedback.message)
    assert "Replace None" in ex.check_decoder_mask(None).message


def test_the_right_mask_leaves_padded_queries_with_zero_weights():
    x = np.random.default_rng(0).normal(size=(3, 6, 8))
    _, w = mha.multi_head_attention(x, x, x, mha.init_params(8, ex.H, seed=0), ex.decoder_mask())
    for b, length in enumerate(ex.LENGTHS):
        assert not w[b, :, : 6 - length].any()  # the padded queries: no key, zero weights, no NaN
        np.testing.assert_allclose(w[b, :, 6 - length :].sum(-1), 1)


# --- exercise 3: the cross-attention call (moved from lesson 12) -------------------------------------------


def test_cross_attention_exercise():
    y, x = conn.translation_inputs()
    p = conn.translation_params()
    assert ex.check_cross_attention(mha.multi_head_attention(y, x, x, p)[0])
    assert ex.check_cross_attention(mha.multi_head_attention(y, x, x, p))  # the (output, weights) pair
    swapped = ex.check_cross_attention(mha.multi_head_attention(x, y, y, p)[0])
    assert not swapped and "6 rows" in swapped.message
    assert "self-attention" in ex.check_cross_attention(mha.multi_head_attention(y, y, y, p)[0]).message
    assert not ex.check_cross_attention(mha.multi_head_attention(y, x, x, p)[0] + 1.0)
    assert not ex.check_cross_attention(mha.multi_head_attention(y[:2], x, x, p)[0])
    assert "Replace None" in ex.check_cross_attention(None).message
    with pytest.raises(ValueError, match="v"):  # the lesson's failing call fails as the lesson shows
        mha.multi_head_attention(y, x, y, p)


OUTPUT = "the output of your multi_head_attention call"


@pytest.mark.parametrize(
    ("check", "answer", "message"),
    [
        (ex.check_cross_attention, None, f"Replace None with {OUTPUT}."),
        (ex.check_cross_attention, "out", f"Expected {OUTPUT}, got str."),
        (
            ex.check_cross_attention,
            np.zeros((2, 8)),
            "Expected one row per decoder token and d_model columns, got shape (2, 8).",
        ),
        (ex.check_decoder_mask, "mask", "Expected your boolean mask, got str."),
    ],
)
def test_bad_input_says_what_was_expected_and_what_arrived(check, answer, message):
    assert check(answer) == Feedback(False, message)
