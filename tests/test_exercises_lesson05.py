"""Lesson 5's exercise checks accept the solutions and reject typical wrong answers with a hint."""

import numpy as np
import pytest

from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson05 as ex


def test_concat_shape():
    assert ex.check_concat_shape((7, 512))
    assert ex.check_concat_shape([7, 512])
    for wrong in (None, (7, 64), (8, 7, 64), (56, 64), (512, 7), "7x512", 3):
        result = ex.check_concat_shape(wrong)
        assert not result and result.message


def test_recover_head():
    def right(concat, i, h):
        d_k = concat.shape[-1] // h
        return concat[..., i * d_k : (i + 1) * d_k]

    def off_by_one(concat, i, h):
        d_k = concat.shape[-1] // h
        return concat[..., (i + 1) * d_k : (i + 2) * d_k] if i + 1 < h else concat[..., :d_k]

    def fixed_width(concat, i, h):
        return concat[..., i * 4 : (i + 1) * 4]

    def crashes(concat, i, h):
        raise RuntimeError("boom")

    def returns_none(concat, i, h):
        return None

    assert ex.check_recover_head(right)
    for wrong in (None, off_by_one, fixed_width, crashes, returns_none, 42):
        result = ex.check_recover_head(wrong)
        assert not result and result.message
    assert "RuntimeError" in ex.check_recover_head(crashes).message


def test_recover_head_names_the_axis_when_rows_are_sliced():
    def rows(concat, i, h):
        d_k = concat.shape[-1] // h
        return concat[i * d_k : (i + 1) * d_k]  # tokens i*d_k.. instead of head i's columns

    def too_wide(concat, i, h):
        return concat[:, i:]

    message = ex.check_recover_head(rows).message
    assert "you sliced rows, which are tokens" in message and "the last axis: concat[..., start:stop]" in message
    message = ex.check_recover_head(too_wide).message
    assert "The last axis holds the features" in message and "sliced rows" not in message


