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
        }["T" if transpose_with_T else transpose]()
        divisor = {"d_k": np.sqrt(d_k), "d_model": np.sqrt(params.d_model), "none": 1.0, "d_k itself": d_k}[scale]
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
        heads = weights @ V
        if merge_by == "concat":  # right for one sequence's (h, n, d_k): the list runs over axis 0
            concat = np.concatenate(list(heads), axis=-1)
        else:
            concat = heads.swapaxes(*swap)
            concat = concat.reshape(*concat.shape[:-2], h * d_k)
        out = concat @ (params.w_o.T if w_o_transposed else params.w_o) if w_o else concat
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
        ({"own_softmax": True}, 9, "NaN weights"),
        ({"mask_mode": "-1e9", "own_softmax": True}, 9, "-1e9, not -inf"),  # the textbook softmax
        ({"mask_mode": "-1e9"}, 9, "spreads its weight evenly"),  # mha.softmax cannot rescue a row of -1e9 either
        ({"mask_mode": "+-1e9"}, 9, "keeps the softmax of its unmasked scores"),  # added as a bias
        ({"mask_mode": "+-1e9", "own_softmax": True}, 9, "added as a bias"),
        ({"scale": "d_k itself"}, 1, "divided by d_k itself, not by its square root √d_k. Fix: divide them by np.sqrt"),
        ({"use_softmax": False}, 1, "scaled scores themselves: the softmax over the keys is missing. Fix: weights ="),
        ({"kv_swapped": True}, 1, "K from k @ params.w_v and V from v @ params.w_k. Fix: K = my_split(k @ params.w_k"),
        ({"w_o_transposed": True}, 1, "W^O transposed, concat @ params.w_o.T; rows i·d_k to (i+1)·d_k of params.w_o"),
        ({"weights_first": True}, 1, "Cause: the pair is in the wrong order, (weights, output). Fix: return output"),
        ({"split_sizes": "numbers"}, 2, "Cause: the sizes given to reshape fit one shape only"),
        ({"split_sizes": "front"}, 5, "Cause: the sizes given to reshape fit one shape only"),
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
):
    """A learner's scaled dot-product attention for (..., n, d_k) arrays; each keyword plants one mistake."""

    def fn(Q, K, V, mask=None):
        if transpose == "fixed":  # right for a stack of heads (h, n, d_k), wrong for one head (n, d_k)
            K_t = K.transpose(0, 2, 1)
        else:
            K_t = K.T if transpose_with_T else (K if transpose == "none" else K.swapaxes(-1, -2))
        d_k = Q.shape[-1]
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
        return (weights, weights @ V) if weights_first else (weights @ V, weights)

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
    assert first.message.startswith("my_split and my_merge first: case 1 of 2") and "reshapes alone" in first.message
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
    assert message.startswith(f"case {case} of 9, {ex.CASES[case - 1].name}: "), message
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
    assert message.startswith("case 2 of 2, a batch: (3, 5, 12) into h = 4 heads: split gave shape (5, 3, 4, 3)")
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
    assert message.startswith("case 5 of 9,") and "(5,3,2,2)" in message, message
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
    assert message.startswith("case 5 of 9,") and "weights have shape (3, 3, 2, 5, 5)" in message, message
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
    assert message.startswith("case 5 of 9,") and "axes don't match array" in message, message
    assert "x.transpose(1, 0, 2) in a split" in message and ".swapaxes(-3, -2) for the heads" in message


def test_a_float_head_width_from_true_division_is_named_with_integer_division_as_the_fix():
    """d_k = d_model / h is a float in Python, which numpy's reshape refuses with a TypeError that names no cause."""

    def float_split(x, h):
        return x.reshape(*x.shape[:-1], h, x.shape[-1] / h).swapaxes(-3, -2)

    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):  # numpy's own words, which we match
        float_split(ex.SPLIT_CASES[0][1], 2)
    message = ex.check_split_merge(float_split, merge).message
    assert message.startswith("case 1 of 2") and "split raised TypeError" in message
    assert "Cause: a size given to reshape is a float" in message and "d_k = d_model // h" in message

    def float_layer(q, k, v, params, mask=None):  # the same split inside the layer
        Q = float_split(q @ params.w_q, params.h)
        return Q, Q

    message = ex.check_capstone(float_layer).message
    assert "raised TypeError" in message and "Cause: a size given to reshape is a float" in message
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
    assert message.startswith(f"case 1 of 9, {layer_case.name}: weights[{index}] is {got:.3g}, expected {want:.3g}.")
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
    assert message.startswith(f"case 1 of 9, {ex.CASES[0].name}: weights[")
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
    assert message.startswith(f"case 1 of 9, {layer_case.name}: it returned (weights, output)"), message
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
        f"case 1 of 9, {case.name}: weights[{index}] is {got:.3g}, expected {want:.3g}. Cause: the keys and values "
        "are projected with each other's matrices, K from k @ params.w_v and V from v @ params.w_k. Fix: K = "
        "my_split(k @ params.w_k, h), V = my_split(v @ params.w_v, h)."
    )
    for other in ({"kv_from_q": True}, {"v_from_k": True}):  # their own causes, not this one
        assert "each other's matrices" not in ex.check_capstone(solution(**other)).message


def test_w_o_transposed_is_named_at_the_output_entry_it_gets_wrong():
    case = ex.CASES[0]
    assert not np.allclose(case.params.w_o, case.params.w_o.T)
    (got_out, got_w), (want_out, want_w) = layer_by_hand(case, w_o_transposed=True), layer_by_hand(case)
    np.testing.assert_allclose(got_w, want_w)  # the weights are right: the output is named
    index, got, want = worst(got_out, want_out)
    message = ex.check_capstone(solution(w_o_transposed=True)).message
    assert message == (
        f"case 1 of 9, {case.name}: output[{index}] is {got:.3g}, expected {want:.3g}. Cause: the concatenated heads "
        "are multiplied by W^O transposed, concat @ params.w_o.T; rows i·d_k to (i+1)·d_k of params.w_o are the ones "
        "that read head i. Fix: my_merge(heads) @ params.w_o."
    )
    assert "transposed" not in ex.check_capstone(solution(w_o=False)).message


