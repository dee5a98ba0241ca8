"""Lesson 19 (attention in today's models): its demos and explorers against independent computations."""

import math

import numpy as np
import pytest

import mha_lesson as mha
from mha_lesson import head_analysis
from mha_lesson.demos import today as td
from mha_lesson.widgets import today as wt

# --- sinks ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sink", [-3.0, 0.0, 2.5])
def test_sink_reference_matches_the_library_and_a_closed_form(sink):
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 4, 6))
    out, w = mha.attention_with_sink(q, k, v, sink)
    scores = q @ k.T / math.sqrt(6)
    w_ref, out_ref = td.sink_reference(scores, v, sink)
    np.testing.assert_allclose(w, w_ref, atol=1e-12)
    np.testing.assert_allclose(out, out_ref, atol=1e-12)
    # closed form of the row sum: 1 - e^s / (e^s + sum e^score)
    expected = 1 - math.e**sink / (math.e**sink + np.exp(scores).sum(-1))
    np.testing.assert_allclose(w.sum(-1), expected, atol=1e-12)
    np.testing.assert_allclose(td.sink_share(scores, sink), 1 - expected, atol=1e-12)


def test_sink_demo_empties_only_the_rows_with_nothing_to_find():
    d = td.sink_demo(3.0)
    assert d["row_sums"][:3].min() > 0.9 and d["row_sums"][3:].max() < 0.1
    plain = td.sink_demo(-50.0)
    np.testing.assert_allclose(plain["row_sums"], 1.0, atol=1e-12)


# --- gates ---------------------------------------------------------------------------------------------------


def test_head_map_is_the_gated_product_and_has_rank_d_k():
    p = mha.init_params(16, 4, seed=1)
    g = np.linspace(0.1, 0.9, 16)
    m = td.head_map(p.w_v, p.w_o, 1, 4, g)
    np.testing.assert_allclose(m, p.w_v[:, 4:8] @ np.diag(g[4:8]) @ p.w_o[4:8], atol=1e-12)
    assert np.linalg.matrix_rank(td.head_map(p.w_v, p.w_o, 1, 4)) == 4


# --- MLA -----------------------------------------------------------------------------------------------------


