"""Parameter, FLOP and memory counts against closed forms, the actual arrays, and an explicit loop over matmuls."""

import numpy as np
import pytest

import mha_lesson as m
from mha_lesson.cost import attention_memory_bytes, flop_count, param_count

SIZES = [(8, 1), (8, 2), (12, 3), (64, 8), (512, 8)]


def test_param_count_of_the_paper_size():
    assert param_count(512, 8) == 4 * 512**2 == 1_048_576
    assert param_count(512, 8, bias=True) == 4 * 512**2 + 4 * 512


@pytest.mark.parametrize(("d_model", "h"), SIZES)
@pytest.mark.parametrize("bias", [False, True])
def test_param_count_matches_the_arrays_init_params_makes(d_model, h, bias):
    p = m.init_params(d_model, h, bias=bias)
    assert param_count(d_model, h, bias=bias) == sum(a.size for a in p.arrays().values())
    assert param_count(d_model, h, bias=bias) == 4 * d_model**2 + (4 * d_model if bias else 0)


@pytest.mark.parametrize(("d_model", "h"), SIZES)
def test_full_width_heads_multiply_the_parameters_h_fold(d_model, h):
    # Each head owns three (d_model, d_model) matrices; W^O reads all h*d_model features.
    assert param_count(d_model, h, split=False) == 3 * h * d_model**2 + h * d_model * d_model
    assert param_count(d_model, h, bias=True, split=False) == 4 * h * d_model**2 + 3 * h * d_model + d_model


def test_naive_full_width_heads_need_not_divide_d_model():
    # Each naive head works at the full d_model, so h = 3 with d_model = 8 is a valid design.
    assert param_count(8, 3, split=False) == 4 * 3 * 8**2
    assert flop_count(4, 4, 8, 3, split=False)["scores"] == 3 * 2 * 4 * 4 * 8


def loop_flops(n_q, n_kv, d_model, h, split):
    """FLOPs summed over the matmuls an explicit loop over heads does, 2*m*k*n each, plus 5 per softmax weight."""
    d_k = d_model // h if split else d_model
    parts = dict.fromkeys(("projections", "scores", "softmax", "weighted_sum", "output_projection"), 0)

    def matmul(part, a, b):  # (m, k) @ (k, n)
        assert a[1] == b[0]
        parts[part] += 2 * a[0] * a[1] * b[1]

    for _ in range(h):
        matmul("projections", (n_q, d_model), (d_model, d_k))  # Q_i = q W_i^Q
        matmul("projections", (n_kv, d_model), (d_model, d_k))  # K_i = k W_i^K
        matmul("projections", (n_kv, d_model), (d_model, d_k))  # V_i = v W_i^V
        matmul("scores", (n_q, d_k), (d_k, n_kv))  # Q_i K_i^T
        parts["softmax"] += 5 * n_q * n_kv
        matmul("weighted_sum", (n_q, n_kv), (n_kv, d_k))  # A_i V_i
        matmul("output_projection", (n_q, d_k), (d_k, d_model))  # head_i W_i^O, summed over heads
    parts["total"] = sum(parts.values())
    return parts


@pytest.mark.parametrize(("n_q", "n_kv"), [(1, 1), (5, 5), (3, 7), (1024, 1024)])
@pytest.mark.parametrize(("d_model", "h"), SIZES)
@pytest.mark.parametrize("split", [True, False])
def test_flop_count_matches_an_explicit_loop_over_heads(n_q, n_kv, d_model, h, split):
    assert flop_count(n_q, n_kv, d_model, h, split=split) == loop_flops(n_q, n_kv, d_model, h, split)


def test_flop_parts_match_the_closed_forms():
    n_q, n_kv, d, h = 10, 14, 64, 8
    f = flop_count(n_q, n_kv, d, h)
    assert f["projections"] == 2 * (n_q + 2 * n_kv) * d**2
    assert f["scores"] == f["weighted_sum"] == 2 * n_q * n_kv * d
    assert f["softmax"] == 5 * h * n_q * n_kv
    assert f["output_projection"] == 2 * n_q * d**2
    assert f["total"] == sum(v for k, v in f.items() if k != "total")


def test_split_heads_keep_the_matmuls_fixed_and_naive_heads_multiply_them():
    n, d = 1024, 512
    one = flop_count(n, n, d, 1)
    for h in (2, 4, 8, 16, 64):
        split, naive = flop_count(n, n, d, h), flop_count(n, n, d, h, split=False)
        for part in ("projections", "scores", "weighted_sum", "output_projection"):
            assert split[part] == one[part]  # splitting d_model over h heads costs no extra matmul FLOPs
            assert naive[part] == h * one[part]  # h full-width heads: every matmul h times over
        assert split["softmax"] == naive["softmax"] == h * one["softmax"]  # h*n^2 exps either way
    paper = flop_count(n, n, d, 8)
    assert paper["softmax"] / paper["total"] < 0.05  # what the lessons say: the softmax is a small part


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_memory_bytes_is_the_size_of_the_weights_array(dtype):
    assert attention_memory_bytes(1024, 1024, 8) == 8 * 1024 * 1024 * 4  # float32 by default
    p = m.init_params(8, 4, dtype=dtype)
    q, k = np.zeros((3, 5, 8), dtype), np.zeros((3, 7, 8), dtype)
    _, weights = m.multi_head_attention(q, k, k, p)
    assert attention_memory_bytes(5, 7, 4, dtype, batch=3) == weights.nbytes == 3 * 4 * 5 * 7 * np.dtype(dtype).itemsize
