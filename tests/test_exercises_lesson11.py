"""Lesson 11's exercise checks: right answers pass, wrong answers and the None placeholder get a hint."""

import numpy as np
import pytest

import mha_lesson as mha
from mha_lesson.demos import mistakes as mk
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson11 as ex


def test_symptom_exercise():
    assert ex.check_symptom("mask_with_zero")
    assert ex.check_symptom("  Mask_With_Zero ")
    for name in mk.MISTAKES:
        if name != "mask_with_zero":
            fb = ex.check_symptom(name)
            assert not fb and "mask_with_zero" not in fb.message
    assert "Replace None" in ex.check_symptom(None).message
    assert not ex.check_symptom("softmax") and not ex.check_symptom(3)


NAMES = f"Use one of the registry's names: {', '.join(mk.MISTAKES)}."


@pytest.mark.parametrize(
    ("check", "answer", "message"),
    [
        (ex.check_symptom, None, "Replace None with the name of a mistake, as a string, e.g. 'no_scale'."),
        (ex.check_symptom, 3, NAMES),
        (ex.check_symptom, "softmax", NAMES),
        (
            ex.check_mystery,
            None,
            "Replace None with the name of a mistake, as a string: run the checks on mystery_mha first.",
        ),
        (ex.check_mystery, ["concat_order"], NAMES),
    ],
)
def test_a_missing_or_unknown_name_gets_the_placeholder_hint_or_the_list(check, answer, message):
    assert check(answer) == Feedback(False, message)


def test_fixed_masking_exercise():
    def fixed(q, k, v, mask):
        scores = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
        weights = mha.softmax(np.where(mask, scores, -np.inf), axis=-1)
        return weights @ v, weights

    def fixed_with_large_negative(q, k, v, mask):
        scores = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
        weights = mha.softmax(np.where(mask, scores, -1e9), axis=-1)
        return weights @ v, weights

    def unscaled(q, k, v, mask):
        weights = mha.softmax(np.where(mask, q @ k.swapaxes(-1, -2), -np.inf), axis=-1)
        return weights @ v, weights

    def broken(q, k, v, mask):
        raise TypeError("oops")

    assert ex.check_fixed_masking(fixed)
    assert ex.check_fixed_masking(mha.scaled_dot_product_attention)
    assert ex.check_fixed_masking(fixed_with_large_negative)  # exp(-1e9) underflows to exactly 0 in float64
    assert not ex.check_fixed_masking(mk.attention_mask_with_zero)
    assert not ex.check_fixed_masking(mk.attention_mask_after_softmax)
    assert "scale" in ex.check_fixed_masking(unscaled).message
    assert "TypeError" in ex.check_fixed_masking(broken).message
    assert "Replace None" in ex.check_fixed_masking(None).message
    assert not ex.check_fixed_masking("my_masked_attention")


def test_mystery_exercise():
    assert ex.check_mystery("concat_order")
    for name in mk.MISTAKES:
        if name != "concat_order":
            assert not ex.check_mystery(name)
    assert "Replace None" in ex.check_mystery(None).message
    # The mystery function differs from the core only by the head order it concatenates in.
    rng = np.random.default_rng(0)
    x, p = rng.normal(size=(5, 8)), mha.init_params(8, 2, seed=3)
    out, w = ex.mystery_mha(x, x, x, p)
    ref_out, ref_w = mha.multi_head_attention(x, x, x, p)
    np.testing.assert_allclose(w, ref_w, atol=1e-12)
    swapped = mha.MHAParams(w_q=p.w_q, w_k=p.w_k, w_v=p.w_v, w_o=np.vstack([p.w_o[4:], p.w_o[:4]]), h=2)
    np.testing.assert_allclose(out, mha.multi_head_attention(x, x, x, swapped)[0], atol=1e-12)
