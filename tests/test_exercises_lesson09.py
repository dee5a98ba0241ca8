"""Lesson 9's capstone checks: a right from-scratch solution passes each stage; each typical wrong one fails in the
right case, named.

The solutions below are written as a learner would, from numpy alone (mha.softmax for the one subtle step), so
the check is tested against code that shares nothing with the library it compares to.
"""

import numpy as np
import pytest

import mha_lesson as mha
from mha_lesson.exercises import Feedback
from mha_lesson.exercises import lesson09 as ex


def solution(
    *,
    scale="d_k",
    mask_mode="-inf",
    split_transpose=True,
    w_o=True,
    kv_from_q=False,
    v_from_k=False,
    own_softmax=False,
    transpose_with_T=False,
    transpose="swapaxes",
    axis=-1,
    return_pair=True,
    swap=(-3, -2),
    mask_axis=None,
    use_softmax=True,
    weights_first=False,
    kv_swapped=False,
    w_o_transposed=False,
    split_sizes="from the end",
    merge_by="reshape",
    split_by="reshape",
    weights_t="none",
    average_weights=False,
):
    """A learner's multi_head_attention; every keyword but the defaults plants one mistake."""

    def fn(q, k, v, params, mask=None):
        h = params.h
        d_k = params.d_model // h
        if kv_from_q:
            k = v = q
        if v_from_k:
            v = k

        def split(x):
            if split_sizes == "numbers":  # written for case 1's (5, 8) into 2 heads of 4
                return x.reshape(5, 2, 4).swapaxes(0, 1)
            if split_sizes == "front":  # written for one sequence (n, d_model): x.shape[0] taken as the tokens
                return x.reshape(x.shape[0], h, -1).swapaxes(0, 1)
            if split_by == "stack":  # the heads stacked on axis 0: right for one sequence only
                return np.stack(np.split(x, h, axis=-1))
            if split_by == "d_k, h":  # (..., n, d_k, h): head i gets every h-th column
                return np.moveaxis(x.reshape(*x.shape[:-1], d_k, h), -1, -3)
            if split_transpose:
                return x.reshape(*x.shape[:-1], h, d_k).swapaxes(*swap)
            return x.reshape(*x.shape[:-2], h, x.shape[-2], d_k)

        w_k, w_v = (params.w_v, params.w_k) if kv_swapped else (params.w_k, params.w_v)
        Q, K, V = split(q @ params.w_q), split(k @ w_k), split(v @ w_v)
        K_t = {
            "swapaxes": lambda: K.swapaxes(-1, -2),
            "T": lambda: K.T,
            "none": lambda: K,
            "fixed": lambda: K.transpose(0, 2, 1),  # right for one sequence's (h, n, d_k), wrong for a batch
            "swap01": lambda: K.swapaxes(0, 1),  # right for one head (n, d_k) only
            "swap12": lambda: K.swapaxes(1, 2),  # right for one sequence's (h, n, d_k), wrong for a batch
        }["T" if transpose_with_T else transpose]()
        divisor = {
            "d_k": np.sqrt(d_k),
            "d_model": np.sqrt(params.d_model),
            "none": 1.0,
            "d_k itself": d_k,
            "Q.shape[1]": np.sqrt(Q.shape[1]),  # d_k for one head (n, d_k), n for (h, n, d_k), h for a batch
            "Q.shape[0]": np.sqrt(Q.shape[0]),
            "n_kv": np.sqrt(K.shape[-2]),
        }[scale]
        scores = Q @ K_t / divisor
        if mask is not None and mask_axis is not None:  # an axis added "for the heads"
            mask = np.expand_dims(mask, mask_axis)
        if mask is not None:
            if mask_mode == "-inf":
                scores = np.where(mask, scores, -np.inf)
            elif mask_mode == "-1e9":  # a large negative number instead of -inf
                scores = np.where(mask, scores, -1e9)
            elif mask_mode == "+-1e9":  # the same number added as a bias (Hugging Face's style)
                scores = scores + np.where(mask, 0, -1e9)
            elif mask_mode == "flipped":
                scores = np.where(mask, -np.inf, scores)
            elif mask_mode == "zero":
                scores = scores * mask
        if not use_softmax:  # the scores handed on as the weights
            weights = scores
        elif own_softmax:  # the textbook formula: a row of -inf gives 0 / 0 = NaN
            e = np.exp(scores - scores.max(axis=axis, keepdims=True))
            weights = e / e.sum(axis=axis, keepdims=True)
        else:
            weights = mha.softmax(scores, axis=axis)
        if mask is not None and mask_mode == "after":  # masked once the softmax is done: rows no longer sum to 1
            weights = weights * mask
        heads = {"none": weights, "swapaxes": weights.swapaxes(-1, -2), "T": weights.T}[weights_t] @ V
        if merge_by == "d_k, h":  # the mirror image of split_by="d_k, h"
            concat = np.moveaxis(heads, -3, -1).reshape(*heads.shape[:-3], heads.shape[-2], h * d_k)
        elif merge_by == "concat":  # right for one sequence's (h, n, d_k): the list runs over axis 0
            concat = np.concatenate(list(heads), axis=-1)
        else:
            concat = heads.swapaxes(*swap)
            concat = concat.reshape(*concat.shape[:-2], h * d_k)
        out = concat @ (params.w_o.T if w_o_transposed else params.w_o) if w_o else concat
        if average_weights:  # PyTorch's default, average_attn_weights=True
            weights = weights.mean(axis=-3)
        if not return_pair:
            return out
        return (weights, out) if weights_first else (out, weights)

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
    assert cross.q.shape[-2] != cross.k.shape[-2] and cross.k.shape == cross.v.shape
    assert not np.allclose(cross.k, cross.v)  # values other than the keys: a layer that reads k twice fails
    batch = next(c for c in ex.CASES if "batch" in c.name)
    assert batch.q.ndim == 3 and batch.mask.shape == (3, 1, 1, 5)
    # batch + causal + padding together: the mask hides the future and sequence 1's padded keys 4 and 5
    both = next(c for c in ex.CASES if "causal and padding" in c.name)
    assert both.q.ndim == 3 and both.mask.shape == (2, 1, 6, 6)
    assert both.mask[0, 0].tolist() == np.tri(6, dtype=bool).tolist() and not both.mask[1, 0, :, 4:].any()
    # cross-attention in a padded batch: queries and keys of different lengths, padded encoder keys hidden
    batched_cross = next(c for c in ex.CASES if "cross-attention in a batch" in c.name)
    assert batched_cross.q.shape == (2, 6, 8) and batched_cross.k.shape == batched_cross.v.shape == (2, 7, 8)
    assert not np.allclose(batched_cross.k, batched_cross.v)
    assert batched_cross.mask.shape == (2, 1, 1, 7) and not batched_cross.mask[1, ..., 3:].any()
    assert batched_cross.params.h == 4
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
        ({"mask_mode": "after"}, 4, "applied after the softmax"),
        ({"kv_from_q": True}, 7, "keys and values must come from k and v"),
        ({"v_from_k": True}, 7, "values must come from v, not from k"),
        ({"own_softmax": True}, 10, "NaN weights"),
        ({"mask_mode": "-1e9", "own_softmax": True}, 10, "-1e9, not -inf"),  # the textbook softmax
        ({"mask_mode": "-1e9"}, 10, "spreads its weight evenly"),  # mha.softmax cannot rescue a row of -1e9 either
        ({"mask_mode": "+-1e9"}, 10, "keeps the softmax of its unmasked scores"),  # added as a bias
        ({"mask_mode": "+-1e9", "own_softmax": True}, 10, "added as a bias"),
        ({"scale": "d_k itself"}, 1, "divided by d_k itself, not by its square root √d_k. Fix: divide them by np.sqrt"),
        ({"use_softmax": False}, 1, "scaled scores themselves: the softmax over the keys is missing. Fix: weights ="),
        ({"kv_swapped": True}, 1, "K was made with params.w_v and V with params.w_k, or K and V were passed"),
        ({"w_o_transposed": True}, 1, "W^O transposed, concat @ params.w_o.T; rows i·d_k to (i+1)·d_k of params.w_o"),
        ({"weights_first": True}, 1, "Cause: the pair is in the wrong order, (weights, output). Fix: return output"),
        ({"split_sizes": "numbers"}, 2, "Cause: the sizes given to reshape do not fit this array"),
        ({"split_sizes": "front"}, 5, "Cause: the sizes given to reshape do not fit this array"),
        ({"merge_by": "concat"}, 5, "Cause: the merge lays the slices along axis 0 side by side"),
    ],
)
def test_each_mistake_fails_first_in_its_case_and_is_named(mistake, case, explanation):
    feedback = ex.check_capstone(solution(**mistake))
    assert not feedback.correct
    assert feedback.message.startswith(f"case {case} of {len(ex.CASES)}, {ex.CASES[case - 1].name}:"), feedback.message
    assert explanation in feedback.message, feedback.message


def test_a_solution_that_breaks_on_a_batch_says_so():
    """K.T transposes every axis: on a stack of heads numpy raises, and the check says why, not only numpy's error."""
    feedback = ex.check_capstone(solution(transpose_with_T=True))
    assert not feedback.correct and "raised ValueError" in feedback.message
    assert feedback.message.startswith("case 1 of")
    assert "K.T reverses every axis" in feedback.message and "K.swapaxes(-1, -2)" in feedback.message
    # numpy says the same for no transpose at all on these heads: the hint names both, not only K.T
    assert "no transpose at all gives the same error" in feedback.message


def test_no_transpose_at_all_is_not_blamed_on_k_t_alone():
    feedback = ex.check_capstone(solution(transpose="none"))
    assert feedback.message.startswith("case 1 of") and "raised ValueError" in feedback.message
    assert "not transposed right" in feedback.message and "no transpose at all" in feedback.message
    one_head = ex.check_attention(attention(transpose="none"))  # 2-d: K.T works, so numpy's message is K's alone
    assert one_head.message.startswith("case 1 of") and "Cause: the keys are not transposed." in one_head.message
    assert "K.T" not in one_head.message