def test_split_and_merge_sizes_fixed_for_one_case_are_named_with_sizes_counted_from_the_end():
    (_, x1, h1), (label2, x2, h2) = ex.SPLIT_CASES
    split_fix = (
        "Fix: take the sizes from x.shape, counting from the end: x.reshape(*x.shape[:-1], h, x.shape[-1] // h)."
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
        f"case 2 of 2, {label2}: split raised ValueError: cannot reshape array of size 180 into shape (5,2,4). Cause: "
        "the sizes given to reshape fit one shape only: numbers written for one case"
    )
    assert message.endswith(split_fix) and "axis 0 is the tokens of one sequence but the batch" in message
    message = ex.check_split_merge(lambda x, h: x.reshape(5, 4, 3), merge).message  # the sizes of another case
    assert message.startswith("case 1 of 2") and "size 40 into shape (5,4,3). Cause: the sizes" in message
    message = ex.check_split_merge(front, merge).message
    shape = (h2, x2.shape[0], x2.shape[1] * x2.shape[2] // h2)  # (4, 3, 15): the batch read as the tokens
    assert message == (
        f"case 2 of 2, {label2}: split gave shape {shape}, expected (..., h, n, d_k) = {y2.shape}. Cause: "
        + ex.SPLIT_SIZES
    )
    assert message.endswith(split_fix)

    def merge_numbers(x):  # written for case 1's (2, 5, 4)
        return x.swapaxes(0, 1).reshape(5, 8)

    np.testing.assert_array_equal(merge_numbers(split(x1, h1)), x1)
    message = ex.check_split_merge(split, merge_numbers).message
    assert message.startswith(
        f"case 2 of 2, {label2}: merge raised ValueError: cannot reshape array of size 180 into shape (5,8). Cause: "
        "the sizes given to reshape fit one shape only"
    )
    assert "axis 0 is the heads of one sequence but the batch of a batch" in message and message.endswith(merge_fix)
    # in the layer: the numbers fail on case 2, (4, 6) with one head; x.shape[0] fails on the first batch
    message = ex.check_capstone(solution(split_sizes="numbers")).message
    assert message.startswith(
        f"case 2 of 9, {ex.CASES[1].name}: it raised ValueError: cannot reshape array of size "
        f"{4 * 6} into shape (5,2,4). Cause: the sizes given to reshape fit one shape only"
    )
    assert (
        "x.reshape(*x.shape[:-1], h, x.shape[-1] // h) to split" in message and f"{merge_fix[:-1]} to merge" in message
    )
    batch = ex.CASES[4]
    flat = batch.q.reshape(3, 2, -1).swapaxes(0, 1)  # (2, 3, 20): its scores are (2, 3, 3)
    scores_shape = "(" + ",".join(map(str, (*flat.shape[:-1], flat.shape[-2]))) + ")"
    message = ex.check_capstone(solution(split_sizes="front")).message
    assert message.startswith(f"case 5 of 9, {batch.name}: it raised ValueError") and scores_shape in message
    assert message.endswith(split_fix) and "to merge" not in message
    # other errors keep their own causes, or none
    assert "sizes given to reshape" not in ex.check_capstone(solution(swap=(0, 1))).message
    assert "sizes given to reshape" not in ex.check_capstone(solution(transpose="fixed")).message
    assert "Cause" not in ex.check_split_merge(lambda x, h: np.stack(np.split(x, 3, axis=-1)), merge).message

    def wrong_width(q, k, v, params, mask=None):
        return mha.multi_head_attention(q[..., :-1], k, v, params, mask)

    assert "Cause" not in ex.check_capstone(wrong_width).message


def test_a_merge_that_concatenates_over_axis_0_is_named_on_a_batch():
    (_, x1, h1), (label2, x2, h2) = ex.SPLIT_CASES

    def concat_merge(x):
        return np.concatenate(list(x), axis=-1)

    np.testing.assert_array_equal(concat_merge(split(x1, h1)), x1)  # one sequence (h, n, d_k): right
    batch, n, d_model = x2.shape
    got_shape = (h2, n, batch * d_model // h2)  # (4, 5, 9): the batch's sequences side by side
    assert concat_merge(split(x2, h2)).shape == got_shape
    message = ex.check_split_merge(split, concat_merge).message
    assert message.startswith(
        f"case 2 of 2, {label2}: merge gave shape {got_shape}; it must give x back, shape {x2.shape}. Cause: the merge "
        "lays the slices along axis 0 side by side, as np.concatenate(list(x), axis=-1) does"
    )
    assert "on a batch (batch, h, n, d_k) axis 0 is the batch" in message
    assert message.endswith("then reshape: x.swapaxes(-3, -2).reshape(*x.shape[:-3], x.shape[-2], -1).")
    # in the layer: on the first batch, (h, n, 3 sequences · d_k = 12) meets W^O's 8 rows
    case = ex.CASES[4]
    message = ex.check_capstone(solution(merge_by="concat")).message
    width = case.q.shape[0] * case.params.d_k
    assert message.startswith(f"case 5 of 9, {case.name}: it raised ValueError"), message
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
        assert message.startswith(f"case 2 of 2, {ex.SPLIT_CASES[1][0]}: {who} raised ValueError: axes don't match")
        assert "Cause: a transpose with fixed axes" in message and ".swapaxes(-3, -2) for the heads" in message
