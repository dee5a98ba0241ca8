"""The capstone check: a right from-scratch solution passes; each typical wrong one fails in the right case, named.

The solutions below are written as a learner would, from numpy alone (mha.softmax for the one subtle step), so
the check is tested against code that shares nothing with the library it compares to.
"""

import numpy as np
import pytest

import mha_lesson as mha
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson15 as ex


def solution(
    *,
    scale="d_k",
    mask_mode="-inf",
    split_transpose=True,
    w_o=True,
    kv_from_q=False,
    own_softmax=False,
    transpose_with_T=False,
    axis=-1,
    return_pair=True,
):
    """A learner's multi_head_attention; every keyword but the defaults plants one mistake."""

    def fn(q, k, v, params, mask=None):
        h = params.h
        d_k = params.d_model // h
        if kv_from_q:
            k = v = q

        def split(x):
            if split_transpose:
                return x.reshape(*x.shape[:-1], h, d_k).swapaxes(-3, -2)
            return x.reshape(*x.shape[:-2], h, x.shape[-2], d_k)

        Q, K, V = split(q @ params.w_q), split(k @ params.w_k), split(v @ params.w_v)
        K_t = K.T if transpose_with_T else K.swapaxes(-1, -2)
        scores = Q @ K_t / {"d_k": np.sqrt(d_k), "d_model": np.sqrt(params.d_model), "none": 1.0}[scale]
        if mask is not None:
            if mask_mode == "-inf":
                scores = np.where(mask, scores, -np.inf)
            elif mask_mode == "flipped":
                scores = np.where(mask, -np.inf, scores)
            elif mask_mode == "zero":
                scores = scores * mask
        if own_softmax:  # the textbook formula: a row of -inf gives 0 / 0 = NaN
            e = np.exp(scores - scores.max(axis=axis, keepdims=True))
            weights = e / e.sum(axis=axis, keepdims=True)
        else:
            weights = mha.softmax(scores, axis=axis)
        heads = weights @ V
        concat = heads.swapaxes(-3, -2).reshape(*heads.shape[:-3], heads.shape[-2], h * d_k)
        out = concat @ params.w_o if w_o else concat
        return (out, weights) if return_pair else out

    return fn


def test_a_right_solution_and_the_library_itself_pass():
    for fn in (solution(), mha.multi_head_attention):
        feedback = ex.check_capstone(fn)
        assert isinstance(feedback, Feedback) and feedback.correct, feedback.message
        assert f"all {len(ex.CASES)} cases" in feedback.message


def test_the_cases_cover_shapes_masks_a_batch_cross_attention_and_a_blind_query():
    names = " | ".join(c.name for c in ex.CASES)
    for fragment in ("one head", "h = 4", "causal mask", "batch of 3", "cross-attention", "may see no key"):
        assert fragment in names
    cross = next(c for c in ex.CASES if "cross" in c.name)
    assert cross.q.shape[-2] != cross.k.shape[-2] and cross.k is cross.v
    batch = next(c for c in ex.CASES if "batch" in c.name)
    assert batch.q.ndim == 3 and batch.mask.shape == (3, 1, 1, 5)
    blind = ex.CASES[-1]
    assert not blind.mask[2].any()
    _, weights = mha.multi_head_attention(blind.q, blind.k, blind.v, blind.params, blind.mask)
    assert not weights[:, 2].any()  # the library's convention the check asks for: zero weights, not NaN


@pytest.mark.parametrize(
    ("mistake", "case", "explanation"),
    [
        ({"scale": "none"}, 1, "not divided by √d_k"),
        ({"scale": "d_model"}, 1, "use √d_k"),
        ({"split_transpose": False}, 1, "reshape alone"),
        ({"w_o": False}, 1, "output projection W^O"),
        ({"axis": -2}, 1, "softmax runs over the queries"),
        ({"mask_mode": "flipped"}, 4, "wrong way round"),
        ({"mask_mode": "zero"}, 4, "set them to -inf"),
        ({"mask_mode": "ignored"}, 4, "never applied"),
        ({"kv_from_q": True}, 6, "keys and values must come from k and v"),
        ({"own_softmax": True}, 7, "NaN weights"),
    ],
)
def test_each_mistake_fails_first_in_its_case_and_is_named(mistake, case, explanation):
    feedback = ex.check_capstone(solution(**mistake))
    assert not feedback.correct
    assert feedback.message.startswith(f"case {case} of {len(ex.CASES)}, {ex.CASES[case - 1].name}:"), feedback.message
    assert explanation in feedback.message, feedback.message


def test_a_solution_that_breaks_on_a_batch_says_so():
    """K.T transposes every axis: with one head it is still right, with a batch of heads it raises."""
    feedback = ex.check_capstone(solution(transpose_with_T=True))
    assert not feedback.correct and "raised ValueError" in feedback.message
    assert feedback.message.startswith("case 1 of")


def test_returning_only_the_output_asks_for_the_pair():
    feedback = ex.check_capstone(solution(return_pair=False))
    assert not feedback.correct and "return a pair (output, weights)" in feedback.message


def test_placeholders_and_non_functions_get_a_friendly_message():
    assert "Replace None" in ex.check_capstone(None).message
    assert "got 'int'" in ex.check_capstone(3).message
    assert "returned NoneType" in ex.check_capstone(lambda q, k, v, params, mask=None: None).message
    assert "raised TypeError" in ex.check_capstone(lambda q, k, v, params: (q, q)).message  # no mask parameter


def test_the_learners_arrays_are_copies_so_the_cases_stay_intact():
    def vandal(q, k, v, params, mask=None):
        q *= 0  # writes into its input
        return mha.multi_head_attention(q, k, v, params, mask)

    before = [c.q.copy() for c in ex.CASES]
    assert not ex.check_capstone(vandal).correct
    assert all(np.array_equal(c.q, b) for c, b in zip(ex.CASES, before, strict=True))


def test_diagnosis_only_names_a_mistake_that_reproduces_the_result():
    case = ex.CASES[0]
    out, weights = solution(scale="none")(case.q, case.k, case.v, case.params)
    assert ex.diagnose(case, (out, weights)) == ex.MISTAKES["no scale"][1]
    assert ex.diagnose(case, (out + 1.0, weights)) is None  # nothing known gives this: no guess
