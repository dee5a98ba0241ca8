"""Bad input: every public function raises ValueError naming the argument, what it expected and what it got."""

import dataclasses
import re
import tracemalloc

import numpy as np
import pytest

import mha_lesson as m
from mha_lesson import gradients, head_analysis, training
from mha_lesson.cost import attention_memory_bytes, flop_count, param_count
from mha_lesson.rope import rope

P = m.init_params(8, 2, bias=True, seed=0)
X = np.random.default_rng(0).normal(size=(2, 5, 8))
Y = X[:, :4, :4]  # (2, 4, 4) for single-head attention


def poisoned(a, value, index=(0,)):
    """A copy of a with one entry set to value (NaN or inf)."""
    a = np.array(a, dtype=float)
    a[index] = value
    return a


def replaced(**arrays):
    """MHAParams like P with some arrays swapped (the constructor is what must refuse them)."""
    return lambda: dataclasses.replace(P, **arrays)


BAD = {
    # heads and sizes
    "h does not divide d_model": ("h", lambda: m.init_params(8, 3)),
    "h zero": ("h", lambda: m.init_params(8, 0)),
    "h negative in params": ("h", replaced(h=-2)),
    "h not an int": ("h", lambda: m.split_heads(X, 2.0)),
    "d_model zero": ("d_model", lambda: m.init_params(0, 1)),
    "integer dtype": ("dtype", lambda: m.init_params(8, 2, dtype=np.int32)),
    "split h does not divide": ("h", lambda: m.split_heads(X, 3)),
    "split 1-D x": ("x", lambda: m.split_heads(np.zeros(8), 2)),
    "merge 2-D x": ("x", lambda: m.merge_heads(np.zeros((5, 8)))),
    # params: shapes and values
    "w_k not square": ("w_k", replaced(w_k=np.zeros((8, 6)))),
    "w_v smaller than w_q": ("w_v", replaced(w_v=np.zeros((6, 6)))),
    "w_q 1-D": ("w_q", replaced(w_q=np.zeros(8))),
    "b_o wrong length": ("b_o", replaced(b_o=np.zeros(6))),
    "b_q 2-D": ("b_q", replaced(b_q=np.zeros((1, 8)))),
    "NaN in w_q": ("w_q", replaced(w_q=poisoned(P.w_q, np.nan))),
    "inf in w_o": ("w_o", replaced(w_o=poisoned(P.w_o, np.inf))),
    "NaN in b_k": ("b_k", replaced(b_k=poisoned(P.b_k, np.nan))),
    "-inf in b_v": ("b_v", replaced(b_v=poisoned(P.b_v, -np.inf))),
    "bias name": ("name", lambda: P.b_head("b_o", 0)),
    "params not MHAParams": ("params", lambda: m.multi_head_attention(X, X, X, P.arrays())),
    # multi-head attention inputs
    "q last dim": ("q", lambda: m.multi_head_attention(X[..., :6], X, X, P)),
    "k last dim": ("k", lambda: m.multi_head_attention(X, X[..., :6], X, P)),
    "v shorter than k": ("v", lambda: m.multi_head_attention(X, X, X[:, :3], P)),
    "batch dims do not broadcast": ("k", lambda: m.multi_head_attention(X, X[:1].repeat(3, 0), X[:1].repeat(3, 0), P)),
    "q 1-D": ("q", lambda: m.multi_head_attention(X[0, 0], X, X, P)),
    "mask does not broadcast": ("mask", lambda: m.multi_head_attention(X, X, X, P, np.ones((3, 5, 5), bool))),
    "mask not boolean": ("mask", lambda: m.multi_head_attention(X, X, X, P, np.tri(5))),
    "mask of 0/1 ints": ("mask", lambda: m.multi_head_attention(X, X, X, P, np.tri(5, dtype=int))),
    "NaN in q": ("q", lambda: m.multi_head_attention(poisoned(X, np.nan), X, X, P)),
    "inf in k": ("k", lambda: m.multi_head_attention(X, poisoned(X, np.inf), X, P)),
    "-inf in v": ("v", lambda: m.multi_head_attention(X, X, poisoned(X, -np.inf), P)),
    "string q": ("q", lambda: m.multi_head_attention(X.astype(str), X, X, P)),
    # the loop version checks the same things
    "loop: v shorter than k": ("v", lambda: m.multi_head_attention_loop(X, X, X[:, :3], P)),
    "loop: mask not boolean": ("mask", lambda: m.multi_head_attention_loop(X, X, X, P, np.tri(5))),
    "loop: NaN in k": ("k", lambda: m.multi_head_attention_loop(X, poisoned(X, np.nan), X, P)),
    "loop: k last dim": ("k", lambda: m.multi_head_attention_loop(X, X[..., :6], X, P)),
    # single-head attention
    "sdpa k last dim": ("k", lambda: m.scaled_dot_product_attention(Y, Y[..., :3], Y)),
    "sdpa v shorter than k": ("v", lambda: m.scaled_dot_product_attention(Y, Y, Y[:, :3])),
    "sdpa batch dims": ("k", lambda: m.scaled_dot_product_attention(Y, np.zeros((3, 4, 4)), np.zeros((3, 4, 4)))),
    "sdpa q 1-D": ("q", lambda: m.scaled_dot_product_attention(Y[0, 0], Y, Y)),
    "sdpa mask does not broadcast": ("mask", lambda: m.scaled_dot_product_attention(Y, Y, Y, np.ones((3, 4), bool))),
    "sdpa mask not boolean": ("mask", lambda: m.scaled_dot_product_attention(Y, Y, Y, np.ones((4, 4)))),
    "sdpa NaN in q": ("q", lambda: m.scaled_dot_product_attention(poisoned(Y, np.nan), Y, Y)),
    "sdpa inf in k": ("k", lambda: m.scaled_dot_product_attention(Y, poisoned(Y, np.inf), Y)),
    "sdpa NaN in v": ("v", lambda: m.scaled_dot_product_attention(Y, Y, poisoned(Y, np.nan))),
    # softmax and masks
    "softmax NaN": ("x", lambda: m.softmax(np.array([0.0, np.nan]))),
    "softmax +inf": ("x", lambda: m.softmax(np.array([0.0, np.inf]))),
    "softmax complex": ("x", lambda: m.softmax(np.array([1j]))),
    "softmax 0-D": ("x", lambda: m.softmax(1.0)),
    "causal n zero": ("n", lambda: m.causal_mask(0)),
    "causal n float": ("n", lambda: m.causal_mask(4.0)),
    "causal n bool": ("n", lambda: m.causal_mask(True)),
    "padding length too long": ("lengths", lambda: m.padding_mask([2, 4], 3)),
    "padding length negative": ("lengths", lambda: m.padding_mask([-1], 3)),
    "padding lengths float": ("lengths", lambda: m.padding_mask([1.5], 3)),
    "padding lengths 2-D": ("lengths", lambda: m.padding_mask([[1]], 3)),
    "padding n zero": ("n", lambda: m.padding_mask([0], 0)),
    # costs
    "param_count h": ("h", lambda: param_count(512, 7)),
    "param_count d_model": ("d_model", lambda: param_count(0, 1)),
    "flop_count n_q": ("n_q", lambda: flop_count(0, 4, 8, 2)),
    "flop_count n_kv": ("n_kv", lambda: flop_count(4, -1, 8, 2)),
    "flop_count h": ("h", lambda: flop_count(4, 4, 8, 3)),
    "flop_count naive h": ("h", lambda: flop_count(4, 4, 8, 0, split=False)),
    "flop_count naive d_model": ("d_model", lambda: flop_count(4, 4, -8, 2, split=False)),
    "param_count naive h": ("h", lambda: param_count(8, 0, split=False)),
    "memory batch": ("batch", lambda: attention_memory_bytes(4, 4, 2, batch=0)),
    "memory n_kv": ("n_kv", lambda: attention_memory_bytes(4, 2.5, 2)),
    # The caller's argument, not the one an internal check would have blamed.
    "rope zero-width x": ("x", lambda: rope(X[..., :0])),
    "heads_above 3-D score": ("score", lambda: head_analysis.heads_above(np.eye(2)[None], 0.5)),
    "relation_accuracy no sentences": ("predicted", lambda: head_analysis.relation_accuracy([], [[(0, 1)]])),
    "offset_baseline no sentences": ("candidates", lambda: head_analysis.offset_baseline([], [[(0, 1)]])),
    "relation_accuracy arcs per sentence": (
        "arcs",
        lambda: head_analysis.relation_accuracy([np.array([1, 0])] * 2, [[(0, 1)]]),
    ),
    "cross_entropy empty vocabulary": (
        "logits",
        lambda: training.cross_entropy(np.zeros((2, 0)), np.zeros(2, int), np.ones(2)),
    ),
}


