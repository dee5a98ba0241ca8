"""Lesson 17's claims, through the helpers the notebook calls, checked against hand computations, loops and closed
forms; and the explorers' computes and what each control changes. RoPE, windows, causal alignment of a chunk and
pre-/post-LN moved with lesson 18: tests/test_lesson18_positions.py."""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from matplotlib.colors import to_hex

import mha_lesson as mha
from mha_lesson.aids import flashcards as fc
from mha_lesson.demos import scale as sc
from mha_lesson.plots.scale import rolling_median
from mha_lesson.widgets import scale as ws

# --- section 1: the online softmax and tiled attention's memory ------------------------------------------------


def test_two_blocks_by_hand():
    scores, values = np.array([1.0, 2.0, 0.5, 5.0, 3.0, 1.0]), np.arange(12.0).reshape(6, 2)
    step = sc.online_softmax_two_blocks(scores, values, 3)
    # Written out: block 1 on shift 2, then everything moved to shift 5.
    l1 = math.exp(-1) + 1 + math.exp(-1.5)
    assert step["m1"] == 2 and step["m"] == 5 and step["l1"] == pytest.approx(l1, rel=1e-15)
    assert step["factor"] == pytest.approx(math.exp(-3), rel=1e-15)
    assert step["l"] == pytest.approx(l1 * math.exp(-3) + 1 + math.exp(-2) + math.exp(-4), rel=1e-14)
    w = np.exp(scores - 5) / np.exp(scores - 5).sum()
    np.testing.assert_allclose(step["result"], w @ values, rtol=1e-14)
    np.testing.assert_allclose(step["direct"], w @ values, rtol=1e-14)
    assert np.abs(step["forgot_rescale"] - step["direct"]).max() > 1  # the max went up: the bug shows