def test_recover_head_says_a_head_is_one_block_when_every_h_th_column_is_taken():
    def strided(concat, i, h):
        return concat[..., i::h]  # every h-th column: the right shape, the wrong columns

    assert strided(np.zeros((5, 8)), 0, 2).shape == (5, 4)  # as wide as head 0, so no shape hint can catch it
    message = ex.check_recover_head(strided).message
    assert message.startswith("For h=2, head 0: these are every h-th column (what concat[..., i::h]"), message
    assert "one contiguous block of d_v = 4 columns, starting at column i × d_v = 0" in message
    assert "d_k" not in message

    def reshaped(concat, i, h):  # (n, d_v, h): the same columns, another way to write the mistake
        return concat.reshape(*concat.shape[:-1], concat.shape[-1] // h, h)[..., i]

    assert ex.check_recover_head(reshaped).message == message


def test_recover_head_speaks_of_d_v_as_the_lesson_does():
    def off_by_one(concat, i, h):
        d_v = concat.shape[-1] // h
        return concat[..., (i + 1) * d_v : (i + 2) * d_v] if i + 1 < h else concat[..., :d_v]

    assert ex.check_recover_head(off_by_one).message.endswith("Head i starts at column i × d_v.")
    assert "d_k" not in (ex.check_recover_head.__doc__ or "")


@pytest.mark.parametrize(
    "cut",
    [
        lambda c, i, h: c[i * (c.shape[-2] // h) : (i + 1) * (c.shape[-2] // h)],  # h equal runs of tokens
        lambda c, i, h: np.array_split(c, h)[i],  # axis 0 unless told
        lambda c, i, h: np.array_split(c, h, axis=-2)[i],
    ],
)
def test_recover_head_names_the_axis_when_rows_of_another_size_are_cut(cut):
    # the first case, one sequence (5, 8) with h = 2: head 0 is its 4 first columns, all 5 rows
    got = cut(np.zeros((5, 8)), 0, 2)
    assert got.shape[-1] == 8 and got.shape[0] < 5  # every column kept, tokens cut
    message = ex.check_recover_head(cut).message
    assert message.startswith(f"For h=2, head 0: expected shape (5, 4), got {got.shape}."), message
    assert "you cut the rows, which are tokens (axis 0)" in message and "concat[..., start:stop]" in message


def test_recover_head_names_the_axis_when_np_split_cuts_the_rows_of_one_sequence():
    def rows(concat, i, h):
        return np.split(concat, h)[i]  # axis 0: 5 tokens do not split into 2 equal parts

    with pytest.raises(ValueError, match="does not result in an equal division"):  # numpy's only words
        rows(np.zeros((5, 8)), 0, 2)
    message = ex.check_recover_head(rows).message
    assert message.startswith("For h=2, head 0: your function raised ValueError"), message
    assert "np.split cuts axis 0 unless told otherwise: the rows, which are tokens" in message and "axis=-1" in message


def test_recover_head_names_the_batch_axis_when_a_batch_loses_sequences():
    def first_sequence(concat, i, h):
        d_k = concat.shape[-1] // h
        return concat[:, i * d_k : (i + 1) * d_k] if concat.ndim == 2 else concat[:1]  # right on one sequence

    message = ex.check_recover_head(first_sequence).message
    assert message.startswith("For a batch (3, 5, 24), h=4, head 0: expected shape (3, 5, 6), got (1, 5, 24)."), message
    assert "you cut the sequences of the batch (axis 0)" in message


def test_recover_head_needs_the_last_axis_on_a_batch():
    def two_d(concat, i, h):
        d_k = concat.shape[-1] // h
        return concat[:, i * d_k : (i + 1) * d_k]  # right for one sequence, the tokens axis on a batch

    message = ex.check_recover_head(two_d).message
    assert message.startswith("For a batch (3, 5, 24), h=4, head 0:") and "concat[..., start:stop]" in message


@pytest.mark.parametrize("cut", [lambda c, h: np.hsplit(c, h), lambda c, h: np.split(c, h, axis=1)])
def test_recover_head_names_the_axis_when_np_split_cuts_the_tokens_of_a_batch(cut):
    def split_heads(concat, i, h):
        return cut(concat, h)[i]  # right for one sequence; on a batch, axis 1 holds the 5 tokens

    with pytest.raises(ValueError, match="does not result in an equal division"):  # numpy's only words
        cut(np.zeros((3, 5, 24)), 4)
    message = ex.check_recover_head(split_heads).message
    assert message.startswith("For a batch (3, 5, 24), h=4, head 0: your function raised ValueError"), message
    assert "the features are the last axis: axis=-1" in message
    assert "axis=-1" not in ex.check_recover_head(lambda c, i, h: c[..., 99]).message  # other errors: no guess


def test_average_map():
    # independent: the average of 3 heads times P, against concat @ answer, on new random heads
    w_o = np.vstack([ex.AVG_P / 3] * 3)
    heads = np.random.default_rng(0).normal(size=(3, 4, 2))
    np.testing.assert_allclose(np.hstack(heads) @ w_o, heads.mean(axis=0) @ ex.AVG_P)
    assert ex.check_average_map(w_o)
    assert ex.check_average_map(w_o.tolist())
    hints = {
        "sum of the heads": np.vstack([ex.AVG_P] * 3),
        "Expected shape (6, 4)": ex.AVG_P,
        "not every block": np.vstack([ex.AVG_P, np.ones((4, 4))]),
        "other blocks": np.vstack([ex.AVG_P / 3, np.zeros((4, 4))]),
        "which block does each head need": np.ones((6, 4)),
        "Replace None": None,
        "Expected a matrix": "w_o",
    }
    for hint, wrong in hints.items():
        result = ex.check_average_map(wrong)
        assert not result and hint in result.message, (hint, result.message)


SHAPE = "a shape, as a tuple like (rows, columns)"


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (None, f"Replace None with {SHAPE}."),
        (3, f"Expected {SHAPE}, got int."),
        ("75", f"Expected {SHAPE}, got str."),  # not read digit by digit as the shape (7, 5)
        ((7.9, 512), f"Expected {SHAPE}, whole numbers only; got (7.9, 512)."),  # not truncated to (7, 512)
        ((True, 512), f"Expected {SHAPE}, whole numbers only; got (True, 512)."),
    ],
)
def test_concat_shape_says_what_was_expected_and_what_arrived(answer, message):
    assert ex.check_concat_shape(answer) == Feedback(False, message)


@pytest.mark.parametrize("answer", [(7, 512), [7, 512], np.array([7, 512]), (np.int64(7), 512)])
def test_concat_shape_accepts_any_sequence_of_whole_numbers(answer):
    assert ex.check_concat_shape(answer).correct


def test_concat_shape_of_one_head_gets_its_hint():
    feedback = ex.check_concat_shape((7, 64))
    assert feedback == Feedback(False, "That is one head's output. The concatenation puts all h of them side by side.")


@pytest.mark.parametrize("check", [ex.check_concat_shape, ex.check_recover_head, ex.check_average_map])
def test_none_gets_a_friendly_hint(check):
    assert "Replace None" in check(None).message