@pytest.mark.parametrize("name, call", BAD.values(), ids=BAD.keys())
def test_bad_input_raises_a_value_error_naming_the_argument(name, call):
    with pytest.raises(ValueError, match=rf"^{re.escape(name)}: expected .*got"):
        call()


@pytest.mark.parametrize("arg", ["q", "k", "v"])
def test_grads_with_an_extra_batch_dimension_name_where_the_output_shape_comes_from(arg):
    qkv = {"q": X, "k": X, "v": X} | {arg: X[None]}
    with pytest.raises(ValueError, match=rf"^grad_output: expected .* broadcast from .*{arg} \(1, 2, 5, 8\).*got"):
        gradients.multi_head_attention_grads(**qkv, params=P, grad_output=X)


def memory_error(max_bytes=None):
    """The message check_memory gives: it names q, k and max_bytes, the GiB needed and the limit."""
    return pytest.raises(
        ValueError,
        match=r"^q, k: the attention weights of shape .* would need [\d.]+ GiB, "
        r"expected at most max_bytes=[\d.]+ GiB",
    )


def test_max_bytes_is_the_exact_limit_on_the_weights():
    need = attention_memory_bytes(5, 5, 2, np.float64, batch=2)  # X, P: (2, h=2, 5, 5) float64 weights
    for f in (m.multi_head_attention, m.multi_head_attention_loop):
        assert f(X, X, X, P, max_bytes=need)[1].nbytes == need
        with memory_error():
            f(X, X, X, P, max_bytes=need - 1)
    assert m.scaled_dot_product_attention(Y, Y, Y, max_bytes=2 * 4 * 4 * 8)[1].nbytes == 2 * 4 * 4 * 8
    with memory_error():
        m.scaled_dot_product_attention(Y, Y, Y, max_bytes=2 * 4 * 4 * 8 - 1)


@pytest.mark.parametrize(
    "call",
    [
        lambda x, p: m.multi_head_attention(x, x, x, p),
        lambda x, p: m.multi_head_attention(x, x, x, p, need_weights=False),
        lambda x, p: m.multi_head_attention(x, x, x, p, m.causal_mask(1)),
        lambda x, p: m.multi_head_attention_loop(x, x, x, p),
        lambda x, p: m.scaled_dot_product_attention(x, x, x),
    ],
    ids=["batched", "batched without weights", "batched with mask", "loop", "single head"],
)
def test_a_million_tokens_are_refused_before_anything_big_is_allocated(call):
    # 10**6 tokens: one head's weights alone would be 10**12 floats (8 TB). The inputs are 32 MB; a
    # refusal made before any work allocates much less than one copy of them.
    x, p = np.zeros((10**6, 4)), m.init_params(4, 1)
    tracemalloc.start()
    try:
        with memory_error():
            call(x, p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < x.nbytes / 2, f"peak {peak / 2**20:.1f} MiB before refusing"