@given(st.integers(0, 2**32 - 1), st.integers(2, 9))
def test_two_blocks_equal_softmax_and_rescale_matters_only_when_the_max_moves(seed, n):
    rng = np.random.default_rng(seed)
    scores, values = rng.normal(size=n) * 3, rng.normal(size=(n, 2))
    split = int(rng.integers(1, n))
    step = sc.online_softmax_two_blocks(scores, values, split)
    np.testing.assert_allclose(step["result"], step["direct"], rtol=1e-12, atol=1e-12)
    if scores[:split].max() >= scores[split:].max():  # factor 1: forgetting it changes nothing
        np.testing.assert_allclose(step["forgot_rescale"], step["direct"], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("split", [0, 4])
def test_two_blocks_needs_two_non_empty_blocks(split):
    with pytest.raises(ValueError, match=r"^split: expected 1 to 3"):
        sc.online_softmax_two_blocks(np.zeros(4), np.zeros((4, 1)), split)


@pytest.mark.parametrize("n, block", [(8192, 512), (3000, 256), (4096, 64)])
def test_first_key_block_reaches_the_peak_of_a_full_run(n, block):
    full, first = sc.tiled_peak(n, block), sc.tiled_peak(n, block, key_blocks=1)
    assert abs(full - first) < 4096, (full, first)


def test_memory_table_against_the_predictions():
    table = sc.memory_table()
    for row, col in ((0, 0), (3, 3)):  # the table's measurement is tiled_peak's, with one key block
        n, block = sc.NS[col], sc.BLOCKS[row]
        assert abs(table["tiled"][row, col] - sc.tiled_peak(n, block, key_blocks=1)) < 4096
    ns = np.array(sc.NS)
    for row, block in enumerate(sc.BLOCKS):
        measured, scores = table["tiled"][row], sc.predicted_tiled_bytes(ns, block)
        # One block of scores plus a few (n, d_k) arrays: between 1 and 4 of them.
        extra = (measured - scores) / (ns * sc.D_K * 4)
        assert np.all((extra > 1) & (extra < 4)), (block, extra)
    standard, known = table["standard"], ns <= sc.STANDARD_MAX
    weights = sc.predicted_standard_bytes(ns[known])
    assert np.all(standard[known] >= weights) and np.all(standard[known] < 1.1 * weights + 2**20)
    assert np.all(np.isnan(standard[~known]))
    # The lesson's headline: at 32k tokens tiled attention holds under 3% of the standard weights' 4 GiB.
    assert table["tiled"][sc.BLOCKS.index(512), -1] < 0.03 * sc.predicted_standard_bytes(32768)


def test_a_tiled_head_is_exact_and_its_rows_check_against_the_standard_version():
    head = sc.tiled_head(1500, block=256, d_k=8)
    q, k, v = head["q"], head["k"], head["v"]
    full, _ = mha.scaled_dot_product_attention(q.astype(float), k.astype(float), v.astype(float))
    np.testing.assert_allclose(head["out"], full, atol=1e-5)
    assert sc.rows_against_standard(q, k, v, head["out"], np.array([0, 700, 1499])) < 1e-5
    wrong = head["out"].copy()
    wrong[700] += 0.1
    assert sc.rows_against_standard(q, k, v, wrong, np.array([0, 700])) > 0.09
    assert head["peak"] >= 1500 * 256 * 4


def test_head_inputs_keep_their_first_rows_whatever_n():
    small, large = sc.head_inputs(10), sc.head_inputs(50)
    for a, b in zip(small, large, strict=True):
        np.testing.assert_array_equal(a, b[:10])


def test_timing_helper_times_the_lengths_it_is_given():
    timings = sc.time_tiled_and_standard([64, 128], repeats=1)
    assert timings["ns"].tolist() == [64, 128]
    assert timings["tiled"].shape == timings["standard"].shape == (2,) and np.all(timings["tiled"] > 0)


# --- section 2: the KV cache -----------------------------------------------------------------------------------


@pytest.mark.parametrize("h_kv", [4, 2, 1])
def test_cached_decoding_equals_causal_mha(h_kv):
    params = mha.init_params(64, 4, h_kv=h_kv, seed=0)
    x = np.random.default_rng(0).normal(size=(40, 64))
    full, _ = mha.multi_head_attention(x, x, x, params, mha.causal_mask(40))
    np.testing.assert_allclose(sc.decode_all(x, params), full, rtol=0, atol=1e-12)


def test_decode_flops_against_a_hand_count():
    d, h, t = 64, 4, 9  # the token at position 9 sees 10 keys
    flops = sc.decode_flops(np.array([t]), d, h)
    d_k, seen = d // h, t + 1
    by_hand = 4 * (2 * d * d) + h * (2 * seen * d_k) + 5 * h * seen + h * (2 * seen * d_k)
    assert flops["cached"][0] == by_hand
    assert flops["recomputed"][0] == mha.cost.flop_count(seen, seen, d, h)["total"]


def test_kv_cache_of_the_7b_class_model():
    m = sc.MODEL_7B
    d_k = m["d_model"] // m["h"]
    assert mha.cost.kv_cache_bytes(m["layers"], m["n"], 32, d_k, np.float16) == 2 * 2**30
    assert mha.cost.kv_cache_bytes(m["layers"], m["n"], 8, d_k, np.float16) == 2**29
    assert mha.cost.kv_cache_bytes(m["layers"], 1, 32, d_k, np.float16) == 512 * 1024


def test_rolling_median():
    np.testing.assert_array_equal(rolling_median(np.array([5.0, 1.0, 3.0, 9.0, 2.0]), 3), [3.0, 3.0, 3.0])


# --- section 3: grouped-query attention --------------------------------------------------------------------------


@pytest.mark.parametrize("h_kv", [1, 2, 4, 8])
def test_pooling_averages_each_groups_key_and_value_heads(h_kv):
    base = mha.init_params(32, 8, bias=True, seed=0)
    base = dataclasses.replace(base, b_k=np.arange(32.0), b_v=-np.arange(32.0))
    pooled = sc.pool_kv_heads(base, h_kv)
    g = 8 // h_kv
    assert pooled.h_kv == h_kv and pooled.w_k.shape == (32, h_kv * 4)
    for j in range(h_kv):  # a loop over the group's original heads
        group = range(j * g, (j + 1) * g)
        np.testing.assert_allclose(pooled.w_k[:, j * 4 : (j + 1) * 4], np.mean([base.w_k_head(i) for i in group], 0))
        np.testing.assert_allclose(pooled.w_v[:, j * 4 : (j + 1) * 4], np.mean([base.w_v_head(i) for i in group], 0))
        np.testing.assert_allclose(pooled.b_k[j * 4 : (j + 1) * 4], np.mean([base.b_head("b_k", i) for i in group], 0))
    np.testing.assert_array_equal(pooled.w_q, base.w_q)


def test_pooling_needs_a_plain_layer_and_a_divisor():
    with pytest.raises(ValueError, match=r"^h_kv: expected a divisor of h=8"):
        sc.pool_kv_heads(mha.init_params(32, 8), 3)
    with pytest.raises(ValueError, match=r"^params: expected a plain multi-head layer"):
        sc.pool_kv_heads(mha.init_params(32, 8, h_kv=2), 1)


def test_heads_sharing_k_and_v_still_differ_but_sharing_q_too_makes_copies():
    base = mha.init_params(32, 8, seed=0)
    x = 2.0 * np.random.default_rng(1).standard_normal((8, 32))
    for h_kv in (4, 2, 1):
        pooled = sc.pool_kv_heads(base, h_kv)
        _, w = mha.multi_head_attention_loop(x, x, x, pooled)
        assert sc.group_differences(w, pooled.group_size).min() > 0.1
        _, copies = mha.multi_head_attention_loop(x, x, x, sc.queries_shared(pooled))
        assert sc.group_differences(copies, pooled.group_size).max() < 1e-12
        if h_kv == 1:  # lesson 11's mistake: every head computes one map
            assert np.abs(copies - copies[0]).max() < 1e-12


def test_group_differences_against_a_loop():
    w = np.random.default_rng(0).random((4, 3, 3))
    expected = [np.abs(w[0] - w[1]).max(), np.abs(w[2] - w[3]).max()]
    np.testing.assert_allclose(sc.group_differences(w, 2), expected)


# --- the explorers ---------------------------------------------------------------------------------------------------


def test_tiled_memory_compute():
    data = ws.tiled_memory(n=2048, block=256, live=3)
    assert data["blocks"] == 8 and data["keys"] == (512, 767)
    assert ws.tiled_memory(n=1024, block=512, live=2)["keys"] == (512, 1023)
    assert ws.tiled_memory(n=512, block=512, live=1)["keys"] == (0, 511)  # one block: the whole row
    table = sc.memory_table()
    assert data["tiled_measured"] == table["tiled"][sc.BLOCKS.index(256), sc.NS.index(2048)]
    assert data["tiled_predicted"] == 2048 * 256 * 4 and data["standard_predicted"] == 2048**2 * 4
    assert ws.tiled_memory(n=32768)["standard_measured"] is None
    for bad, match in (({"n": 1000}, "^n: expected one of"), ({"block": 100}, "^block: expected one of"),
                       ({"n": 512, "block": 512, "live": 2}, "^live: expected a key block from 1 to 1")):  # fmt: skip
        with pytest.raises(ValueError, match=match):
            ws.tiled_memory(**bad)


def test_tiled_memory_explorer_controls():
    ex = ws.tiled_memory_explorer()
    assert ex.error is None and ex.controls["live"].max == 16
    png = ex.image.value
    ex.controls["live"].value = 10  # keys 4,608-5,119 live, 0-4,607 done
    assert (ex.done.get_x(), ex.done.get_width()) == (0, 4608) and ex.done.get_height() == 8192
    assert (ex.live.get_x(), ex.live.get_width()) == (4608, 512) and "block 10 of 16" in ex.text.value
    assert ex.image.value != png
    ex.controls["block"].value = 64
    assert ex.controls["live"].max == 128 and ex.controls["live"].value == 10
    np.testing.assert_allclose(ex.lines["tiled_measured"].get_ydata(), sc.memory_table()["tiled"][0] / sc.MiB)
    ex.controls["n"].value = 512  # 8 blocks of 64: the live block is clamped to the last one
    assert ex.controls["live"].max == 8 and ex.controls["live"].value == 8 and ex.error is None
    assert list(ex.marker.get_xdata()) == [512, 512] and "512" in ex.text.value
    assert ex.done.axes.get_xlim() == (0, 512) and (ex.live.get_x(), ex.live.get_width()) == (448, 64)
    # Every block's tiled points lie within the memory axes' limits, the smallest block's included.
    low, high = ex.marker.axes.get_ylim()
    assert low < sc.memory_table()["tiled"].min() / sc.MiB and high > sc.predicted_standard_bytes(32768) / sc.MiB


def test_gqa_compute():
    data = ws.gqa_heads(h_kv=2)
    assert data["kv_head"].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert data["weights"].shape == (8, 8, 8) and data["closest_in_group"] > 0.1
    assert data["params"] == mha.cost.param_count(32, 8, h_kv=2) and data["params_mha"] == 4 * 32**2
    assert data["big_h_kv"] == 8 and data["big_cache"] == 2**29
    assert ws.gqa_heads(h_kv=8)["closest_in_group"] is None
    assert ws.gqa_heads(h_kv=1, shared_queries=True)["closest_in_group"] < 1e-12
    with pytest.raises(ValueError, match=r"^h_kv: expected a divisor of h=8"):
        ws.gqa_heads(h_kv=3)


def test_gqa_explorer_controls():
    ex = ws.gqa_explorer()
    first = [im.get_array().copy() for im in ex.images]

    def frame(i):  # the colour of query head i's frame names its key/value head
        return to_hex(ex.images[i].axes.spines["top"].get_edgecolor())

    assert [frame(i) for i in (3, 4)] == [ws.KV_COLOURS[0], ws.KV_COLOURS[1]]
    assert "4 query heads per key/value head" in ex.text.value
    ex.controls["shared_queries"].value = True
    copies = [im.get_array() for im in ex.images]
    assert np.abs(copies[0] - copies[3]).max() < 1e-12 and np.abs(copies[1] - first[1]).max() > 0.05
    ex.set(shared_queries=False, h_kv=8)
    assert frame(5) == ws.KV_COLOURS[5] and "plain multi-head" in ex.text.value
    ex.controls["h_kv"].value = 1
    assert "multi-query" in ex.text.value and {frame(i) for i in range(8)} == {ws.KV_COLOURS[0]}


def test_the_lessons_flashcards_state_computed_numbers():
    cards = {c.question: c.answer for c in fc.load_deck() if c.section.startswith("Lesson 17")}
    kv = next(a for q, a in cards.items() if "How many bytes does a decoder's KV cache" in q)
    assert mha.cost.kv_cache_bytes(32, 4096, 32, 128, np.float16) == 2 * 2**30 and "2 GiB" in kv
    assert mha.cost.kv_cache_bytes(32, 4096, 8, 128, np.float16) == 2**29 and "0.5 GiB" in kv
    group = next(a for q, a in cards.items() if "which K/V head does query head i read" in q)
    assert "i // (h / h_kv)" in group
    params = mha.init_params(8, 4, h_kv=2)  # d_k = 2: query head 3 reads key/value head 3 // 2 = 1
    np.testing.assert_array_equal(params.w_k_head(3), params.w_k[:, 2:4])


# --- what GQA costs MiniLM ------------------------------------------------------------------------------------------


def test_pooled_minilm_equals_a_plain_model_with_each_groups_mean_repeated(minilm):
    """GQA through h_kv against an independent route: every head keeps its slot, with its group's mean K and V."""
    h, d_k = minilm.h, minilm.layers[0].attn.d_k
    pooled = sc.pooled_minilm(minilm, 4)

    def repeated(a):  # (..., h*d_k) -> each head's block replaced by the mean of its group of 3
        blocks = a.reshape(*a.shape[:-1], 4, 3, d_k).mean(axis=-2, keepdims=True)
        return np.broadcast_to(blocks, (*a.shape[:-1], 4, 3, d_k)).reshape(*a.shape[:-1], h * d_k)

    def shared(attn):  # the same plain h-head layer, each head reading its group's mean K and V
        kv = {name: repeated(getattr(attn, name)) for name in ("w_k", "w_v", "b_k", "b_v")}
        return dataclasses.replace(attn, **kv)

    layers = tuple(dataclasses.replace(layer, attn=shared(layer.attn)) for layer in minilm.layers)
    plain = dataclasses.replace(minilm, layers=layers)
    assert pooled.layers[0].attn.h_kv == 4 and plain.layers[0].attn.h_kv == h
    sentences = ["The cat sat on the mat.", "A dog slept in the sun all afternoon."]
    np.testing.assert_allclose(pooled.encode(sentences), plain.encode(sentences), atol=2e-5)


def test_gqa_retrieval_recomputes_the_shipped_numbers(minilm):
    got = sc.gqa_retrieval(minilm)
    shipped = sc.GQA_RETRIEVAL
    np.testing.assert_array_equal(got["h_kv"], shipped["h_kv"])
    # One sentence is 1/212: allow one to flip on another BLAS; the graded numbers to 1e-4.
    np.testing.assert_allclose(got["accuracy"], shipped["accuracy"], atol=1 / 212 + 1e-9)
    np.testing.assert_allclose(got["margin"], shipped["margin"], atol=1e-4)
    np.testing.assert_allclose(got["cosine"], shipped["cosine"], atol=1e-4)
    intact = sc.head_analysis.pruning_reference()
    assert got["accuracy"][0] == pytest.approx(float(intact["intact_accuracy"]))
    assert got["margin"][0] == pytest.approx(float(intact["intact_margin"]), abs=1e-5)
    assert got["cosine"][0] == pytest.approx(1.0, abs=1e-5) and np.all(np.diff(shipped["margin"]) < 0)


def test_the_gqa_quality_card_states_the_shipped_numbers():
    cards = {c.question: c.answer for c in fc.load_deck() if c.section.startswith("Lesson 17")}
    card = next(a for q, a in cards.items() if "mean-pooling MiniLM" in q)
    margin, cosine = sc.GQA_RETRIEVAL["margin"], sc.GQA_RETRIEVAL["cosine"]
    assert f"{margin[0]:.3f}" in card and f"{margin[-1]:.3f}" in card and f"cosine {cosine[-1]:.2f}" in card


def test_the_long_head_is_not_promised_in_a_few_seconds():
    """A reader's run of the 32,768-token head took 29.6 s: the text gives a range and points at the printed time."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "notebooks" / "17_attention_at_scale.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    prose = " ".join(" ".join("".join(c["source"]).split()) for c in cells if c["cell_type"] == "markdown")
    assert "it takes a few seconds" not in prose
    assert "from several seconds to half a minute" in prose and "prints its time" in prose
