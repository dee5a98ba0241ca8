"""Exercise checks for lesson 13 (a trained model's heads)."""

from __future__ import annotations

import math

from ..cost import param_count
from ._base import Feedback, as_number, as_pair, right, wrong

# all-MiniLM-L6-v2's sizes.
D_MODEL, H, N_LAYERS = 384, 12, 6
# Exercise 2: a head that spreads every row evenly over this many keys.
N_KEYS = 8
# Exercise 3: the head switched off.
OFF_HEAD = 5


def check_attention_parameters(answer: object) -> Feedback:
    """Exercise 1: learned numbers in all six attention layers of MiniLM (W^Q, W^K, W^V, W^O and their biases)."""
    value = as_number(answer, "the number of parameters, a whole number")
    if isinstance(value, Feedback):
        return value
    per_layer = param_count(D_MODEL, H, bias=True)
    if value == N_LAYERS * per_layer:
        return right(
            f"{N_LAYERS} x (4 x {D_MODEL}^2 + 4 x {D_MODEL}) = {N_LAYERS * per_layer:,}: the same whatever h is, "
            "as lesson 8 showed."
        )
    if value == per_layer:
        return wrong("That is one layer. How many attention layers does MiniLM have?")
    if value == N_LAYERS * 4 * D_MODEL**2:
        return wrong("Close: each of the four projections also has a bias of d_model numbers.")
    if value == N_LAYERS * H * 4 * D_MODEL**2:
        return wrong("Each head does not get full-width matrices: head i owns d_k columns of W^Q, W^K and W^V.")
    return wrong("Count one layer first: four (d_model x d_model) matrices plus four biases of length d_model.")


def check_uniform_entropy(answer: object) -> Feedback:
    """Exercise 2: entropy in nats of an attention row spreading its weight evenly over 8 keys."""
    value = as_number(answer, "the entropy in nats: use the natural logarithm")
    if isinstance(value, Feedback):
        return value
    expected = math.log(N_KEYS)
    if abs(value - expected) < 1e-3:
        return right(f"-sum 1/8 ln(1/8) = ln 8 = {expected:.3f} nats: the largest entropy a row over 8 keys can have.")
    if abs(value - math.log2(N_KEYS)) < 1e-3:
        return wrong("That is in bits (log base 2). Head scores use nats: the natural logarithm.")
    if abs(value - 1 / N_KEYS) < 1e-3:
        return wrong("That is each weight. The entropy is -sum_j w_j ln w_j over the row.")
    return wrong("Every weight is 1/8. Put that into -sum_j w_j ln w_j.")


def check_rows_switched_off(answer: object) -> Feedback:
    """Exercise 3: the rows of a layer's W^O (start, stop) that MHAParams.without_heads([5]) sets to zero."""
    rows = as_pair(answer, "a (start, stop) pair of row indices, stop excluded, as in a slice")
    if isinstance(rows, Feedback):
        return rows
    start, stop = rows
    d_k = D_MODEL // H
    if (start, stop) == (OFF_HEAD * d_k, (OFF_HEAD + 1) * d_k):
        return right(
            f"Head {OFF_HEAD} owns rows {start}:{stop} of W^O (d_k = {d_k}); zeroing them removes exactly "
            f"head_{OFF_HEAD} W^O_{OFF_HEAD} from the sum over heads."
        )
    if (start, stop) == (OFF_HEAD * d_k, (OFF_HEAD + 1) * d_k - 1):
        return wrong("Almost: stop is excluded, as in a Python slice.")
    if stop - start == d_k:
        return wrong(f"The block has the right size, d_k = {d_k} rows. Where does head {OFF_HEAD}'s block start?")
    return wrong(f"Each head owns d_k = d_model / h rows of W^O. What are d_k here, and head {OFF_HEAD}'s first row?")
