"""Time one training step of the Shakespeare GPT in numpy against the same model in PyTorch, side by side.

`python -m benchmarks lm [--repeats 7 --steps 10 --torch-threads 1]` builds the default model (4 layers,
4 heads, d_model 128, n_ctx 64, batch 12; issue 25) from the same weights on both sides and times forward,
backward, clipping and the AdamW update on the same batch (median of interleaved repeats). numpy runs twice, on its
BLAS's default threads and on one (on a busy machine extra BLAS threads spin and cost more than they give);
PyTorch on --torch-threads (the issue's target compares numpy on 2 cores with PyTorch on one). PyTorch is used
only when importable. Target: numpy / PyTorch <= 1.2 per step.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Callable

import numpy as np

from benchmarks._timing import interleaved_medians
from mha_lesson._blas import one_blas_thread
from mha_lesson.lm import corpus
from mha_lesson.lm.model import GPTConfig, init_params, loss_and_grads
from mha_lesson.lm.train import AdamW, TrainConfig, get_batch, lr_at

TARGET = 1.2


def torch_gpt_loss(t: dict, config: GPTConfig, tokens, targets):
    """The same GPT in PyTorch: t maps our parameter names to tensors (x @ W convention); -> mean cross-entropy."""
    import torch.nn.functional as F

    B, T = tokens.shape
    d, h = config.d_model, config.n_head
    x = t["wte"][tokens] + t["wpe"][:T]  # (B, T, d)
    for i in range(config.n_layer):
        p = f"h{i}."
        a = F.layer_norm(x, (d,), t[p + "ln1.g"], t[p + "ln1.b"], eps=1e-5)
        q, k, v = (
            (a @ t[f"{p}attn.w_{n}"] + t[f"{p}attn.b_{n}"]).view(B, T, h, d // h).transpose(1, 2) for n in "qkv"
        )  # (B, h, T, d_k)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, d)
        x = x + y @ t[p + "attn.w_o"] + t[p + "attn.b_o"]
        m = F.layer_norm(x, (d,), t[p + "ln2.g"], t[p + "ln2.b"], eps=1e-5)
        x = x + F.gelu(m @ t[p + "mlp.w1"] + t[p + "mlp.b1"], approximate="tanh") @ t[p + "mlp.w2"] + t[p + "mlp.b2"]
    logits = F.layer_norm(x, (d,), t["lnf.g"], t["lnf.b"], eps=1e-5) @ t["wte"].T  # (B, T, V): tied read-out
    return F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1))


def numpy_step(
    params: dict, config: GPTConfig, tc: TrainConfig, tokens, targets, one_thread: bool
) -> Callable[[], float]:
    """One numpy step on its own copy of params: loss_and_grads, then AdamW (with clipping) at step 0's rate."""
    adam = AdamW({n: a.copy() for n, a in params.items()}, tc)

    def step() -> float:
        with one_blas_thread() if one_thread else contextlib.nullcontext():
            loss, grads = loss_and_grads(adam.params, config, tokens, targets)
            adam.step(grads, lr_at(0, tc))
        return loss

    return step


def torch_step(params: dict, config: GPTConfig, tc: TrainConfig, tokens, targets) -> Callable[[], float] | None:
    """The same step in PyTorch (AdamW with the same decay groups, clip_grad_norm_), or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    t = {n: torch.nn.Parameter(torch.from_numpy(a.copy())) for n, a in params.items()}
    groups = [
        {"params": [p for p in t.values() if p.ndim >= 2], "weight_decay": tc.weight_decay},
        {"params": [p for p in t.values() if p.ndim < 2], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=lr_at(0, tc), betas=(tc.beta1, tc.beta2), eps=tc.eps, foreach=True)
    tok, tgt = torch.from_numpy(tokens), torch.from_numpy(targets)

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        loss = torch_gpt_loss(t, config, tok, tgt)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(t.values()), tc.clip)
        opt.step()
        return loss.item()

    return step


def main(argv: list[str]) -> None:
    """Check both sides agree on the first loss, then time them interleaved and print the ratio and the target."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks lm")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=10, help="steps per timed repeat")
    parser.add_argument("--torch-threads", type=int, default=1)
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    vocab, train_ids, _ = corpus.load()
    config = GPTConfig(len(vocab), n_layer=4, n_head=4, d_model=128, n_ctx=64)
    tc = TrainConfig()
    tokens, targets = get_batch(train_ids, tc.batch, config.n_ctx, np.random.default_rng(0))
    params = init_params(config, seed=0)
    sides = {
        "numpy, BLAS default": numpy_step(params, config, tc, tokens, targets, one_thread=False),
        "numpy, 1 thread": numpy_step(params, config, tc, tokens, targets, one_thread=True),
    }
    torch_side = torch_step(params, config, tc, tokens, targets)
    if torch_side is None:
        print("PyTorch is not importable: the comparison is skipped")
    else:
        import torch

        torch.set_num_threads(args.torch_threads)
        sides["PyTorch"] = torch_side
        first = {name: step() for name, step in sides.items()}
        print(f"same model check, first loss: {', '.join(f'{n} {v:.6f}' for n, v in first.items())}")
    print(
        f"step: batch {tc.batch}, n_ctx {config.n_ctx}, d_model {config.d_model}, {config.n_head} heads, "
        f"{config.n_layer} layers, float32; PyTorch on {args.torch_threads} thread(s)"
    )
    medians = interleaved_medians(sides, args.repeats, args.steps)
    for name, t in medians.items():
        print(f"{name:<24} {t * 1e3:7.1f} ms per step")
    if torch_side is not None:
        for name in ("numpy, BLAS default", "numpy, 1 thread"):
            print(f"ratio {name} / PyTorch: {medians[name] / medians['PyTorch']:.2f} (target <= {TARGET})")