def test_a_fixed_axes_transpose_fails_on_the_first_batch_and_says_count_from_the_end():
    feedback = ex.check_capstone(solution(transpose="fixed"))
    first_batch = next(i for i, c in enumerate(ex.CASES, start=1) if c.q.ndim == 3)
    assert feedback.message.startswith(f"case {first_batch} of"), feedback.message
    assert "axes don't match array" in feedback.message and "count from the end" in feedback.message
    assert "fits only arrays with exactly that many axes" in feedback.message  # true on a batch and on one head


def test_the_hint_follows_numpys_messages_for_each_wrong_transpose():
    Q, K = np.ones((2, 5, 4)), np.ones((2, 5, 4))
    with pytest.raises(ValueError) as with_t:
        Q @ K.T
    with pytest.raises(ValueError) as without:
        Q @ K
    assert str(with_t.value) == str(without.value)  # why the hint names both
    assert ex.transpose_hint(Q, K, str(with_t.value)) == ex.TRANSPOSE_OR_NONE
    Q3, K4 = np.ones((2, 3, 4)), np.ones((2, 4, 4))  # n_kv = d_k: Q @ K runs, only K.T fails
    with pytest.raises(ValueError) as only_t:
        Q3 @ K4.T
    assert ex.transpose_hint(Q3, K4, str(only_t.value)) == ex.TRANSPOSE
    assert ex.transpose_hint(Q, K, "axes don't match array") == ex.FIXED_AXES
    assert ex.transpose_hint(Q, K, "some other error") is None


def test_another_error_is_not_blamed_on_k_t():
    def wrong_width(q, k, v, params, mask=None):
        return mha.multi_head_attention(q[..., :-1], k, v, params, mask)  # drops a feature: a shape error

    feedback = ex.check_capstone(wrong_width)
    assert not feedback.correct and "raised ValueError" in feedback.message and "K.T" not in feedback.message


def test_the_k_t_error_is_the_one_numpy_gives_for_a_stack_of_heads():
    case = ex.CASES[0]
    Q, K = mha.split_heads(case.q @ case.params.w_q, 2), mha.split_heads(case.k @ case.params.w_k, 2)
    with pytest.raises(ValueError) as raised:
        Q @ K.T  # (2, 5, 4) @ (4, 5, 2): the batch axes 2 and 4 do not broadcast
    assert ex.transpose_error(Q, K) == str(raised.value)
    assert ex.transpose_error(Q[0], K[0]) is None  # one head, 2-d: K.T is right there


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


# --- stage 1: one head -----------------------------------------------------------------------------------


def attention(
    *,
    scale=True,
    mask_mode="-inf",
    own_softmax=False,
    axis=-1,
    transpose_with_T=False,
    transpose="",
    by_d_k=False,
    use_softmax=True,
    weights_first=False,
    d_k_axis=-1,
    weights_t="none",
):
    """A learner's scaled dot-product attention for (..., n, d_k) arrays; each keyword plants one mistake."""

    def fn(Q, K, V, mask=None):
        if transpose == "fixed":  # right for a stack of heads (h, n, d_k), wrong for one head (n, d_k)
            K_t = K.transpose(0, 2, 1)
        elif transpose == "swap01":  # right for one head (n, d_k), wrong for a stack of heads
            K_t = K.swapaxes(0, 1)
        else:
            K_t = K.T if transpose_with_T else (K if transpose == "none" else K.swapaxes(-1, -2))
        d_k = K.shape[-2] if d_k_axis == "n_kv" else Q.shape[d_k_axis]  # the size the scale is read from
        scores = Q @ K_t / (d_k if by_d_k else np.sqrt(d_k) if scale else 1.0)
        if mask is not None:
            scores = {
                "-inf": lambda: np.where(mask, scores, -np.inf),
                "-1e9": lambda: np.where(mask, scores, -1e9),
                "+-1e9": lambda: scores + np.where(mask, 0, -1e9),
                "flipped": lambda: np.where(mask, -np.inf, scores),
                "zero": lambda: scores * mask,
                "after": lambda: scores,  # masked below, once the softmax is done
            }[mask_mode]()
        if not use_softmax:
            weights = scores
        elif own_softmax:
            e = np.exp(scores - scores.max(axis=axis, keepdims=True))
            weights = e / e.sum(axis=axis, keepdims=True)
        else:
            weights = mha.softmax(scores, axis=axis)
        if mask is not None and mask_mode == "after":
            weights = np.where(mask, weights, 0.0)
        out = {"none": weights, "swapaxes": weights.swapaxes(-1, -2), "T": weights.T}[weights_t] @ V
        return (weights, out) if weights_first else (out, weights)

    return fn


def test_stage_1_a_right_head_and_the_library_pass():
    for fn in (attention(), mha.scaled_dot_product_attention):
        feedback = ex.check_attention(fn)
        assert feedback.correct, feedback.message
    blind = ex.HEAD_CASES[-1]
    assert (
        not blind.mask[3].any()
        and not mha.scaled_dot_product_attention(blind.q, blind.k, blind.v, blind.mask)[1][3].any()
    )
    assert ex.HEAD_CASES[1].q.shape[-2] != ex.HEAD_CASES[1].k.shape[-2]  # n_q != n_kv


@pytest.mark.parametrize(
    ("mistake", "case", "explanation"),
    [
        ({"scale": False}, 1, "not divided by √d_k"),
        ({"axis": -2}, 1, "softmax runs over the queries"),
        ({"mask_mode": "flipped"}, 3, "wrong way round"),
        ({"mask_mode": "zero"}, 3, "set them to -inf"),
        ({"mask_mode": "after"}, 3, "applied after the softmax"),
        ({"own_softmax": True}, 4, "NaN weights"),
        ({"mask_mode": "-1e9", "own_softmax": True}, 4, "-1e9, not -inf"),
        ({"mask_mode": "+-1e9"}, 4, "keeps the softmax of its unmasked scores"),
        ({"transpose_with_T": True}, 3, "K.T reverses every axis"),  # 2-d cases pass: K.T is right there
        ({"by_d_k": True}, 1, "divided by d_k itself, not by its square root √d_k. Fix: divide them by np.sqrt(d_k)"),
        ({"use_softmax": False}, 1, "scaled scores themselves: the softmax over the keys is missing. Fix: weights ="),
        ({"weights_first": True}, 1, "Cause: the pair is in the wrong order, (weights, output). Fix: return output"),
        ({"transpose": "fixed"}, 1, "fits only arrays with exactly that many axes"),  # one head (n, d_k): 2 axes
    ],
)
def test_stage_1_each_mistake_fails_first_in_its_case_and_is_named(mistake, case, explanation):
    feedback = ex.check_attention(attention(**mistake))
    assert not feedback.correct
    assert feedback.message.startswith(f"case {case} of {len(ex.HEAD_CASES)}, "), feedback.message
    assert explanation in feedback.message, feedback.message


def test_stage_1_placeholders_and_ignored_masks():
    assert "Replace None" in ex.check_attention(None).message
    assert "got 'str'" in ex.check_attention("my_attention").message
    ignored = ex.check_attention(lambda Q, K, V, mask=None: attention()(Q, K, V))
    assert not ignored.correct and "never applied" in ignored.message


# --- stage 2: split and merge ----------------------------------------------------------------------------


def split(x, h):
    return x.reshape(*x.shape[:-1], h, x.shape[-1] // h).swapaxes(-3, -2)


def merge(x):
    return x.swapaxes(-3, -2).reshape(*x.shape[:-3], x.shape[-2], x.shape[-3] * x.shape[-1])


def test_stage_2_right_split_and_merge_pass_and_equal_the_library():
    assert ex.check_split_merge(split, merge)
    assert ex.check_split_merge(mha.split_heads, mha.merge_heads)
    for _, x, h in ex.SPLIT_CASES:  # the test's own split is independent of the library's: compare them
        np.testing.assert_array_equal(split(x, h), mha.split_heads(x, h))


def test_stage_2_reshape_only_is_named_even_though_its_round_trip_works():
    def reshape_split(x, h):
        return x.reshape(*x.shape[:-2], h, x.shape[-2], x.shape[-1] // h)

    def reshape_merge(x):
        return x.reshape(*x.shape[:-3], x.shape[-2], -1)

    x, h = ex.SPLIT_CASES[0][1:]
    np.testing.assert_array_equal(reshape_merge(reshape_split(x, h)), x)  # the round trip cannot tell
    assert "reshapes alone" in ex.check_split_merge(reshape_split, reshape_merge).message
    assert "swap the h and n axes back" in ex.check_split_merge(split, reshape_merge).message
    assert "raised" in ex.check_split_merge(lambda x, h: x.reshape(h, -1, 3), merge).message
    assert "split gave shape (8,)" in ex.check_split_merge(lambda x, h: x[h], merge).message
    assert "Replace None" in ex.check_split_merge(None, merge).message


def test_the_notebook_solutions_and_its_worked_split_pass_the_checks():
    """What a stuck learner copies from the notebook's two Solution blocks passes every check, the split and merge
    (stage 2's helpers) included; the hints' two moves (reshape, then swap) on one (5, 8) sequence are
    check_split_merge's first case."""
    import json
    import re
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "09_capstone.ipynb").read_text("utf-8"))
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    blocks = re.findall(r"<summary>Solution</summary>\s*(?:With[^\n]*\n\s*)?```python\n(.*?)```", text, re.S)
    assert len(blocks) == 2
    namespace = {"np": np, "mha": mha, "ex": ex}
    for block in blocks:
        exec(block, namespace)  # noqa: S102 (the notebook's own solution text)
    assert ex.check_attention(namespace["my_attention"]).correct
    assert ex.check_split_merge(namespace["my_split"], namespace["my_merge"]).correct
    assert ex.check_capstone(namespace["my_multi_head_attention"]).correct
    label, x, h = ex.SPLIT_CASES[0]
    heads = x.reshape(5, h, 4).swapaxes(0, 1)  # the worked example's two moves
    assert x.shape == (5, 8) and h == 2 and np.array_equal(heads, mha.split_heads(x, h))


