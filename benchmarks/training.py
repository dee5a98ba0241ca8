"""Time a training step of the numpy model against the same model in PyTorch, and whole training runs, in one run.

`python -m benchmarks training [--task two_lookups --h 2 --layers 1 --repeats 7 --steps 50]` prints the
time per step of each side (median of interleaved repeats, both on one thread, on the same batch from the same
starting weights) and their ratio, then the wall and CPU time of one default two_lookups run and one default
induction run. PyTorch is used only when it is importable: it is not a dependency, so run this module with a
Python that has torch and sees this checkout (for example with PYTHONPATH pointing at it).
Targets: numpy / PyTorch <= 1.5 per step; one default two_lookups run under 5 s.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np

from benchmarks._timing import interleaved_medians
from mha_lesson import training
from mha_lesson._blas import one_blas_thread


def numpy_step(trainer: training.Trainer, batch: training.Batch) -> Callable[[], float]:
    """One forward, backward and Adam update of the numpy model on batch."""

    def step() -> float:
        loss, grad = training.loss_and_grads(trainer.model, batch)
        trainer.adam.step(grad)
        return loss

    return step


def torch_step(trainer: training.Trainer, batch: training.Batch) -> tuple[Callable[[], float], np.ndarray] | None:
    """The same model in PyTorch from the same weights: (its step, its flat gradient on batch), or None."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)  # like the numpy side, which trains on one BLAS thread
    model, c = trainer.model, trainer.config
    params = {name: torch.nn.Parameter(torch.from_numpy(a.copy())) for name, a in model.arrays.items()}
    positions = params.get("positions", torch.from_numpy(model.positions))
    tokens = torch.from_numpy(batch.tokens)
    targets, weights = torch.from_numpy(batch.targets), torch.from_numpy(batch.weights)
    n, h, d = c["n"], c["h"], c["d_model"]

    def loss_fn() -> torch.Tensor:
        x = params["embed"][tokens] + positions  # (batch, n, d_model)
        for i in range(c["layers"]):
            q, k, v = (
                (x @ params[f"layer{i}.{w}"]).view(-1, n, h, d // h).transpose(1, 2) for w in ("w_q", "w_k", "w_v")
            )  # (batch, h, n, d_k)
            heads = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + heads.transpose(1, 2).reshape(-1, n, d) @ params[f"layer{i}.w_o"]
        logits = (x @ params["readout.w"] + params["readout.b"]).view(-1, n, model.readouts, c["vocab"])
        losses = torch.nn.functional.cross_entropy(logits.permute(0, 3, 1, 2), targets, reduction="none")
        return (losses * weights).sum()  # (batch, n, readouts) weighted like the numpy loss

    optimizer = torch.optim.Adam(params.values(), lr=c["lr"])
    loss_fn().backward()
    grad = np.concatenate([p.grad.numpy().ravel() for p in params.values()])

    def step() -> float:
        optimizer.zero_grad()
        loss = loss_fn()
        loss.backward()
        optimizer.step()
        return loss.item()

    return step, grad


def main(argv: list[str]) -> None:
    """Run the comparison and the timed training runs; print the table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks training")
    parser.add_argument("--task", choices=sorted(training.TASKS), default="two_lookups")
    parser.add_argument("--h", type=int, default=2)
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=50, help="steps per timed repeat")
    args = parser.parse_args(argv)
    # Other programs on the machine slow every side alike, but they inflate the run times: say how busy it is.
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    trainer = training.Trainer(args.task, h=args.h, layers=args.layers)
    c = trainer.config
    batch = training.make_batch(args.task, np.random.default_rng(0), c["batch"], c["n"], c["vocab"])
    sides = {"numpy (mha_lesson)": numpy_step(trainer, batch)}
    torch_side = torch_step(trainer, batch)
    if torch_side is None:
        print("PyTorch is not importable: the per-step comparison is skipped")
    else:
        sides["PyTorch"] = torch_side[0]
        ours = training.loss_and_grads(trainer.model, batch)[1]
        print(f"same model check, max |numpy - torch| of the first gradient: {np.abs(ours - torch_side[1]).max():.1e}")
    print(
        f"{args.task} step: batch {c['batch']}, n {c['n']}, d_model {c['d_model']}, h {args.h}, "
        f"layers {args.layers}, float32, 1 thread"
    )
    with one_blas_thread():
        medians = interleaved_medians(sides, args.repeats, args.steps)
    for name, t in medians.items():
        print(f"{name:<20} {t * 1e3:7.3f} ms per step")
    if torch_side is not None:
        print(f"ratio numpy / PyTorch: {medians['numpy (mha_lesson)'] / medians['PyTorch']:.2f} (target <= 1.5)")

    for task, h, layers in (("two_lookups", 2, 1), ("induction", 2, 2)):
        cpu = time.process_time()
        result = training.train(task, h=h, layers=layers)
        cpu = time.process_time() - cpu
        target = " (target < 5 s)" if task == "two_lookups" else ""
        print(
            f"one default {task} run (h {h}, layers {layers}, {result.config['steps']} steps): "
            f"{result.seconds:.2f} s{target}, {cpu:.2f} s of CPU; held-out accuracy {result.accuracy:.3f}"
        )
