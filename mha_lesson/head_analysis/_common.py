"""What the head-analysis modules share: the shipped data files, the weights check and one traced forward pass."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import pretrained
from .._checks import as_finite_array
from ..attention import padding_mask
from ..encoder import encoder_layer

DATA = Path(__file__).resolve().parents[1] / "data"


def read_data(path: object, default: str) -> tuple[Path, str]:
    """(path, its UTF-8 text); None means the shipped data file `default`. ValueError naming path if unreadable."""
    if path is None:
        path = DATA / default
    if not isinstance(path, (str, Path)):
        raise ValueError(f"path: expected a file path (str or Path) or None, got {type(path).__name__}")
    try:
        return Path(path), Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"path: expected a readable UTF-8 text file, got {str(path)!r}: {exc}") from None


def check_model(model: object, *methods: str) -> None:
    """Raise ValueError naming model unless it has the MiniLM methods used (a stand-in with them is fine)."""
    if not all(callable(getattr(model, m, None)) for m in methods):
        raise ValueError(f"model: expected a MiniLM from load_minilm(), got {type(model).__name__}")


def check_weights(w: np.ndarray, name: str = "w") -> np.ndarray:
    """Return w as a finite float array of square (..., n, n) matrices, or raise ValueError naming the argument."""
    # Scores a learner computes on their own attention: a NaN would silently become a NaN score.
    w = as_finite_array(name, w, 2)
    if w.shape[-1] != w.shape[-2]:
        raise ValueError(f"{name}: expected self-attention weights of shape (..., n, n), got {w.shape}")
    if w.shape[-1] == 0:
        raise ValueError(f"{name}: expected at least one token (n >= 1), got shape {w.shape}")
    return w


def trace_layers(
    model: pretrained.MiniLM, ids: np.ndarray, lengths: np.ndarray
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Every layer's input (N, n, d_model) plus the last output, and every layer's weights (N, h, n, n)."""
    mask = padding_mask(lengths, ids.shape[-1])  # (N, 1, 1, n)
    inputs, weights = [model.embed(ids)], []
    for layer in model.layers:
        x, w = encoder_layer(inputs[-1], layer, mask, need_weights=True)
        inputs.append(x)
        weights.append(w)
    return inputs, weights
