"""What the capstone's checks say (mha_lesson.exercises.lesson09): each known mistake's cause and fix, in words.

A message names what the learner's answer is, not what they typed, and gives one concrete change. lesson09 decides
which mistake an answer made and fills in the case's numbers ({...} fields) where a message has them.
"""

MASK_AFTER = (
    "the mask is applied after the softmax, so a row's allowed weights no longer sum to 1. Fix: set the masked "
    "scores to -inf before the softmax."
)
MINUS_INF_FIX = "Fix: np.where(mask, scores, -np.inf), then mha.softmax (it gives a row that is all -inf zero weights)."
BIG_NEGATIVE = (
    "the masked scores are -1e9, not -inf: this query sees no key, so its scores are all -1e9, equal, and the "
    "softmax spreads its weight evenly over keys it may not see. " + MINUS_INF_FIX
)
BIG_NEGATIVE_ADDED = (
    "the mask is added as a bias, scores + np.where(mask, 0, -1e9). This query sees no key, so all its scores drop "
    "alike: it keeps the softmax of its unmasked scores and attends to keys it may not see. " + MINUS_INF_FIX
)
NAN_ROW = (
    "a query whose keys are all masked gets NaN weights from a plain softmax (-inf - (-inf) once the row's maximum "
    "is subtracted, or 0 / 0). Fix: use mha.softmax, which gives a row that is all -inf zero weights."
)
TRANSPOSE = (
    "K.T reverses every axis, so heads (h, n, d_k) become (d_k, n, h) and the product fails. Fix: transpose only the "
    "last two axes, K.swapaxes(-1, -2)."
)
TRANSPOSE_OR_NONE = (
    "the keys are not transposed right: K.T reverses every axis of the heads (h, n, d_k), and no transpose at all "
    "gives the same error. Fix: K.swapaxes(-1, -2)."
)
NO_TRANSPOSE = "the keys are not transposed. Fix: scores = Q @ K.swapaxes(-1, -2), one query row against each key."
FIXED_AXES = (
    "a transpose with fixed axes, such as K.transpose(0, 2, 1) on the keys or x.transpose(1, 0, 2) in a split or "
    "a merge, "
    "fits only arrays with exactly that many axes, and the cases pass one head or sequence, stacks of heads and "
    "batches, with 2 to 5 axes: the leading ... may be any number of axes. Fix: count from the end: "
    "K.swapaxes(-1, -2) for the keys, .swapaxes(-3, -2) for the heads."
)
FIX_MASK = "np.where(mask, scores, -np.inf)."
FLOAT_SIZE = (
    "a size or count is a float, and numpy and range take only integers: true division gives a float in Python even "
    "when h divides d_model (8 / 2 is 4.0). Fix: integer division, d_k = d_model // h."
)
SPLIT_FROM_END = "x.reshape(*x.shape[:-1], h, x.shape[-1] // h).swapaxes(-3, -2)"
MERGE_FROM_END = "x.swapaxes(-3, -2).reshape(*x.shape[:-3], x.shape[-2], -1)"
SIZES = (
    "the sizes given to reshape do not fit this array: numbers written for one case, sizes read from the front of "
    "x.shape (whose axis 0 is the {axis0} of one sequence but the batch of a batch), or another array's sizes (k and "
    "v may be longer or shorter than q)."
)
FROM_END = "Fix: take the sizes from x.shape, counting from the end:"
SPLIT_SIZES = f"{SIZES.format(axis0='tokens')} {FROM_END} {SPLIT_FROM_END}."
MERGE_SIZES = f"{SIZES.format(axis0='heads')} {FROM_END} {MERGE_FROM_END}."
LAYER_SIZES = (
    f"{SIZES.format(axis0='tokens (or the heads)')} {FROM_END} {SPLIT_FROM_END} to split, {MERGE_FROM_END} to merge."
)
CONCAT = (
    "the merge lays the slices along axis 0 side by side, as np.concatenate(list(x), axis=-1) does: right for one "
    "sequence (h, n, d_k), whose axis 0 is the heads, but on a batch (batch, h, n, d_k) axis 0 is the batch. Fix: swap "
    f"the heads and the tokens first, counted from the end, then reshape: {MERGE_FROM_END}."
)
SWAP_01 = (
    "the heads are split with swapaxes(0, 1): on a batch, (batch, n, h, d_k) has the batch on axis 0 and the tokens "
    "on axis 1, so those two are swapped. Fix: swap the tokens and the heads, counted from the end, "
    ".swapaxes(-3, -2), in my_split and in my_merge."
)
SPLIT_FIX = SPLIT_FROM_END
UNPACK = (
    "the sizes are unpacked from a shape into {k} names, as in {names} = x.shape, which fits only arrays of exactly "
    "{k} axes ({this}): the cases pass one head or sequence, stacks of heads, batches and a batch of batches, with 2 "
    "to 5 axes. Fix: count from the end: x.shape[-1] for the last axis (d_model or d_k), x.shape[-2] for the tokens, "
    "x.shape[:-2] for the leading axes, however many, and .swapaxes(-3, -2) for the heads."
)
UNPACK_NAMES = {2: "n, d_model", 3: "batch, n, d_model", 4: "batch, h, n, d_k"}
KEYS_SWAP = (
    "the keys are transposed with axes counted from the front, K.swapaxes({a}, {b}): on these keys, shape {shape} = "
    "(..., h, n, d_k), axes {a} and {b} are the {first} and the {second}, not the tokens and d_k, and the product "
    "fails. Fix: count from the end: K.swapaxes(-1, -2)."
)
KEYS_AMBIGUOUS = "the keys are not transposed right: on these keys, shape {shape}, {which} give this same error. {fix}"
WEIGHTS_TRANSPOSED = (
    "the output is computed with the weights transposed, weights.swapaxes(-1, -2) @ V (weights.T @ V on one head), "
    "so output row i mixes the values with column i of the weights, not with query i's row. Fix: output = weights @ V, "
    "the weights as they are: row i holds query i's weights over the keys."
)
WEIGHTS_T = (
    "the output is computed from the weights transposed with .T, which reverses every axis: the weights {shape} = "
    "(..., h, n_q, n_kv) become {flipped}, and the product with V fails. Fix: output = weights @ V, the weights as "
    "they are: row i holds query i's weights over the keys."
)
D_K_H = (
    "the reshape is to (..., n, d_k, h), d_k before h, so head i gets every h-th column, i, i + h, i + 2h, ..., rather "
    "than its own d_k columns side by side. Fix: reshape to (..., n, h, d_k), h before d_k, so that each head's d_k "
    "columns stay together (columns i·d_k to (i+1)·d_k go to head i), then swap the n and h axes: .swapaxes(-3, -2)."
)
SPLIT_D_K_H = (
    "the heads are split with d_k before h, a reshape to (..., n, d_k, h), so head i gets every h-th column (i, i + h, "
    "...) of the projections rather than its own d_k columns side by side. Fix: in my_split reshape to (..., n, h, "
    "d_k), h before d_k, so that each head's d_k columns stay together, then swap the n and h axes."
)
MERGE_D_K_H = (
    "the merge lays the heads out as (..., n, d_k, h), d_k before h, before the reshape, so head i's columns land "
    "every h-th column rather than side by side at i·d_k to (i+1)·d_k. Fix: swap the h and n axes back to (..., n, h, "
    f"d_k), h before d_k, then reshape: {MERGE_FROM_END}."
)
STACK = (
    "the heads are stacked on axis 0, as np.stack(np.split(x, h, axis=-1)) does: right for one sequence (n, d_model), "
    "but on a batch the heads come before the batch, (h, batch, n, d_k). Fix: stack them at axis -3, "
    f"np.stack(np.split(x, h, axis=-1), axis=-3), or reshape and swap: {SPLIT_FIX}."
)
T_SPLIT = (
    "split reverses every axis, as .T does: (..., n, h, d_k) comes out as {order}. .T swaps the two axes of a 2-d "
    "array only; on more it reverses them all. Fix: swap only the n and h axes, counted from the end: "
    f"{SPLIT_FIX}."
)
X_T_SPLIT = (
    "split transposes x with .T before the reshape: .T reverses every axis, so a batch (batch, n, d_model) becomes "
    "(d_model, n, batch) and the reshape then mixes the sequences' tokens. Fix: no .T: "
    f"{SPLIT_FIX}, which cuts the last axis into heads and swaps only the n and h axes."
)
AXES_ORDER = (
    "split keeps each head's own d_k columns together, but its axes come out in the order {order}, not (..., h, n, "
    "d_k). Fix: reshape to (..., n, h, d_k), then swap only the n and h axes, counted from the end: .swapaxes(-3, -2)."
)
AVERAGED = (
    "the weights are averaged over the heads, shape (..., n_q, n_kv), as PyTorch's nn.MultiheadAttention returns them "
    "by default (average_attn_weights=True): the layer must return every head's weights, (..., h, n_q, n_kv). Fix: "
    "return the weights as the heads' attention gives them, unaveraged."
)
ONE_HEAD = (
    "the heads are never split: the attention runs on the whole projections, d_model wide, as one big head, so the "
    "weights have no heads axis, (..., n_q, n_kv) for (..., h, n_q, n_kv). Fix: my_split each projection into h "
    "heads first, Q = my_split(q @ params.w_q, h) and K and V likewise, attend within each head (scaled by √d_k), "
    "then my_merge the heads before W^O."
)
LEADING = (
    "there are {count} leading axes here, {lead}, and every case with one or none passed: the leading ... of (..., n, "
    "d_model) and (..., h, n, d_k) may be any number of axes. Fix: count from the end: x.shape[-1] and x.shape[-2] "
    "for the last two axes, x.shape[:-2] for the leading ones, however many, .swapaxes(-3, -2) for the heads and "
    "K.swapaxes(-1, -2) for the keys."
)
NO_SCALE = "the scores are not divided by √d_k. Fix: divide Q @ K.swapaxes(-1, -2) by np.sqrt(d_k)."
BY_D_K = "the scores are divided by d_k itself, not by its square root √d_k. Fix: divide them by np.sqrt(d_k)."
SOFTMAX_FIX = "Fix: weights = mha.softmax(scores, axis=-1), one row per query over the keys, then weights @ V."
NO_SOFTMAX = f"the weights are the scaled scores themselves: the softmax over the keys is missing. {SOFTMAX_FIX}"
NEGATIVE_WEIGHTS = (
    "some weights are negative, which a softmax's never are (they are ≥ 0, and each query's sum to 1 over the keys "
    "it may see, or are all 0 when it may see none): "
    f"these weights did not come out of a softmax over the keys. {SOFTMAX_FIX}"
)
ORDER = "the pair is in the wrong order, (weights, output). Fix: return output, weights, the order {reference} gives."
KV_SWAPPED = (
    "the keys and the values are swapped: K was made with params.w_v and V with params.w_k, or K and V were passed "
    "to the attention in each other's places. Fix: K = my_split(k @ params.w_k, h), V = my_split(v @ params.w_v, h), "
    "then my_attention(Q, K, V, mask)."
)
W_O_TRANSPOSED = (
    "the concatenated heads are multiplied by W^O transposed, concat @ params.w_o.T; rows i·d_k to (i+1)·d_k of "
    "params.w_o are the ones that read head i. Fix: my_merge(heads) @ params.w_o."
)
FLIPPED = "the mask is read the wrong way round (True = may attend). Fix: np.where(mask, scores, -np.inf)."
IGNORED = "the mask is never applied to the scores. " + MINUS_INF_FIX
MASK_ZERO = "masked scores became 0, and exp(0) = 1. Fix: set them to -inf instead."
SOFTMAX_AXIS = "the softmax runs over the queries. Fix: axis=-1, so each query's row (over the keys) sums to 1."
BY_D_MODEL = "each head divides by √d_model; its dot products have d_k terms. Fix: use √d_k."
RESHAPE_ONLY = (
    "the heads are split with a reshape alone, which cuts the tokens into heads. Fix: reshape to (..., n, h, d_k), "
    "then swap the n and h axes."
)
RESHAPE_ONLY_BOTH = (
    "the heads are split and merged with a reshape alone, which cuts the tokens into heads. Fix: in my_split reshape "
    "to (..., n, h, d_k), then swap the n and h axes; in my_merge swap them back, then reshape."
)
MERGE_RESHAPE_ONLY = "the heads are merged with a reshape alone. Fix: swap the h and n axes back, then reshape."
NO_W_O = "the concatenated heads are returned without the output projection W^O. Fix: my_merge(heads) @ params.w_o."
KEYS_FROM_Q = "keys and values must come from k and v, not from q. Fix: K from k @ params.w_k, V from v @ params.w_v."
VALUES_FROM_K = "values must come from v, not from k. Fix: V = my_split(v @ params.w_v, h)."
D_K_H_BOTH = (
    SPLIT_D_K_H + " In my_merge the mirror image: swap the h and n axes back to (..., n, h, d_k), then reshape."
)
