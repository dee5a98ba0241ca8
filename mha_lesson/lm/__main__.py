"""`python -m mha_lesson.lm train [options]` trains the Shakespeare GPT; `python -m mha_lesson.lm sample` samples it.

The train command prints one log line per evaluation on stdout (step, loss, validation loss, learning rate,
seconds) and a progress bar on stderr. Errors print one line on stderr and exit with status 2 (bad input) or 1
(training stopped on a NaN loss).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from .._blas import blas_name
from . import corpus
from .model import GPTConfig, generate, n_params
from .train import TrainConfig, Trainer, load_checkpoint, progress_line, save_checkpoint

DEFAULT_CHECKPOINT = "shakespeare_gpt.npz"  # where train writes, in the current folder
SHIPPED_CHECKPOINT = corpus.DATA / "shakespeare_gpt.npz"  # the trained model that ships: what sample reads by default


def parser() -> argparse.ArgumentParser:
    """The train and sample sub-commands and their options."""
    p = argparse.ArgumentParser(prog="python -m mha_lesson.lm", description=__doc__.splitlines()[0])
    # Not required=True: argparse would then report a missing command before an unknown option.
    sub = p.add_subparsers(dest="command", metavar="{train,sample}")
    t = sub.add_parser("train", help="train from scratch on the vendored Shakespeare and save a checkpoint")
    defaults = TrainConfig()
    for name in ("steps", "batch", "warmup", "seed", "eval_every", "eval_batches"):
        t.add_argument(f"--{name.replace('_', '-')}", type=int, default=getattr(defaults, name))
    for name in ("lr", "min_lr", "beta2", "weight_decay", "clip"):
        t.add_argument(f"--{name.replace('_', '-')}", type=float, default=getattr(defaults, name))
    t.add_argument("--n-layer", type=int, default=4)
    t.add_argument("--n-head", type=int, default=4)
    t.add_argument("--d-model", type=int, default=128)
    t.add_argument("--n-ctx", type=int, default=64)
    t.add_argument("--out", type=Path, default=Path(DEFAULT_CHECKPOINT), help="checkpoint to write (.npz)")
    s = sub.add_parser("sample", help="generate text from a checkpoint")
    s.add_argument("--checkpoint", type=Path, default=SHIPPED_CHECKPOINT, help="default: the shipped model")
    s.add_argument("--prompt", default="\n", help="text to continue (characters of the vocabulary)")
    s.add_argument("--n", type=int, default=500, help="characters to generate")
    s.add_argument("--temperature", type=float, default=0.8)
    s.add_argument("--top-k", type=int, default=None)
    s.add_argument("--seed", type=int, default=0)
    return p


def check_out(out: Path) -> Path:
    """out if a checkpoint can be written there, checked before training rather than after it."""
    if out.is_dir() or not out.parent.is_dir():
        raise ValueError(f"out: cannot write a checkpoint to {out} (a directory, or its folder does not exist)")
    return out


def train(args: argparse.Namespace) -> int:
    """Train with a progress bar on stderr, save the checkpoint, return the exit status."""
    out = check_out(args.out)
    fields = ("steps", "batch", "warmup", "seed", "eval_every", "eval_batches", "lr", "min_lr", "beta2")
    tc = TrainConfig(**{f: getattr(args, f) for f in fields}, weight_decay=args.weight_decay, clip=args.clip)
    vocab, train_ids, val_ids = corpus.load()
    config = GPTConfig(len(vocab), args.n_layer, args.n_head, args.d_model, args.n_ctx)
    trainer = Trainer(config, tc, train_ids, val_ids, vocab)
    print(f"{config}\n{tc}\nnumpy {np.__version__}, {blas_name()}")
    print(f"{n_params(trainer.params):,d} parameters, {len(train_ids):,d} training characters", flush=True)
    start, last_draw = time.perf_counter(), 0.0

    def draw(step: int, loss: float) -> None:
        nonlocal last_draw
        now = time.perf_counter()
        if now - last_draw > 0.1 or step == tc.steps:  # redrawing every step would cost more than it shows
            val = trainer.log["val_loss"][-1] if trainer.log["val_loss"] else None
            print("\r" + progress_line(step, tc.steps, loss, val, now - start), end="", file=sys.stderr, flush=True)
            last_draw = now
        if trainer.log["val_step"] and trainer.log["val_step"][-1] == step:  # the log: one line per evaluation
            val, lr = trainer.log["val_loss"][-1], trainer.log["lr"][-1]
            print(f"step {step:5d}  loss {loss:.4f}  val {val:.4f}  lr {lr:.2e}  {now - start:6.1f} s", flush=True)

    stopped = trainer.run(callback=draw)
    print(file=sys.stderr)
    save_checkpoint(out, trainer)
    if stopped:
        print(f"{stopped}; checkpoint of the last finite step saved to {out}", file=sys.stderr)
        return 1
    seconds = time.perf_counter() - start
    print(f"validation loss {trainer.log['val_loss'][-1]:.4f} after {seconds:.0f} s; saved {out}")
    return 0


def sample(args: argparse.Namespace) -> int:
    """Print the prompt and its continuation."""
    if not args.checkpoint.is_file():
        raise ValueError(f"checkpoint: no such file {args.checkpoint} (train one with `python -m mha_lesson.lm train`)")
    params, config, vocab, _ = load_checkpoint(args.checkpoint)
    prompt = vocab.encode(args.prompt, "prompt")
    ids = generate(params, config, prompt, args.n, temperature=args.temperature, top_k=args.top_k, seed=args.seed)
    print(vocab.decode(ids))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run a sub-command; a ValueError becomes one line on stderr and exit status 2."""
    p = parser()
    args = p.parse_args(argv)
    if args.command is None:
        p.error("expected a command: train or sample")
    try:
        return train(args) if args.command == "train" else sample(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
