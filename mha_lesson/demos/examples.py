"""Forward-pass-by-hand and common-mistakes lessons: small fixed inputs, small enough to check by hand."""

from __future__ import annotations

from importlib import resources

import numpy as np

from ..projections import MHAParams

# Token labels of worked_example(), one per row of x.
TOKENS = ("the", "cat", "ate", "fish")


def worked_example() -> tuple[np.ndarray, MHAParams]:
    """Self-attention inputs x (4, 8) and params (d_model=8, h=2, d_k=4, no biases), float64."""
    # Why these numbers: every entry is 0, 1, 2 or 4, so each product is a small whole number.
    # d_k = 4 makes 1/sqrt(d_k) = 1/2, and W^Q carries a matching factor, so the scaled scores are
    # whole numbers too and only the softmax needs a calculator. The two heads read different
    # features and so attend differently: head 0 compares word features (cat and fish, both animal
    # nouns, look at each other), head 1 compares positions (each token looks at the one before it).
    # Features 0-3 describe the word: noun, verb, determiner, animal. Features 4-7 one-hot its position.
    word = np.array([[0, 0, 1, 0], [1, 0, 0, 1], [0, 1, 0, 0], [1, 0, 0, 1]], dtype=np.float64)  # (4, 4)
    x = np.hstack([word, np.eye(4)])  # (n, d_model) = (4, 8)

    eye, zero = np.eye(4), np.zeros((4, 4))
    prev = np.eye(4, k=-1)  # prev[p, p - 1] = 1: position p points at position p - 1
    # Head i owns columns 4i:4i+4 of W^Q, W^K, W^V; rows 0-3 read word features, rows 4-7 positions.
    w_q = np.block([[2 * eye, zero], [zero, 4 * prev]])  # head 0: 2*word; head 1: 4*(previous position)
    w_k = np.block([[eye, zero], [zero, eye]])  # head 0: word; head 1: own position
    w_v = np.block([[eye, eye], [zero, zero]])  # both heads pass on word features
    # W^O: output features 0-3 add the two heads' word features, features 4-7 keep head 1's alone.
    w_o = np.block([[eye, zero], [eye, eye]])
    return x, MHAParams(w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, h=2)


def torch_reference() -> dict[str, np.ndarray | str]:
    """PyTorch's nn.MultiheadAttention on worked_example(): 'output' (4, 8), 'weights' (2, 4, 4), 'torch_version'."""
    # Saved once by tests/reference/make_torch_fixture.py, so the lesson needs no PyTorch at run time.
    with resources.files("mha_lesson").joinpath("data/worked_example_torch.npz").open("rb") as f:
        data = np.load(f)
        return {"output": data["output"], "weights": data["weights"], "torch_version": str(data["torch_version"])}
