"""Regenerate tests/reference/torch_lm.npz: PyTorch autograd's loss and gradients that mha_lesson.lm must match.

PyTorch is not a dependency of mha_lesson or of its tests; only this script (and the lm benchmark) import it.
From the repository root, with a Python that has torch, numpy and threadpoolctl (here the scratch environment):

    python3 -m venv /tmp/scratch25 && /tmp/scratch25/bin/pip install torch==2.13.0 numpy threadpoolctl
    PYTHONPATH=. /tmp/scratch25/bin/python tests/reference/make_lm_fixture.py

The model is benchmarks.lm.torch_gpt_loss (F.layer_norm, F.scaled_dot_product_attention(is_causal=True),
F.gelu(approximate="tanh"), F.cross_entropy), in float64, on a small config with every parameter random
(GPT-2's init has zero biases and unit gains, which would test nothing there). Keys:
    config        [vocab_size, n_layer, n_head, d_model, n_ctx, d_ff]
    tokens, targets (B, T) ints;  loss ();  param__<name>, grad__<name> for every parameter
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.lm import torch_gpt_loss  # noqa: E402
from mha_lesson.lm import GPTConfig, init_params, loss_and_grads  # noqa: E402

OUT = Path(__file__).with_name("torch_lm.npz")
CONFIG = GPTConfig(vocab_size=13, n_layer=2, n_head=2, d_model=8, n_ctx=7, d_ff=20)
BATCH, LENGTH = 3, 6  # LENGTH < n_ctx: wpe's last row is unused and must get a zero gradient


def main() -> None:
    """Draw parameters and a batch, run PyTorch's autograd, compare with mha_lesson.lm as a sanity print, save."""
    rng = np.random.default_rng(25)
    params = {n: rng.normal(0.0, 0.5, a.shape) for n, a in init_params(CONFIG).items()}
    tokens = rng.integers(0, CONFIG.vocab_size, (BATCH, LENGTH))
    targets = rng.integers(0, CONFIG.vocab_size, (BATCH, LENGTH))
    t = {n: torch.tensor(a, requires_grad=True) for n, a in params.items()}
    loss = torch_gpt_loss(t, CONFIG, torch.from_numpy(tokens), torch.from_numpy(targets))
    loss.backward()
    grads = {n: p.grad.numpy() for n, p in t.items()}
    ours_loss, ours = loss_and_grads(params, CONFIG, tokens, targets)
    worst = max(np.abs(ours[n] - grads[n]).max() for n in grads)
    print(f"loss torch {loss.item():.12f} ours {ours_loss:.12f}; max |ours - torch| over gradients {worst:.1e}")
    c = CONFIG
    data = {"config": np.array([c.vocab_size, c.n_layer, c.n_head, c.d_model, c.n_ctx, c.d_ff])}
    data |= {"tokens": tokens, "targets": targets, "loss": np.array(loss.item())}
    data |= {f"param__{n}": a for n, a in params.items()} | {f"grad__{n}": a for n, a in grads.items()}
    np.savez_compressed(OUT, **data)
    print(f"wrote {OUT} ({OUT.stat().st_size / 1024:.1f} KiB, torch {torch.__version__})")


if __name__ == "__main__":
    main()