def test_cache_per_token_reproduces_deepseek_v2_table_1_ratios():
    h, d_h, layers = 32, 128, 32
    mha_numbers = td.cache_per_token("MHA", h, d_h, layers)
    mla_numbers = td.cache_per_token("MLA", h, d_h, layers, d_c=4 * d_h, d_rope=d_h // 2)
    assert mha_numbers == 2 * 32 * 128 * 32
    assert mla_numbers / (2 * d_h * layers) == 2.25  # "GQA with only 2.25 groups"
    with pytest.raises(ValueError, match="kind"):
        td.cache_per_token("MLA2", h, d_h, layers)


def test_svd_latent_is_exact_at_full_rank_and_best_at_lower_rank():
    rng = np.random.default_rng(0)
    w_k, w_v = rng.normal(size=(2, 12, 10))
    down, up_k, up_v = td.svd_latent(w_k, w_v, 12)
    np.testing.assert_allclose(down @ np.concatenate([up_k, up_v], 1), np.concatenate([w_k, w_v], 1), atol=1e-12)
    down, up_k, up_v = td.svd_latent(w_k, w_v, 4)
    approx = down @ np.concatenate([up_k, up_v], 1)
    s = np.linalg.svd(np.concatenate([w_k, w_v], 1), compute_uv=False)
    # Eckart-Young: the error of the best rank-4 approximation is the root of the sum of the dropped s².
    assert math.isclose(np.linalg.norm(np.concatenate([w_k, w_v], 1) - approx), math.sqrt((s[4:] ** 2).sum()))
    with pytest.raises(ValueError, match="d_c"):
        td.svd_latent(w_k, w_v, 13)


def test_rope_fold_gap_is_zero_only_at_the_same_offset():
    gaps = td.rope_fold_gap(np.random.default_rng(0).normal(size=(6, 8)), [0, 0, 3])
    assert gaps[0] == 0 and gaps[1] == 0 and gaps[2] > 0.1


def test_shipped_mla_reference_is_consistent():
    ref = td.mla_reference()
    assert list(ref["d_c"]) == list(td.MLA_D_CS)
    assert math.isclose(ref["cosine"][0], 1.0, abs_tol=1e-5)  # d_c = 384: nothing lost
    assert np.all(np.diff(ref["margin"]) < 0)  # the margin falls with d_c


def test_latent_minilm_at_full_rank_equals_minilm(minilm):
    full = td.latent_minilm(minilm, 384)
    for a, b in zip(full.layers, minilm.layers, strict=True):
        np.testing.assert_allclose(a.attn.w_k, b.attn.w_k, atol=1e-4)
        np.testing.assert_allclose(a.attn.w_v, b.attn.w_v, atol=1e-4)


def test_regeneration_script_reproduces_a_shipped_sample(minilm):
    pairs = head_analysis.load_paraphrases()
    got = td.latent_retrieval(minilm, (64,), pairs)
    ref = td.mla_reference()
    i = list(ref["d_c"]).index(64)
    for key in ("accuracy", "margin", "cosine"):
        assert math.isclose(got[key][0], ref[key][i], abs_tol=2e-3), key


# --- local and global ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("ratio, window", [(5, 4), (2, 7), (0, 3), (3, 1)])
def test_reach_formula_matches_boolean_receptive_fields(ratio, window):
    pattern = td.layer_pattern(9, ratio)
    assert np.array_equal(td.reach_by_layer(60, window, pattern), td.stack_reach(60, window, pattern))
    if "global" not in pattern:  # all local: lesson 17's receptive_field gives the same reach
        reach = mha.receptive_field(mha.sliding_window_mask(60, window), len(pattern))
        assert td.reach_by_layer(60, window, pattern)[-1] == 59 - int(np.argmax(reach[-1]))


def test_layer_pattern_follows_gemma3():
    pattern = td.layer_pattern(62, 5)
    assert pattern[:6] == ["local"] * 5 + ["global"] and pattern.count("global") == 10


def test_stack_kv_bytes_against_kv_cache_bytes():
    pattern = td.layer_pattern(12, 5)
    got = td.stack_kv_bytes(5000, 1024, pattern, 8, 64)
    expected = mha.cost.kv_cache_bytes(2, 5000, 8, 64, np.float16) + mha.cost.kv_cache_bytes(
        10, 1024, 8, 64, np.float16
    )
    assert got == expected
    assert td.stack_kv_bytes(5000, 1024, pattern, 8, 64, windowed_cache=False) == mha.cost.kv_cache_bytes(
        12, 5000, 8, 64, np.float16
    )


# --- linear heads and differential attention -----------------------------------------------------------------


def test_parallel_form_matches_the_library_recurrence():
    q, k, v = np.random.default_rng(3).normal(size=(3, 20, 5))
    np.testing.assert_allclose(td.linear_parallel_reference(q, k, v), mha.linear_attention(q, k, v), atol=1e-10)


def test_recall_delta_beats_additive_within_capacity_and_both_fall_beyond():
    assert td.recall_accuracy(8, 32, "delta") == 1.0
    assert td.recall_accuracy(8, 32, "additive") < 0.75
    assert td.recall_accuracy(128, 32, "delta") < 0.5
    with pytest.raises(ValueError, match="rule"):
        td.recall_accuracy(8, 32, "softmax")


def test_cancelling_lambda_zeroes_every_shared_weight_and_a_larger_one_flips_their_sign():
    s1, s2 = td.noisy_scores()
    lam = td.cancelling_lambda(s1, s2)
    # independent: the ratio of the two softmax denominators, summed directly
    assert math.isclose(lam, np.exp(s2).sum() / np.exp(s1).sum(), rel_tol=1e-12)
    row = td.differential_row(s1, s2, lam)
    np.testing.assert_allclose(np.delete(row, 7), 0.0, atol=1e-15)
    assert row[7] > 0.4
    assert np.all(np.delete(td.differential_row(s1, s2, 0.8), 7) < 0)  # over-subtracted: the noise returns negative
    assert np.all(np.delete(td.differential_row(s1, s2, 0.2), 7) > 0)


def test_differential_row_cancels_shared_noise():
    s1, s2 = td.noisy_scores()
    assert td.signal_to_noise(td.differential_row(s1, s2, 0.5), 7) > td.signal_to_noise(
        td.differential_row(s1, s2, 0.0), 7
    )
    np.testing.assert_allclose(td.differential_row(s1, s2, 0.3).sum(), 0.7)


# --- explorers -----------------------------------------------------------------------------------------------


def test_sink_view_and_explorer():
    e = wt.SinkExplorer()
    assert e.error is None
    e.set(sink=3.0)
    np.testing.assert_allclose(e.data["weights"], td.sink_demo(3.0)["weights"])
    with pytest.raises(ValueError, match="sink"):
        wt.sink_view(float("inf"))


def test_mla_view_rejects_unknown_widths_and_reports_shares():
    v = wt.mla_view(192)
    assert v["share"] == 0.25
    with pytest.raises(ValueError, match="d_c"):
        wt.mla_view(100)


def test_lesson_factories_build_each_explorer():
    for make, cls in (
        (wt.sink_explorer, wt.SinkExplorer),
        (wt.mla_explorer, wt.MLAExplorer),
        (wt.local_global_explorer, wt.LocalGlobalExplorer),
    ):
        e = make()
        assert isinstance(e, cls) and e.error is None


def test_gemma3_27b_sizes_follow_gemma_pytorch():
    g = td.GEMMA3_27B
    assert g["query_pre_attn_scalar"] == 5376 // g["h"]  # hidden_size // num_attention_heads
    assert td.layer_pattern(12, g["local_per_global"])[:6] == ["local"] * 5 + ["global"]


def test_local_global_view_against_hand_arithmetic():
    v = wt.local_global_view(5, 1024)
    g = td.GEMMA3_27B
    per_token_layer = 2 * g["h_kv"] * g["d_k"] * 2  # K and V, bfloat16
    expected = (10 * 131072 + 52 * 1024) * per_token_layer / 2**30
    assert math.isclose(v["kv_gib"]["pattern, windowed cache"], expected)
    assert math.isclose(v["kv_gib"]["all global"], 62 * 131072 * per_token_layer / 2**30)
    assert v["reach"][5] == 131071 and v["reach"][0] == 1023
    with pytest.raises(ValueError, match="window"):
        wt.local_global_view(5, 1000)


# --- the lesson's claims, as the expert check corrected them -------------------------------------------------


def _lesson19_prose() -> str:
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "notebooks" / "19_attention_today.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return " ".join(" ".join("".join(c["source"]).split()) for c in cells if c["cell_type"] == "markdown")


def test_gemma3_27b_has_10_global_layers_of_62_as_the_lesson_says():
    g = td.GEMMA3_27B
    pattern = td.layer_pattern(g["layers"], g["local_per_global"])
    globals_by_loop = sum(1 for i in range(1, g["layers"] + 1) if i % (g["local_per_global"] + 1) == 0)
    assert pattern.count("global") == globals_by_loop == 10 and len(pattern) == 62
    assert "10 of Gemma 3 27B's 62" in _lesson19_prose()


def test_a_full_cache_of_300_tokens_holds_512_slots_of_which_300_are_used():
    params = mha.init_params(32, 4, seed=0)
    x = np.random.default_rng(0).normal(size=(300, 32))
    cache = mha.KVCache()
    for t in range(300):
        mha.kv_cache.decode_step(x[t], params, cache)
    per_token = 2 * 32 * 8  # a key and a value of 32 float64 numbers
    assert len(cache) == 300 and cache.nbytes == 512 * per_token == 262_144
    assert 300 * per_token == 153_600


def test_the_corrected_claims_of_lesson_19():
    prose = _lesson19_prose()
    assert "\\sigma(x_q W^{gate})$" in prose and "its own addition" in prose  # the paper's gate has no bias
    assert '"mitigates" the attention sink' in prose and "almost removed" not in prose
    assert "Maverick: no" in prose  # QK-norm per checkpoint
    assert "positions *within the cache*" in prose  # StreamingLLM re-assigns positions; this layer has none
    assert "the reach costs nothing" not in prose and "Reach is not capacity" in prose
    assert "evidence from others is mixed" in prose and "did not reproduce" not in prose
    assert "hence the 3:1" not in prose and "empirical choice" in prose
    for cited in ("Bondarenko et al. (2023", "Sun et al. (2024", "Henry et al. (2020", "Wortsman et al. (2023",
                  "Katharopoulos et al. 2020", "Schlag et al. 2021", "Arora et al. (2024)", "Jelassi et al. (2024",
                  "MHA2MLA", "TransMLA", "disputed"):  # fmt: skip
        assert cited in prose, cited


def test_the_review_corrections_of_lesson_19():
    """Wortsman et al., Sun et al., the cache line named, DeepSeek's query latent, MiniMax's critic, in their words."""
    prose = _lesson19_prose()
    assert "qk-layernorm mitigates it at small scale just as at large" in prose and "removes it" not in prose
    assert 'the first delimiter such as "." or a newline (their Section 2)' in prose
    assert 'the line "5:1, cache NOT windowed"' in prose and "the third line" not in prose
    assert prose.index("Reach is not capacity") < prose.index("but only if the local layers' caches")
    assert "`q_lora_rank` in the V2 and V3 configurations; V2-Lite has none" in prose
    assert "no (RMSNorm on the query and KV latents)" in prose
    assert "(as reported by QbitAI, 4 November 2025)" in prose


def test_the_cache_line_the_text_names_is_one_the_cell_prints():
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "notebooks" / "19_attention_today.ipynb"
    code = [
        "".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"
    ]
    assert any('("5:1, cache NOT windowed", pattern, False)' in src for src in code)


def test_lesson_19s_main_part_leaves_the_evidence_lists_to_going_deeper():
    """The main text keeps one sentence and the verdict; issue and pull-request numbers sit in Going deeper."""
    from mha_lesson.aids import lessons as ls

    nb = ls.load(ls.NOTEBOOKS / "19_attention_today.ipynb")
    main = " ".join(ls.cell_text(c) for c in ls.worked_cells(nb) if c["cell_type"] == "markdown")
    for detail in (
        "pull request 117",
        "pull request 13194",
        "issue 1663",
        "issue 114",
        "issue 4716",
        "Sources: DeepSeek",
    ):
        assert detail not in main, detail
    full = _lesson19_prose()
    for detail in (
        "pull request 117",
        "issue 1663",
        "issue 114",
        "issue 4716",
        "pull request 13194",
        "§8, the table's",
    ):
        assert detail in full, detail
    for term in ("mixture-of-experts models (each token", "INT8 quantization, storing", "GroupNorm: a layer norm",
                 "throughput (tokens generated per second)", "speedrun (a public contest",
                 "divided by their root-mean-square (RMSNorm"):  # fmt: skip
        assert term in full, term
