"""Lesson 5's exercise checks accept the solutions and reject typical wrong answers with a hint."""

import numpy as np
import pytest

import mha_lesson as mha
from mha_lesson.exercises import lesson05 as ex


def test_block_shape():
    assert ex.check_block_shape((64, 512))
    for wrong in (None, (512, 64), (512, 512), (64, 64), "64x512"):
        result = ex.check_block_shape(wrong)
        assert not result and result.message


def test_ablation_delta():
    x, p = ex.exercise_inputs()
    out, _, trace = mha.multi_head_attention_loop(x, x, x, p, return_trace=True)
    solution = trace["head_i"][ex.OFF] @ p.w_o_head(ex.OFF)
    assert ex.check_ablation_delta(solution)
    other_head = trace["head_i"][0] @ p.w_o_head(0)
    for wrong in (None, -solution, out, other_head, solution[:2], "delta", trace["head_i"][ex.OFF]):
        result = ex.check_ablation_delta(wrong)
        assert not result and result.message


def test_all_off():
    x, p = ex.all_off_inputs()
    assert ex.check_all_off(p.b_o)
    assert ex.check_all_off(np.tile(p.b_o, (4, 1)))
    for wrong in (None, np.zeros(8), np.zeros((4, 8)), p.b_o[:4], -p.b_o, "b_o"):
        result = ex.check_all_off(wrong)
        assert not result and result.message


@pytest.mark.parametrize("check", [ex.check_block_shape, ex.check_ablation_delta, ex.check_all_off])
def test_none_gets_a_friendly_hint(check):
    assert "Replace None" in check(None).message