def test_a_wrong_value_is_reported_as_what_came_against_what_was_expected():
    """One entry: the weights' worst one (its index names head, query and key), from an independent computation."""
    case = ex.CASES[-1]  # query 2 sees no key
    fn = solution(mask_mode="-1e9")
    got = fn(case.q, case.k, case.v, case.params, case.mask)[1]
    want = mha.multi_head_attention(case.q, case.k, case.v, case.params, case.mask)[1]
    worst = np.unravel_index(np.abs(got - want).argmax(), got.shape)
    assert worst[1] == 2 and want[worst] == 0  # the blind query, which should get nothing
    index = ", ".join(str(int(i)) for i in worst)
    message = ex.check_capstone(fn).message
    assert f"weights[{index}] is {got[worst]:.3g}, expected 0. Cause: the masked scores are -1e9" in message
    assert "Fix: np.where(mask, scores, -np.inf)" in message
    only_output = ex.check_capstone(solution(v_from_k=True)).message  # the weights are right: the output is named
    assert "output[" in only_output and "weights[" not in only_output
    shape = ex.check_attention(lambda Q, K, V, mask=None: (Q, K)).message
    assert "weights have shape (5, 4), expected (5, 5)" in shape


def test_the_layers_check_tries_the_learners_split_and_merge_first():
    reshape_split = solution(split_transpose=False)  # the layer with the same mistake, for the layer's own check

    def bad_split(x, h):
        return x.reshape(*x.shape[:-2], h, x.shape[-2], x.shape[-1] // h)

    first = ex.check_capstone(reshape_split, bad_split, merge)
    assert first.message.startswith("my_split and my_merge first: case 1 of 3") and "reshapes alone" in first.message
    assert "split returned None" in ex.check_capstone(None, lambda x, h: None, merge).message
    assert "merge returned None" in ex.check_capstone(None, split, lambda x: None).message
    assert "Replace None" in ex.check_capstone(None, split, merge).message  # helpers right: now the layer
    assert ex.check_capstone(solution(), split, merge).correct


@pytest.mark.parametrize(
    ("axis", "case", "shapes"),
    [
        (
            0,
            5,
            "weights have shape (1, 3, 2, 5, 5), expected (3, 2, 5, 5). Cause: the mask got an extra axis, shape "
            "(1, 3, 1, 1, 5)",
        ),  # mask[None]: harmless on (6, 6), a new leading axis on a batch's (3, 1, 1, 5)
        (1, 4, "with shapes (6,1,6) (2,6,6) () . Cause: the mask got an extra axis, shape (6, 1, 6)"),  # mask[:, None]
        (
            -1,
            4,
            "with shapes (6,6,1) (2,6,6) () . Cause: the mask got an extra axis, shape (6, 6, 1)",
        ),  # mask[..., None]
    ],
)
def test_a_mask_given_an_extra_axis_is_named_with_the_shape_it_should_keep(axis, case, shapes):
    message = ex.check_capstone(solution(mask_axis=axis)).message
    assert message.startswith(f"case {case} of 10, {ex.CASES[case - 1].name}: "), message
    assert shapes in message and "already broadcasts to the weights' shape (..., h, n_q, n_kv)" in message
    assert "Fix: pass it on unchanged" in message


def test_swapaxes_0_1_in_the_split_and_merge_is_named_on_the_first_batch():
    def split01(x, h):
        return x.reshape(*x.shape[:-1], h, x.shape[-1] // h).swapaxes(0, 1)  # right for one sequence only

    def merge01(x):
        y = x.swapaxes(0, 1)
        return y.reshape(*y.shape[:-2], y.shape[-2] * y.shape[-1])

    x, h = ex.SPLIT_CASES[0][1:]
    np.testing.assert_array_equal(split01(x, h), mha.split_heads(x, h))  # one sequence cannot tell
    message = ex.check_split_merge(split01, merge01).message
    assert message.startswith("case 2 of 3, a batch: (3, 5, 12) into h = 4 heads: split gave shape (5, 3, 4, 3)")
    assert "swapped the batch (axis 0) and the tokens (axis 1)" in message and ".swapaxes(-3, -2)" in message
    message = ex.check_split_merge(split, merge01).message
    assert "merge gave shape (4, 3, 15)" in message and "swapped the batch (axis 0) and the heads (axis 1)" in message

    def merge01_to_x(x):  # the same swap, reshaped to x's own shape: the message must not print two equal shapes
        return x.swapaxes(0, 1).reshape(*x.shape[:-3], x.shape[-2], -1)

    message = ex.check_split_merge(split, merge01_to_x).message
    y = mha.split_heads(ex.SPLIT_CASES[1][1], 4)
    back, x = merge01_to_x(y), ex.SPLIT_CASES[1][1]
    where = np.unravel_index(np.abs(back - x).argmax(), x.shape)
    assert "merge gave x's shape (3, 5, 12) but not its values" in message, message
    assert f"entry [{', '.join(map(str, where))}] is {back[where]:.3g}, x has {x[where]:.3g}" in message
    assert "swapped the batch (axis 0) and the heads (axis 1)" in message and "it must give x back" not in message
    # the layer alone, split inside it: numpy's error names the scores (5, 3, 2, 2) such a split makes
    message = ex.check_capstone(solution(swap=(0, 1))).message
    assert message.startswith("case 5 of 10,") and "(5,3,2,2)" in message, message
    assert "Cause: the heads are split with swapaxes(0, 1)" in message and ".swapaxes(-3, -2)" in message
    assert "swapaxes(0, 1)" not in ex.check_capstone(solution(transpose="fixed")).message  # other errors: no guess


def test_a_loop_over_heads_that_hands_each_head_the_whole_mask_is_named_beside_the_extra_axis():
    # Each head's scores (batch, n_q, n_kv) meet a (batch, 1, 1, n_kv) mask: the same weights, number for number, as
    # mask[:, None] on all heads' scores, so the message names both and the per-head fix.
    def looped(q, k, v, params, mask=None):
        Q, K, V = (mha.split_heads(x @ w, params.h) for x, w in ((q, params.w_q), (k, params.w_k), (v, params.w_v)))
        outs, weights = [], []
        for i in range(params.h):
            scores = Q[..., i, :, :] @ K[..., i, :, :].swapaxes(-1, -2) / np.sqrt(params.d_k)
            w = mha.softmax(scores if mask is None else np.where(mask, scores, -np.inf), axis=-1)
            outs.append(w @ V[..., i, :, :])
            weights.append(w)
        heads, weights = np.stack(outs, axis=-3), np.stack(weights, axis=-3)
        return mha.merge_heads(heads) @ params.w_o, weights

    c = ex.CASES[4]
    args = (c.q, c.k, c.v, c.params, c.mask)
    np.testing.assert_allclose(looped(*args)[1], solution(mask_axis=1)(*args)[1], rtol=0, atol=1e-15)
    message = ex.check_capstone(looped).message
    assert message.startswith("case 5 of 10,") and "weights have shape (3, 3, 2, 5, 5)" in message, message
    assert "Either it got an extra axis (shape (3, 1, 1, 1, 5)), or, in a loop over heads" in message
    assert "np.broadcast_to(mask, scores.shape)[..., i, :, :]" in message
    assert "in a loop" not in ex.check_capstone(solution(mask_axis=0)).message  # mask[None]: no loop gives its shape


def test_a_fixed_axes_transpose_in_the_split_gets_the_heads_fix_too():
    def layer(q, k, v, params, mask=None):
        def split(x):  # (n, h, d_k) -> (h, n, d_k): right for one sequence, numpy's error on a batch
            return x.reshape(*x.shape[:-1], params.h, params.d_k).transpose(1, 0, 2)

        Q, K, V = split(q @ params.w_q), split(k @ params.w_k), split(v @ params.w_v)
        heads, weights = mha.scaled_dot_product_attention(Q, K, V, mask)
        return mha.merge_heads(heads) @ params.w_o, weights

    message = ex.check_capstone(layer).message
    assert message.startswith("case 5 of 10,") and "axes don't match array" in message, message
    assert "x.transpose(1, 0, 2) in a split" in message and ".swapaxes(-3, -2) for the heads" in message


def test_a_float_head_width_from_true_division_is_named_with_integer_division_as_the_fix():
    """d_k = d_model / h is a float in Python, which numpy's reshape refuses with a TypeError that names no cause."""

    def float_split(x, h):
        return x.reshape(*x.shape[:-1], h, x.shape[-1] / h).swapaxes(-3, -2)

    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):  # numpy's own words, which we match
        float_split(ex.SPLIT_CASES[0][1], 2)
    message = ex.check_split_merge(float_split, merge).message
    assert message.startswith("case 1 of 3") and "split raised TypeError" in message
    assert "Cause: a size or count is a float" in message and "d_k = d_model // h" in message

    def float_layer(q, k, v, params, mask=None):  # the same split inside the layer
        Q = float_split(q @ params.w_q, params.h)
        return Q, Q

    message = ex.check_capstone(float_layer).message
    assert "raised TypeError" in message and "Cause: a size or count is a float" in message
    other = ex.check_split_merge(lambda x, h: x.reshape(h, "3"), merge).message  # another TypeError: no guess
    assert "raised TypeError" in other and "Cause" not in other


# --- the newcomers' mistakes: each named with its cause and fix, in every stage where it can occur ------------


def rows_softmax(scores):
    """The textbook softmax over the keys (the last axis), for the cases without a mask."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def worst(got, want):
    """The entry where got is farthest from want, as the check prints its index, and the two values there."""
    where = np.unravel_index(np.abs(got - want).argmax(), got.shape)
    return ", ".join(str(int(i)) for i in where), got[where], want[where]


def vars_of(case):
    """A stage 2 case's arguments, (q, k, v, params, mask)."""
    return case.q, case.k, case.v, case.params, case.mask


def layer_by_hand(case, *, divisor="√d_k", kv_swapped=False, w_o_transposed=False):
    """Case 1's layer (no mask) written out with this file's split and merge: (output, weights)."""
    p = case.params
    w_k, w_v = (p.w_v, p.w_k) if kv_swapped else (p.w_k, p.w_v)
    Q, K, V = split(case.q @ p.w_q, p.h), split(case.k @ w_k, p.h), split(case.v @ w_v, p.h)
    d_k = Q.shape[-1]
    weights = rows_softmax(Q @ K.swapaxes(-1, -2) / (np.sqrt(d_k) if divisor == "√d_k" else d_k))
    return merge(weights @ V) @ (p.w_o.T if w_o_transposed else p.w_o), weights


def test_scores_divided_by_d_k_are_named_in_both_stages_at_the_entry_they_get_wrong():
    case = ex.HEAD_CASES[0]
    assert case.mask is None and case.q.shape[-1] == 4  # √4 = 2 is not 4: the two divisors differ
    scores = case.q @ case.k.T
    index, got, want = worst(rows_softmax(scores / 4), rows_softmax(scores / 2))
    assert ex.check_attention(attention(by_d_k=True)).message == (
        f"case 1 of 4, {case.name}: weights[{index}] is {got:.3g}, expected {want:.3g}. Cause: the scores are "
        "divided by d_k itself, not by its square root √d_k. Fix: divide them by np.sqrt(d_k)."
    )
    layer_case = ex.CASES[0]
    np.testing.assert_allclose(layer_by_hand(layer_case)[1], mha.multi_head_attention(*vars_of(layer_case))[1])
    index, got, want = worst(layer_by_hand(layer_case, divisor="d_k")[1], layer_by_hand(layer_case)[1])
    message = ex.check_capstone(solution(scale="d_k itself")).message
    assert message.startswith(f"case 1 of 10, {layer_case.name}: weights[{index}] is {got:.3g}, expected {want:.3g}.")
    assert "Cause: the scores are divided by d_k itself" in message and "Fix: divide them by np.sqrt(d_k)." in message
    # the other scale mistakes keep their own causes, and a right answer passes
    assert "d_k itself" not in ex.check_attention(attention(scale=False)).message
    for other in ("none", "d_model"):
        assert "d_k itself" not in ex.check_capstone(solution(scale=other)).message
    assert ex.check_attention(attention()).correct and ex.check_capstone(solution()).correct


def test_scores_handed_on_as_the_weights_are_named_a_missing_softmax():
    case = ex.HEAD_CASES[0]
    scores = case.q @ case.k.T / 2  # what this learner returns as the weights
    index, got, want = worst(scores, rows_softmax(scores))
    message = ex.check_attention(attention(use_softmax=False)).message
    assert message == (
        f"case 1 of 4, {case.name}: weights[{index}] is {got:.3g}, expected {want:.3g}. Cause: the weights are the "
        "scaled scores themselves: the softmax over the keys is missing. Fix: weights = mha.softmax(scores, axis=-1), "
        "one row per query over the keys, then weights @ V."
    )
    message = ex.check_capstone(solution(use_softmax=False)).message
    assert message.startswith(f"case 1 of 10, {ex.CASES[0].name}: weights[")
    assert "scaled scores themselves: the softmax over the keys is missing" in message
    # no known mistake gives these, but negative weights cannot be a softmax's: unscaled scores, in both stages
    assert (case.q @ case.k.T < 0).any()
    for message in (
        ex.check_attention(attention(scale=False, use_softmax=False)).message,
        ex.check_capstone(solution(scale="none", use_softmax=False)).message,
    ):
        assert message.startswith("case 1 of") and "Cause: some weights are negative" in message, message
        assert "Fix: weights = mha.softmax(scores, axis=-1)" in message

    def right_output_scores_as_weights(Q, K, V, mask=None):
        out, _ = attention()(Q, K, V, mask)
        return out, Q @ K.swapaxes(-1, -2) / np.sqrt(Q.shape[-1])

    message = ex.check_attention(right_output_scores_as_weights).message
    assert "weights[" in message and "output[" not in message and "some weights are negative" in message
    # weights that are not a softmax's but never negative: their own cause, or none, never a missing softmax
    after = ex.check_attention(attention(mask_mode="after")).message
    assert "applied after the softmax" in after and "softmax over the keys is missing" not in after
    assert "negative" not in ex.check_capstone(solution(mask_mode="after")).message

    def shifted(Q, K, V, mask=None):
        out, weights = attention()(Q, K, V, mask)
        return out, weights + 0.1

    assert "Cause" not in ex.check_attention(shifted).message


def test_a_pair_in_the_wrong_order_is_named_with_both_shapes_and_the_reference_order():
    case = ex.HEAD_CASES[0]
    n_q, n_kv, d_k = case.q.shape[0], case.k.shape[0], case.v.shape[1]
    assert ex.check_attention(attention(weights_first=True)).message == (
        f"case 1 of 4, {case.name}: it returned (weights, output): the first array has the weights' shape "
        f"{(n_q, n_kv)}, the second the output's {(n_q, d_k)}. Cause: the pair is in the wrong order, (weights, "
        "output). Fix: return output, weights, the order mha.scaled_dot_product_attention gives."
    )
    layer_case = ex.CASES[0]
    h, n, d_model = layer_case.params.h, *layer_case.q.shape
    message = ex.check_capstone(solution(weights_first=True)).message
    assert message.startswith(f"case 1 of 10, {layer_case.name}: it returned (weights, output)"), message
    assert f"the weights' shape {(h, n, n)}, the second the output's {(n, d_model)}" in message
    assert "Fix: return output, weights, the order mha.multi_head_attention gives." in message
    # the wrong order and a wrong scale: both are named, the second at the entry it gets wrong
    scores = case.q @ case.k.T
    index, got, want = worst(rows_softmax(scores / 4), rows_softmax(scores / 2))
    message = ex.check_attention(attention(weights_first=True, by_d_k=True)).message
    assert "Cause: the pair is in the wrong order" in message
    swapped_back = f"Swapped back, weights[{index}] is {got:.3g}, expected {want:.3g}. Cause: the scores are divided"
    assert swapped_back in message, message
    # two arrays of other shapes, or two outputs, are not blamed on the order
    for fn in (lambda Q, K, V, mask=None: (Q, K), lambda Q, K, V, mask=None: (attention()(Q, K, V)[0],) * 2):
        assert "wrong order" not in ex.check_attention(fn).message


def test_stage_1_names_its_own_reference_when_the_result_is_not_a_pair():
    message = ex.check_attention(lambda Q, K, V, mask=None: Q @ K.swapaxes(-1, -2)).message
    assert "returned ndarray; return a pair (output, weights), as mha.scaled_dot_product_attention does" in message
    assert "multi_head_attention" not in message
    message = ex.check_capstone(solution(return_pair=False)).message  # stage 2 keeps the layer's name
    assert "return a pair (output, weights), as mha.multi_head_attention does" in message


def test_stage_1_success_says_which_of_the_five_steps_it_is():
    for fn in (attention(), mha.scaled_dot_product_attention):
        feedback = ex.check_attention(fn)
        assert feedback.correct and feedback.message.endswith(
            "That is step 3 of the layer's five; stage 2 puts them together."
        )


def test_a_fixed_axes_transpose_on_one_head_gets_a_cause_true_for_two_axes():
    one, stack = ex.HEAD_CASES[0], ex.HEAD_CASES[2]
    fixed = attention(transpose="fixed")
    with pytest.raises(ValueError, match="axes don't match array"):  # numpy's own words, on one head's (5, 4)
        one.k.transpose(0, 2, 1)
    got = fixed(stack.q, stack.k, stack.v, stack.mask)  # on a stack of heads, (2, 5, 4), it is right
    np.testing.assert_allclose(got[1], attention()(stack.q, stack.k, stack.v, stack.mask)[1])
    message = ex.check_attention(fixed).message
    assert message.startswith(f"case 1 of 4, {one.name}: it raised ValueError: axes don't match array. Cause: a ")
    assert "fits only arrays with exactly that many axes" in message and "one head or sequence" in message
    assert "Fix: count from the end: K.swapaxes(-1, -2) for the keys" in message
    assert "fails on a batch" not in message  # not true here: the case is one head, an axis fewer
    assert "exactly that many axes" not in ex.check_attention(attention(transpose_with_T=True)).message


def test_keys_and_values_projected_with_each_others_matrices_are_named():
    case = ex.CASES[0]
    p = case.params
    assert not np.allclose(p.w_k, p.w_v)
    index, got, want = worst(layer_by_hand(case, kv_swapped=True)[1], layer_by_hand(case)[1])
    message = ex.check_capstone(solution(kv_swapped=True)).message
    assert message == (
        f"case 1 of 10, {case.name}: weights[{index}] is {got:.3g}, expected {want:.3g}. Cause: the keys and the "
        "values are swapped: K was made with params.w_v and V with params.w_k, or K and V were passed to the attention "
        "in each other's places. Fix: K = my_split(k @ params.w_k, h), V = my_split(v @ params.w_v, h), then "
        "my_attention(Q, K, V, mask)."
    )
    for other in ({"kv_from_q": True}, {"v_from_k": True}):  # their own causes, not this one
        assert "each other's places" not in ex.check_capstone(solution(**other)).message


def test_w_o_transposed_is_named_at_the_output_entry_it_gets_wrong():
    case = ex.CASES[0]
    assert not np.allclose(case.params.w_o, case.params.w_o.T)
    (got_out, got_w), (want_out, want_w) = layer_by_hand(case, w_o_transposed=True), layer_by_hand(case)
    np.testing.assert_allclose(got_w, want_w)  # the weights are right: the output is named
    index, got, want = worst(got_out, want_out)
    message = ex.check_capstone(solution(w_o_transposed=True)).message
    assert message == (
        f"case 1 of 10, {case.name}: output[{index}] is {got:.3g}, expected {want:.3g}. Cause: the concatenated heads "
        "are multiplied by W^O transposed, concat @ params.w_o.T; rows i·d_k to (i+1)·d_k of params.w_o are the ones "
        "that read head i. Fix: my_merge(heads) @ params.w_o."
    )
    assert "transposed" not in ex.check_capstone(solution(w_o=False)).message


def test_split_and_merge_sizes_fixed_for_one_case_are_named_with_sizes_counted_from_the_end():
    (_, x1, h1), (label2, x2, h2) = ex.SPLIT_CASES[:2]
    split_fix = (
        "Fix: take the sizes from x.shape, counting from the end: x.reshape(*x.shape[:-1], h, x.shape[-1] // h)"
        ".swapaxes(-3, -2)."
    )
    merge_fix = "x.swapaxes(-3, -2).reshape(*x.shape[:-3], x.shape[-2], -1)."
    y2 = split(x2, h2)
    np.testing.assert_array_equal(y2.swapaxes(-3, -2).reshape(*y2.shape[:-3], y2.shape[-2], -1), x2)  # the fix works

    def numbers(x, h):  # written for case 1, (5, 8) into 2 heads of 4
        return x.reshape(5, 2, 4).swapaxes(0, 1)

    def front(x, h):  # written for one sequence (n, d_model)
        return x.reshape(x.shape[0], h, -1).swapaxes(0, 1)

    for one_sequence_only in (numbers, front):
        np.testing.assert_array_equal(one_sequence_only(x1, h1), split(x1, h1))  # case 1 cannot tell
    message = ex.check_split_merge(numbers, merge).message
    assert message.startswith(
        f"case 2 of 3, {label2}: split raised ValueError: cannot reshape array of size 180 into shape (5,2,4). Cause: "
        "the sizes given to reshape do not fit this array: numbers written for one case"
    )
    assert message.endswith(split_fix) and "axis 0 is the tokens of one sequence but the batch" in message
    message = ex.check_split_merge(lambda x, h: x.reshape(5, 4, 3), merge).message  # the sizes of another case
    assert message.startswith("case 1 of 3") and "size 40 into shape (5,4,3). Cause: the sizes" in message
    message = ex.check_split_merge(front, merge).message
    shape = (h2, x2.shape[0], x2.shape[1] * x2.shape[2] // h2)  # (4, 3, 15): the batch read as the tokens
    assert message == (
        f"case 2 of 3, {label2}: split gave shape {shape}, expected (..., h, n, d_k) = {y2.shape}. Cause: "
        + ex.SPLIT_SIZES
    )
    assert message.endswith(split_fix)

    def merge_numbers(x):  # written for case 1's (2, 5, 4)
        return x.swapaxes(0, 1).reshape(5, 8)

    np.testing.assert_array_equal(merge_numbers(split(x1, h1)), x1)
    message = ex.check_split_merge(split, merge_numbers).message
    assert message.startswith(
        f"case 2 of 3, {label2}: merge raised ValueError: cannot reshape array of size 180 into shape (5,8). Cause: "
        "the sizes given to reshape do not fit this array"
    )
    assert "axis 0 is the heads of one sequence but the batch of a batch" in message and message.endswith(merge_fix)
    # in the layer: the numbers fail on case 2, (4, 6) with one head; x.shape[0] fails on the first batch
    message = ex.check_capstone(solution(split_sizes="numbers")).message
    assert message.startswith(
        f"case 2 of 10, {ex.CASES[1].name}: it raised ValueError: cannot reshape array of size "
        f"{4 * 6} into shape (5,2,4). Cause: the sizes given to reshape do not fit this array"
    )
    assert (
        "x.reshape(*x.shape[:-1], h, x.shape[-1] // h).swapaxes(-3, -2) to split" in message
        and f"{merge_fix[:-1]} to merge" in message
    )
    batch = ex.CASES[4]
    flat = batch.q.reshape(3, 2, -1).swapaxes(0, 1)  # (2, 3, 20): its scores are (2, 3, 3)
    scores_shape = "(" + ",".join(map(str, (*flat.shape[:-1], flat.shape[-2]))) + ")"
    message = ex.check_capstone(solution(split_sizes="front")).message
    assert message.startswith(f"case 5 of 10, {batch.name}: it raised ValueError") and scores_shape in message
    assert message.endswith(split_fix) and "to merge" not in message
    # other errors keep their own causes, or none
    assert "sizes given to reshape" not in ex.check_capstone(solution(swap=(0, 1))).message
    assert "sizes given to reshape" not in ex.check_capstone(solution(transpose="fixed")).message
    assert "Cause" not in ex.check_split_merge(lambda x, h: np.stack(np.split(x, 3, axis=-1)), merge).message

    def wrong_width(q, k, v, params, mask=None):
        return mha.multi_head_attention(q[..., :-1], k, v, params, mask)

    assert "Cause" not in ex.check_capstone(wrong_width).message


def test_a_merge_that_concatenates_over_axis_0_is_named_on_a_batch():
    (_, x1, h1), (label2, x2, h2) = ex.SPLIT_CASES[:2]

    def concat_merge(x):
        return np.concatenate(list(x), axis=-1)

    np.testing.assert_array_equal(concat_merge(split(x1, h1)), x1)  # one sequence (h, n, d_k): right
    batch, n, d_model = x2.shape
    got_shape = (h2, n, batch * d_model // h2)  # (4, 5, 9): the batch's sequences side by side
    assert concat_merge(split(x2, h2)).shape == got_shape
    message = ex.check_split_merge(split, concat_merge).message
    assert message.startswith(
        f"case 2 of 3, {label2}: merge gave shape {got_shape}; it must give x back, shape {x2.shape}. Cause: the merge "
        "lays the slices along axis 0 side by side, as np.concatenate(list(x), axis=-1) does"
    )
    assert "on a batch (batch, h, n, d_k) axis 0 is the batch" in message
    assert message.endswith("then reshape: x.swapaxes(-3, -2).reshape(*x.shape[:-3], x.shape[-2], -1).")
    # in the layer: on the first batch, (h, n, 3 sequences · d_k = 12) meets W^O's 8 rows
    case = ex.CASES[4]
    message = ex.check_capstone(solution(merge_by="concat")).message
    width = case.q.shape[0] * case.params.d_k
    assert message.startswith(f"case 5 of 10, {case.name}: it raised ValueError"), message
    assert f"(size {case.params.d_model} is different from {width})" in message  # numpy's matmul error
    assert "Cause: the merge lays the slices along axis 0 side by side" in message
    # other wrong merges keep their own messages

    def merge01(x):
        y = x.swapaxes(0, 1)
        return y.reshape(*y.shape[:-2], y.shape[-2] * y.shape[-1])

    def reshape_merge(x):
        return x.reshape(*x.shape[:-3], x.shape[-2], -1)

    for other in (merge01, reshape_merge):
        assert "side by side" not in ex.check_split_merge(split, other).message
    assert "side by side" not in ex.check_capstone(solution(swap=(0, 1))).message
    assert ex.check_split_merge(split, merge).correct and ex.check_capstone(solution(), split, merge).correct


def test_a_fixed_axes_transpose_in_split_or_merge_is_named_there_too():
    def split_fixed(x, h):
        return x.reshape(*x.shape[:-1], h, x.shape[-1] // h).transpose(1, 0, 2)

    def merge_fixed(x):
        return x.transpose(1, 0, 2).reshape(x.shape[1], -1)

    x1, h1 = ex.SPLIT_CASES[0][1:]
    np.testing.assert_array_equal(split_fixed(x1, h1), split(x1, h1))  # one sequence: right
    np.testing.assert_array_equal(merge_fixed(split(x1, h1)), x1)
    for message, who in (
        (ex.check_split_merge(split_fixed, merge).message, "split"),
        (ex.check_split_merge(split, merge_fixed).message, "merge"),
    ):
        assert message.startswith(f"case 2 of 3, {ex.SPLIT_CASES[1][0]}: {who} raised ValueError: axes don't match")
        assert "Cause: a transpose with fixed axes" in message and ".swapaxes(-3, -2) for the heads" in message


# --- the newcomers' second round: axes counted from the front, the scale, the weights, the split's layout -------


def attend_by_hand(Q, K, V, mask=None, divisor=None):
    """softmax(Q Kᵀ / divisor) V over the last two axes, numpy alone (no query here sees no key): (output, weights)."""
    scores = Q @ np.swapaxes(K, -1, -2) / (np.sqrt(Q.shape[-1]) if divisor is None else divisor)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = rows_softmax(scores)
    return weights @ V, weights


def layer_from(split_fn=split, merge_fn=merge, attend=attend_by_hand):
    """A learner's layer built on its own split, merge and attention (each may hold a mistake)."""

    def fn(q, k, v, params, mask=None):
        h = params.h
        Q, K, V = split_fn(q @ params.w_q, h), split_fn(k @ params.w_k, h), split_fn(v @ params.w_v, h)
        heads, weights = attend(Q, K, V, mask)
        return merge_fn(heads) @ params.w_o, weights

    return fn


def numpy_error(product):
    """The message of the ValueError that product() raises, from numpy itself."""
    with pytest.raises(ValueError) as raised:
        product()
    return str(raised.value)


UNPACK_FIX = (
    "Fix: count from the end: x.shape[-1] for the last axis (d_model or d_k), x.shape[-2] for the tokens, "
    "x.shape[:-2] for the leading axes, however many, and .swapaxes(-3, -2) for the heads."
)


def test_sizes_unpacked_from_a_shape_for_one_number_of_axes_are_named_in_every_stage():
    def split_2d(x, h):  # written for one sequence
        n, d_model = x.shape
        return x.reshape(n, h, d_model // h).swapaxes(0, 1)

    def split_3d(x, h):  # the mirror image, written for a batch
        batch, n, d_model = x.shape
        return x.reshape(batch, n, h, d_model // h).transpose(0, 2, 1, 3)

    def merge_3d(x):  # written for one sequence's heads (h, n, d_k)
        h, n, d_k = x.shape
        return x.swapaxes(0, 1).reshape(n, h * d_k)

    (label1, x1, h1), (label2, x2, h2) = ex.SPLIT_CASES[:2]
    np.testing.assert_array_equal(split_2d(x1, h1), split(x1, h1))  # right for one sequence
    assert numpy_error(lambda: split_2d(x2, h2)) == "too many values to unpack (expected 2)"
    message = ex.check_split_merge(split_2d, merge).message
    assert message == (
        f"case 2 of 3, {label2}: split raised ValueError: too many values to unpack (expected 2). Cause: the sizes are "
        "unpacked from a shape into 2 names, as in n, d_model = x.shape, which fits only arrays of exactly 2 axes "
        "(this one has more): the cases pass one head or sequence, stacks of heads, batches and a batch of batches, "
        f"with 2 to 5 axes. {UNPACK_FIX}"
    )
    message = ex.check_split_merge(split_3d, merge).message
    assert message.startswith(
        f"case 1 of 3, {label1}: split raised ValueError: not enough values to unpack (expected 3, got 2). Cause: the "
        "sizes are unpacked from a shape into 3 names, as in batch, n, d_model = x.shape, which fits only arrays of "
        "exactly 3 axes (this one has 2)"
    )
    assert message.endswith(UNPACK_FIX)
    message = ex.check_split_merge(split, merge_3d).message
    assert message.startswith(f"case 2 of 3, {label2}: merge raised ValueError: too many values to unpack (expected 3)")
    assert "into 3 names, as in batch, n, d_model = x.shape" in message and message.endswith(UNPACK_FIX)
    # in the layer: the 2-d split fails on the first batch, the 3-d one on case 1; in stage 1, on the stack of heads
    first_batch = next(i for i, c in enumerate(ex.CASES, start=1) if c.q.ndim == 3)
    for split_fn, case, expected in ((split_2d, first_batch, "expected 2"), (split_3d, 1, "expected 3, got 2")):
        message = ex.check_capstone(layer_from(split_fn)).message
        assert message.startswith(f"case {case} of 10, {ex.CASES[case - 1].name}: it raised ValueError"), message
        assert f"values to unpack ({expected}). Cause: the sizes are unpacked from a shape" in message
        assert message.endswith(UNPACK_FIX)

    def attention_2d(Q, K, V, mask=None):
        n_q, d_k = Q.shape
        return attention()(Q, K, V, mask)

    message = ex.check_attention(attention_2d).message
    assert message.startswith(f"case 3 of 4, {ex.HEAD_CASES[2].name}: it raised ValueError: too many values")
    assert "Cause: the sizes are unpacked from a shape into 2 names" in message and message.endswith(UNPACK_FIX)


def test_another_unpacking_that_fails_the_same_way_gets_no_cause():
    def three_results(Q, K, V, mask=None):
        out, weights = attend_by_hand(Q, K, V, mask)
        return out, weights, Q @ K.swapaxes(-1, -2)

    def layer(q, k, v, params, mask=None):
        Q, K, V = (split(x @ w, params.h) for x, w in ((q, params.w_q), (k, params.w_k), (v, params.w_v)))
        heads, weights = three_results(Q, K, V, mask)  # the same words as n, d_model = x.shape on a batch
        return merge(heads) @ params.w_o, weights

    message = ex.check_capstone(layer).message
    assert (
        message.startswith("case 1 of 10") and "raised ValueError: too many values to unpack (expected 2)." in message
    )
    assert "Cause" not in message

    def two_halves(x, h):
        first, second = np.split(x, 2 * h, axis=-1)  # four pieces for two names
        return np.stack([first, second])

    message = ex.check_split_merge(two_halves, merge).message
    assert "split raised ValueError: too many values to unpack (expected 2)." in message and "Cause" not in message


def test_a_transpose_written_for_a_batch_fails_on_one_sequence_with_count_from_the_end():
    """The 4-d mirror image of x.transpose(1, 0, 2): right for a batch, numpy's error on one sequence's 3-d heads."""

    def split_batch(x, h):
        return x.reshape(*x.shape[:-1], h, x.shape[-1] // h).transpose(0, 2, 1, 3)

    label, x, h = ex.SPLIT_CASES[1]
    np.testing.assert_array_equal(split_batch(x, h), split(x, h))  # right on a batch
    assert numpy_error(lambda: split_batch(ex.SPLIT_CASES[0][1], 2)) == "axes don't match array"
    for message in (
        ex.check_split_merge(split_batch, merge).message,
        ex.check_capstone(layer_from(split_batch)).message,
    ):
        assert (
            message.startswith("case 1 of")
            and "raised ValueError: axes don't match array. Cause: a transpose" in message
        )
        assert "the leading ... may be any number of axes. Fix: count from the end" in message
        assert ".swapaxes(-3, -2) for the heads" in message


def test_keys_swapped_on_axes_counted_from_the_front_are_named_with_the_axes_they_swap():
    one, stack = ex.HEAD_CASES[0], ex.HEAD_CASES[2]
    np.testing.assert_allclose(
        attention(transpose="swap01")(one.q, one.k, one.v)[1], attend_by_hand(one.q, one.k, one.v)[1]
    )
    error = numpy_error(lambda: stack.q @ stack.k.swapaxes(0, 1))  # (2, 5, 4) @ (5, 2, 4)
    assert error != numpy_error(lambda: stack.q @ stack.k.T)  # not K.T's error: its own cause
    fix = "and the product fails. Fix: count from the end: K.swapaxes(-1, -2)."
    assert ex.check_attention(attention(transpose="swap01")).message == (
        f"case 3 of 4, {stack.name}: it raised ValueError: {error}. Cause: the keys are transposed with axes counted "
        "from the front, K.swapaxes(0, 1): on these keys, shape (2, 5, 4) = (..., h, n, d_k), axes 0 and 1 are the "
        f"heads and the tokens, not the tokens and d_k, {fix}"
    )
    message = ex.check_capstone(solution(transpose="swap01")).message
    assert message.startswith(f"case 1 of 10, {ex.CASES[0].name}: it raised ValueError"), message
    assert "K.swapaxes(0, 1): on these keys, shape (2, 5, 4)" in message and message.endswith(fix)
    # K.swapaxes(1, 2) is right on one sequence's heads (h, n, d_k); on a batch numpy's error is K.T's own
    batch = ex.CASES[4]
    p = batch.params
    Q, K = mha.split_heads(batch.q @ p.w_q, p.h), mha.split_heads(batch.k @ p.w_k, p.h)  # (3, 2, 5, 4)
    assert numpy_error(lambda: Q @ K.swapaxes(1, 2)) == numpy_error(lambda: Q @ K.T)
    message = ex.check_capstone(solution(transpose="swap12")).message
    assert message.startswith(f"case 5 of 10, {batch.name}: it raised ValueError"), message
    assert message.endswith(
        "Cause: the keys are not transposed right: on these keys, shape (3, 2, 5, 4), K.T (it reverses every axis) and "
        "K.swapaxes(1, 2) (it swaps the heads and the tokens) give this same error. Fix: count from the end: "
        "K.swapaxes(-1, -2)."
    )
    # the other transposes keep their own causes
    assert "counted from the front" not in ex.check_capstone(solution(transpose_with_T=True)).message
    assert "counted from the front" not in ex.check_attention(attention(transpose="none")).message
    assert ex.transpose_hint(Q, K, "some other error") is None


def test_scores_divided_by_the_square_root_of_another_axis_are_named_in_both_stages():
    stack = ex.HEAD_CASES[2]
    assert stack.q.shape == (2, 5, 4)  # Q.shape[1] is n = 5 here, d_k = 4 only on one head (n, d_k)
    got = attend_by_hand(stack.q, stack.k, stack.v, stack.mask, divisor=np.sqrt(5))[1]
    want = attend_by_hand(stack.q, stack.k, stack.v, stack.mask)[1]
    np.testing.assert_allclose(want, mha.scaled_dot_product_attention(stack.q, stack.k, stack.v, stack.mask)[1])
    index, g, w = worst(got, want)
    fix = "Fix: d_k = Q.shape[-1], counted from the end: divide by np.sqrt(Q.shape[-1])."
    assert ex.check_attention(attention(d_k_axis=1)).message == (
        f"case 3 of 4, {stack.name}: weights[{index}] is {g:.3g}, expected {w:.3g}. Cause: the scores are divided by "
        "√5, the number of tokens (n_q = n_kv = 5), not by √d_k = √4: each score is a dot product of d_k = 4 terms. "
        "On these heads, Q of shape (2, 5, 4), 5 is also Q.shape[1], and Q.shape[1] is d_k only on arrays of 2 "
        f"axes. {fix}"
    )
    # √n_kv for √d_k: wrong from case 1, whose 5 tokens are 5 keys
    message = ex.check_attention(attention(d_k_axis="n_kv")).message
    assert message.startswith("case 1 of 4") and "divided by √5, the number of tokens (n_q = n_kv = 5)" in message
    assert message.endswith(fix)
    # the layer: on case 1's heads (2, 5, 4), Q.shape[1] is n and Q.shape[0] is h
    layer_case = ex.CASES[0]
    index, g, w = worst(layer_by_hand_divided(layer_case, np.sqrt(5)), layer_by_hand(layer_case)[1])
    message = ex.check_capstone(solution(scale="Q.shape[1]")).message
    assert message.startswith(f"case 1 of 10, {layer_case.name}: weights[{index}] is {g:.3g}, expected {w:.3g}.")
    assert "Cause: the scores are divided by √5, the number of tokens" in message and "also Q.shape[1]" in message
    message = ex.check_capstone(solution(scale="Q.shape[0]")).message
    assert "Cause: the scores are divided by √2, the number of heads h, not by √d_k = √4" in message
    assert "2 is also Q.shape[0]." in message and message.endswith(fix)
    # cross-attention tells the keys from the queries: 7 keys, 6 queries, d_k = 2
    cross = ex.CASES[7]
    assert (cross.q.shape[-2], cross.k.shape[-2], cross.params.d_k) == (6, 7, 2)
    problem = ex.check_case(solution(scale="n_kv"), cross)
    assert "Cause: the scores are divided by √7, the number of keys n_kv, not by √d_k = √2" in problem, problem
    # the other scale mistakes keep their own causes
    assert "use √d_k" in ex.check_capstone(solution(scale="d_model")).message
    assert "not divided by √d_k" in ex.check_capstone(solution(scale="none")).message
    for fn in (solution(scale="d_model"), solution(scale="none"), solution(scale="d_k itself")):
        assert "counted from the end: divide by" not in ex.check_capstone(fn).message


def layer_by_hand_divided(case, divisor):
    """Case 1's weights (no mask) with the scores divided by divisor, written out with this file's split."""
    p = case.params
    Q, K = split(case.q @ p.w_q, p.h), split(case.k @ p.w_k, p.h)
    return rows_softmax(Q @ K.swapaxes(-1, -2) / divisor)


def test_the_output_from_the_transposed_weights_is_named_in_both_stages():
    one = ex.HEAD_CASES[0]
    out, weights = attend_by_hand(one.q, one.k, one.v)
    index, g, w = worst(weights.T @ one.v, out)
    cause = (
        "Cause: the output is computed with the weights transposed, weights.swapaxes(-1, -2) @ V (weights.T @ V on "
        "one head), so output row i mixes the values with column i of the weights, not with query i's row. Fix: "
        "output = weights @ V, the weights as they are: row i holds query i's weights over the keys."
    )
    for weights_t in ("swapaxes", "T"):  # the same on one head (n_q, n_kv)
        assert ex.check_attention(attention(weights_t=weights_t)).message == (
            f"case 1 of 4, {one.name}: output[{index}] is {g:.3g}, expected {w:.3g}. {cause}"
        )
    message = ex.check_capstone(solution(weights_t="swapaxes")).message
    assert message.startswith(f"case 1 of 10, {ex.CASES[0].name}: output[") and message.endswith(cause)
    # .T on all heads' weights (2, 5, 5) reverses every axis: numpy's error, named
    case = ex.CASES[0]
    _, weights = mha.multi_head_attention(*vars_of(case))
    V = split(case.v @ case.params.w_v, case.params.h)
    error = numpy_error(lambda: weights.T @ V)
    assert ex.check_capstone(solution(weights_t="T")).message == (
        f"case 1 of 10, {case.name}: it raised ValueError: {error}. Cause: the output is computed from the weights "
        "transposed with .T, which reverses every axis: the weights (2, 5, 5) = (..., h, n_q, n_kv) become (5, 5, 2), "
        "and the product with V fails. Fix: output = weights @ V, the weights as they are: row i holds query i's "
        "weights over the keys."
    )
    # an output-only mistake of another kind keeps its own cause
    assert "weights transposed" not in ex.check_capstone(solution(v_from_k=True)).message
    assert "weights transposed" not in ex.check_capstone(solution(w_o_transposed=True)).message


def test_a_split_with_d_k_before_h_is_named_with_h_before_d_k_as_the_fix():
    def interleaved(x, h):  # (..., n, d_k, h), h moved before n: the right shape
        return np.moveaxis(x.reshape(*x.shape[:-1], x.shape[-1] // h, h), -1, -3)

    def interleaved_swapped(x, h):  # (..., n, d_k, h) with the n and d_k axes swapped: (..., d_k, n, h)
        return x.reshape(*x.shape[:-1], x.shape[-1] // h, h).swapaxes(-3, -2)

    def interleaved_merge(x):  # the mirror image in the merge
        return np.moveaxis(x, -3, -1).reshape(*x.shape[:-3], x.shape[-2], -1)

    label, x, h = ex.SPLIT_CASES[0]
    heads = interleaved(x, h)
    assert heads.shape == (2, 5, 4) and heads[0, 0].tolist() == x[0, [0, 2, 4, 6]].tolist()  # every h-th column
    np.testing.assert_array_equal(interleaved_merge(heads), x)  # its own merge undoes it: a round trip cannot tell
    fix = (
        "Cause: the reshape is to (..., n, d_k, h), d_k before h, so head i gets every h-th column, i, i + h, i + 2h, "
        "..., rather than its own d_k columns side by side. Fix: reshape to (..., n, h, d_k), h before d_k, so that "
        "each head's d_k columns stay together (columns i·d_k to (i+1)·d_k go to head i), then swap the n and h axes: "
        ".swapaxes(-3, -2)."
    )
    assert ex.check_split_merge(interleaved, interleaved_merge).message == (
        f"case 1 of 3, {label}: split has the right shape, but head i must hold columns i·d_k to (i+1)·d_k. {fix}"
    )
    assert ex.check_split_merge(interleaved_swapped, merge).message == (
        f"case 1 of 3, {label}: split gave shape (4, 5, 2), expected (..., h, n, d_k) = (2, 5, 4). {fix}"
    )
    message = ex.check_split_merge(split, interleaved_merge).message
    assert message.startswith(f"case 1 of 3, {label}: merge gave x's shape (5, 8) but not its values")
    assert "Cause: the merge lays the heads out as (..., n, d_k, h), d_k before h" in message
    assert message.endswith("then reshape: x.swapaxes(-3, -2).reshape(*x.shape[:-3], x.shape[-2], -1).")
    # the layer: the same split, with the right merge or its mirror image
    layer_fix = "Fix: in my_split reshape to (..., n, h, d_k), h before d_k, so that each head's d_k columns stay"
    for merge_by, extra in (("reshape", False), ("d_k, h", True)):
        message = ex.check_capstone(solution(split_by="d_k, h", merge_by=merge_by)).message
        assert message.startswith(f"case 1 of 10, {ex.CASES[0].name}: weights["), message
        assert "Cause: the heads are split with d_k before h, a reshape to (..., n, d_k, h)" in message
        assert layer_fix in message and ("In my_merge the mirror image" in message) == extra
    # a reshape alone keeps its own cause
    assert "d_k before h" not in ex.check_capstone(solution(split_transpose=False)).message
    assert "d_k before h" not in ex.check_split_merge(lambda x, h: x.reshape(h, *x.shape[:-1], -1), merge).message


def test_heads_stacked_on_axis_0_are_named_on_the_first_batch():
    def stacked(x, h):
        return np.stack(np.split(x, h, axis=-1))

    (_, x1, h1), (label2, x2, h2) = ex.SPLIT_CASES[:2]
    np.testing.assert_array_equal(stacked(x1, h1), split(x1, h1))  # one sequence: right
    for _, x, h in ex.SPLIT_CASES:  # the fix the message gives works for any leading axes
        np.testing.assert_array_equal(np.stack(np.split(x, h, axis=-1), axis=-3), split(x, h))
    cause = (
        "Cause: the heads are stacked on axis 0, as np.stack(np.split(x, h, axis=-1)) does: right for one sequence "
        "(n, d_model), but on a batch the heads come before the batch, (h, batch, n, d_k). Fix: stack them at axis -3, "
        "np.stack(np.split(x, h, axis=-1), axis=-3), or reshape and swap: "
        "x.reshape(*x.shape[:-1], h, x.shape[-1] // h).swapaxes(-3, -2)."
    )
    assert ex.check_split_merge(stacked, merge).message == (
        f"case 2 of 3, {label2}: split gave shape (4, 3, 5, 3), expected (..., h, n, d_k) = (3, 4, 5, 3). {cause}"
    )
    # the layer: numpy's error names the scores (h, batch, n, n) = (2, 3, 5, 5) that meet the mask (3, 1, 1, 5)
    batch = ex.CASES[4]
    message = ex.check_capstone(solution(split_by="stack")).message
    assert message.startswith(f"case 5 of 10, {batch.name}: it raised ValueError") and "(2,3,5,5)" in message
    assert message.endswith(cause)
    # the swapaxes(0, 1) split keeps its own cause
    assert "stacked on axis 0" not in ex.check_capstone(solution(swap=(0, 1))).message
    assert (
        "stacked on axis 0"
        not in ex.check_split_merge(lambda x, h: x.reshape(*x.shape[:-1], h, -1).swapaxes(0, 1), merge).message
    )


def test_a_split_with_t_or_its_axes_in_another_order_is_named():
    def reversed_heads(x, h):  # .T on (n, h, d_k)
        return x.reshape(*x.shape[:-1], h, x.shape[-1] // h).T

    def x_t_first(x, h):  # right for one sequence: (d_model, n) cut into (h, d_k, n), then each head transposed
        return x.T.reshape(h, x.shape[-1] // h, -1).swapaxes(-1, -2)

    def no_swap(x, h):
        return x.reshape(*x.shape[:-1], h, x.shape[-1] // h)

    (label1, x1, h1), (label2, x2, h2) = ex.SPLIT_CASES[:2]
    assert reversed_heads(x1, h1).shape == (4, 2, 5)
    fix = "Fix: swap only the n and h axes, counted from the end: x.reshape(*x.shape[:-1], h, x.shape[-1] // h)"
    assert ex.check_split_merge(reversed_heads, merge).message == (
        f"case 1 of 3, {label1}: split gave shape (4, 2, 5), expected (..., h, n, d_k) = (2, 5, 4). Cause: split "
        "reverses every axis, as .T does: (..., n, h, d_k) comes out as (d_k, h, n) = (4, 2, 5). .T swaps the two axes "
        f"of a 2-d array only; on more it reverses them all. {fix}.swapaxes(-3, -2)."
    )
    np.testing.assert_array_equal(x_t_first(x1, h1), split(x1, h1))
    message = ex.check_split_merge(x_t_first, merge).message
    assert message.startswith(f"case 2 of 3, {label2}: split gave shape (4, 15, 3), expected")
    assert "Cause: split transposes x with .T before the reshape" in message
    assert "a batch (batch, n, d_model) becomes (d_model, n, batch)" in message
    assert ex.check_split_merge(no_swap, merge).message == (
        f"case 1 of 3, {label1}: split gave shape (5, 2, 4), expected (..., h, n, d_k) = (2, 5, 4). Cause: split keeps "
        "each head's own d_k columns together, but its axes come out in the order (n, h, d_k) = (5, 2, 4), not (..., "
        "h, n, d_k). Fix: reshape to (..., n, h, d_k), then swap only the n and h axes, counted from the end: "
        ".swapaxes(-3, -2)."
    )
    # values that are no arrangement of x's columns get no cause
    assert "Cause" not in ex.check_split_merge(lambda x, h: split(x, h) + 1, merge).message
    assert "Cause" not in ex.check_split_merge(lambda x, h: split(x[..., ::-1], h), merge).message


def test_weights_averaged_over_the_heads_are_named_with_every_heads_weights_as_the_fix():
    case = ex.CASES[0]
    _, weights = layer_by_hand(case)
    averaged = solution(average_weights=True)(*vars_of(case))[1]
    np.testing.assert_allclose(averaged, (weights[0] + weights[1]) / 2)  # numpy by hand: two heads
    assert ex.check_capstone(solution(average_weights=True)).message == (
        f"case 1 of 10, {case.name}: weights have shape (5, 5), expected (2, 5, 5). Cause: the weights are averaged "
        "over the heads, shape (..., n_q, n_kv), as PyTorch's nn.MultiheadAttention returns them by default "
        "(average_attn_weights=True): the layer must return every head's weights, (..., h, n_q, n_kv). Fix: return "
        "the weights as the heads' attention gives them, unaveraged."
    )

    def head_0_only(q, k, v, params, mask=None):  # another shape (..., n_q, n_kv), not an average: no cause
        out, weights = solution()(q, k, v, params, mask)
        return out, weights[..., 0, :, :]

    message = ex.check_capstone(head_0_only).message
    assert "weights have shape (5, 5), expected (2, 5, 5)." in message and "Cause" not in message


def test_one_big_head_never_split_is_named_with_my_split_as_the_fix():
    def one_big_head(divisor):
        def fn(q, k, v, params, mask=None):
            Q, K, V = q @ params.w_q, k @ params.w_k, v @ params.w_v  # (..., n, d_model): never split
            out, weights = attend_by_hand(Q, K, V, mask, divisor(params))
            return out @ params.w_o, weights

        return fn

    case = ex.CASES[0]
    cause = (
        "Cause: the heads are never split: the attention runs on the whole projections, d_model wide, as one big head, "
        "so the weights have no heads axis, (..., n_q, n_kv) for (..., h, n_q, n_kv). Fix: my_split each projection "
        "into h heads first, Q = my_split(q @ params.w_q, h) and K and V likewise, attend within each head (scaled by "
        "√d_k), then my_merge the heads before W^O."
    )
    for divisor in (lambda p: np.sqrt(p.d_model), lambda p: np.sqrt(p.d_k)):
        assert ex.check_capstone(one_big_head(divisor)).message == (
            f"case 1 of 10, {case.name}: weights have shape (5, 5), expected (2, 5, 5). {cause}"
        )
    assert "never split" not in ex.check_capstone(solution(average_weights=True)).message
    assert "averaged" not in ex.check_capstone(one_big_head(lambda p: np.sqrt(p.d_k))).message


def test_a_split_or_layer_written_for_one_leading_axis_fails_on_two_with_any_number_of_axes():
    label3, x3, h3 = ex.SPLIT_CASES[2]
    assert x3.shape == (2, 3, 5, 12) and h3 == 4 and mha.split_heads(x3, h3).shape == (2, 3, 4, 5, 3)

    def one_batch_axis(x, h):  # right for one sequence and a batch: the leading axes flattened into one
        y = x.reshape(-1, x.shape[-2], h, x.shape[-1] // h).swapaxes(1, 2)
        return y[0] if x.ndim == 2 else y

    def merge_one_batch_axis(x):
        y = x.swapaxes(-3, -2)
        return y.reshape(-1, y.shape[-3], y.shape[-2] * y.shape[-1])[0 if x.ndim == 3 else slice(None)]

    for _, x, h in ex.SPLIT_CASES[:2]:
        np.testing.assert_array_equal(one_batch_axis(x, h), split(x, h))
        np.testing.assert_array_equal(merge_one_batch_axis(split(x, h)), x)
    leading = (
        "Cause: there are two leading axes here, (2, 3), and every case with one or none passed: the leading ... of "
        "(..., n, d_model) and (..., h, n, d_k) may be any number of axes. Fix: count from the end: x.shape[-1] and "
        "x.shape[-2] for the last two axes, x.shape[:-2] for the leading ones, however many, .swapaxes(-3, -2) for "
        "the heads and K.swapaxes(-1, -2) for the keys."
    )
    assert ex.check_split_merge(one_batch_axis, merge).message == (
        f"case 3 of 3, {label3}: split gave shape (6, 4, 5, 3), expected (..., h, n, d_k) = (2, 3, 4, 5, 3). {leading}"
    )
    assert ex.check_split_merge(split, merge_one_batch_axis).message == (
        f"case 3 of 3, {label3}: merge gave shape (6, 5, 12); it must give x back, shape (2, 3, 5, 12). {leading}"
    )

    def transpose_one_batch_axis(x, h):
        y = x.reshape(*x.shape[:-1], h, x.shape[-1] // h)
        return y.transpose(1, 0, 2) if x.ndim == 2 else y.transpose(0, 2, 1, 3)

    message = ex.check_split_merge(transpose_one_batch_axis, merge).message
    assert message == f"case 3 of 3, {label3}: split raised ValueError: axes don't match array. {leading}"
    # the layer: a case with two leading axes, after every case with one or none
    nested = next(i for i, c in enumerate(ex.CASES, start=1) if c.q.ndim == 4)
    assert nested == 9 and ex.CASES[8].q.shape == (2, 3, 5, 8) and ex.CASES[8].mask.shape == (2, 3, 1, 1, 5)
    assert all(c.q.ndim < 4 for c in ex.CASES[:8])
    message = ex.check_capstone(layer_from(one_batch_axis, merge_one_batch_axis)).message
    assert message.startswith(f"case 9 of 10, {ex.CASES[8].name}:") and message.endswith(leading), message
    # the right layers pass it, and mistakes found earlier are not blamed on the leading axes
    assert ex.check_capstone(layer_from(attend=attention())).correct
    assert ex.check_capstone(mha.multi_head_attention).correct
    for fn in (solution(scale="none"), solution(split_sizes="front"), solution(merge_by="concat")):
        assert "leading axes here" not in ex.check_capstone(fn).message


def test_the_known_mistakes_of_the_first_round_get_none_of_the_new_causes():
    new_causes = (
        "unpacked from a shape",
        "counted from the front",
        "the number of tokens",
        "weights transposed",
        "d_k before h",
        "stacked on axis 0",
        "as .T does",
        "axes come out in the order",
        "averaged over the heads",
        "never split",
        "leading axes here",
    )
    mistakes = [
        {"scale": "none"},
        {"scale": "d_model"},
        {"scale": "d_k itself"},
        {"split_transpose": False},
        {"w_o": False},
        {"axis": -2},
        {"mask_mode": "flipped"},
        {"mask_mode": "zero"},
        {"mask_mode": "ignored"},
        {"mask_mode": "after"},
        {"kv_from_q": True},
        {"v_from_k": True},
        {"own_softmax": True},
        {"mask_mode": "-1e9"},
        {"use_softmax": False},
        {"kv_swapped": True},
        {"w_o_transposed": True},
        {"weights_first": True},
        {"split_sizes": "numbers"},
        {"split_sizes": "front"},
        {"merge_by": "concat"},
        {"transpose_with_T": True},
        {"transpose": "none"},
        {"transpose": "fixed"},
        {"swap": (0, 1)},
        {"mask_axis": 1},
    ]
    for mistake in mistakes:
        message = ex.check_capstone(solution(**mistake)).message
        assert not any(cause in message for cause in new_causes), (mistake, message)
    head_mistakes = [
        {"scale": False},
        {"by_d_k": True},
        {"axis": -2},
        {"mask_mode": "flipped"},
        {"mask_mode": "zero"},
        {"mask_mode": "after"},
        {"own_softmax": True},
        {"mask_mode": "-1e9", "own_softmax": True},
        {"mask_mode": "+-1e9"},
        {"use_softmax": False},
        {"weights_first": True},
        {"transpose_with_T": True},
        {"transpose": "none"},
        {"transpose": "fixed"},
    ]
    for mistake in head_mistakes:
        message = ex.check_attention(attention(**mistake)).message
        assert not any(cause in message for cause in new_causes), (mistake, message)
    assert ex.check_attention(attention()).correct and ex.check_capstone(solution()).correct
    assert ex.check_split_merge(split, merge).correct and ex.check_capstone(solution(), split, merge).correct


def test_keys_and_values_handed_to_the_attention_in_each_others_places_get_the_swapped_message():
    """Right projections, but attention(Q, V, K): on self-attention q = k = v, so it equals projecting K with w_v and
    V with w_k, and the message names both."""

    def swapped_call(q, k, v, params, mask=None):
        h = params.h
        Q, K, V = split(q @ params.w_q, h), split(k @ params.w_k, h), split(v @ params.w_v, h)
        heads, weights = mha.scaled_dot_product_attention(Q, V, K, mask)  # the mistake: V and K change places
        return merge(heads) @ params.w_o, weights

    message = ex.check_capstone(swapped_call).message
    assert (
        message.startswith("case 1 of 10")
        and "or K and V were passed to the attention in each other's places" in message
    )
    assert message.endswith("then my_attention(Q, K, V, mask).")


def test_a_float_count_outside_reshape_gets_the_true_division_cause_too():
    def zeros_split(x, h):
        np.zeros((x.shape[-2], x.shape[-1] / h))  # the learner's buffer, sized with true division
        return split(x, h)

    message = ex.check_split_merge(zeros_split, merge).message
    assert "Cause: a size or count is a float" in message and "(8 / 2 is 4.0)" in message and "// h" in message
