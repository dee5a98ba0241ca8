import numpy as np

import mha_lesson as m


def test_loop_and_batched_agree_on_a_small_causal_case():
    p = m.init_params(8, 2, bias=True, seed=1)
    x = np.random.default_rng(0).normal(size=(3, 5, 8))
    o1, w1 = m.multi_head_attention(x, x, x, p, mask=m.causal_mask(5))
    o2, w2 = m.multi_head_attention_loop(x, x, x, p, mask=m.causal_mask(5))
    np.testing.assert_allclose(o1, o2, atol=1e-12)
    np.testing.assert_allclose(w1, w2, atol=1e-12)
    assert np.all(np.triu(w1, k=1) == 0)


def test_param_count_of_the_paper_size():
    assert m.cost.param_count(512, 8) == 4 * 512**2 == 1_048_576
