"""Training the GPT: AdamW, clipping by global norm, a cosine learning rate with warm-up, npz checkpoints.

Deterministic: the initial weights come from init_params(config, seed) and the batches from
np.random.default_rng(seed), so the same seed gives the same losses (on the same BLAS kernel).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .._checks import (
    as_int_array,
    check_finite,
    check_nonnegative_int,
    check_number,
    check_positive_int,
    check_size,
    type_name,
)
from .corpus import Vocab
from .model import GPTConfig, _forward, _loss_and_grads, check_params, cross_entropy, init_params, param_shapes

FORMAT = "mha_lesson.lm checkpoint 1"
BAR = 30  # characters in the progress bar


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """The optimiser and schedule; the defaults are issue 25's default run (nanoGPT's shakespeare_char on a CPU)."""

    steps: int = 3500
    batch: int = 12
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup: int = 100
    beta1: float = 0.9
    beta2: float = 0.99
    eps: float = 1e-8
    weight_decay: float = 0.1
    clip: float = 1.0
    seed: int = 0
    eval_every: int = 250
    eval_batches: int = 20

    def __post_init__(self) -> None:
        for name in ("steps", "batch", "eval_every", "eval_batches"):
            check_positive_int(name, getattr(self, name))
        for name in ("warmup", "seed"):
            check_nonnegative_int(name, getattr(self, name))
        for name in ("lr", "eps", "clip"):
            check_number(name, getattr(self, name), low=0.0)
        check_number("min_lr", self.min_lr, low=0.0, strict=False)
        check_number("weight_decay", self.weight_decay, low=0.0, strict=False)
        for name in ("beta1", "beta2"):
            if not 0 <= check_number(name, getattr(self, name), low=0.0, strict=False) < 1:
                raise ValueError(f"{name}: expected a number in [0, 1), got {getattr(self, name)!r}")


def lr_at(step: int, tc: TrainConfig) -> float:
    """The learning rate of step (0-based): linear warm-up, then cosine from lr down to min_lr at the last step."""
    step = check_nonnegative_int("step", step)
    _check_train_config(tc)
    if step < tc.warmup:
        return tc.lr * (step + 1) / (tc.warmup + 1)  # nanoGPT's warm-up: never exactly 0
    progress = min(1.0, (step - tc.warmup) / max(1, tc.steps - tc.warmup))
    return tc.min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (tc.lr - tc.min_lr)


def _check_train_config(tc: object) -> TrainConfig:
    if not isinstance(tc, TrainConfig):
        raise ValueError(f"tc: expected a TrainConfig, got {type_name(tc)}")
    return tc


def _check_arrays(name: str, arrays: object) -> dict[str, np.ndarray]:
    """arrays if it is a non-empty dict of floating-point numpy arrays, else ValueError naming it."""
    ok = isinstance(arrays, dict) and arrays
    if not ok or not all(isinstance(a, np.ndarray) and np.issubdtype(a.dtype, np.floating) for a in arrays.values()):
        raise ValueError(f"{name}: expected a non-empty dict of floating-point numpy arrays, got {type_name(arrays)}")
    return arrays


class AdamW:
    """AdamW (Loshchilov and Hutter) on a dict of arrays, updated in place through one flat vector.

    Weight decay is decoupled (params -= lr * wd * params, outside the adaptive step) and applies to matrices
    only (ndim >= 2: embeddings and weights), not to biases or LayerNorm gains, as in nanoGPT.
    """

    def __init__(self, params: dict[str, np.ndarray], tc: TrainConfig) -> None:
        _check_arrays("params", params)
        self.tc, self.t = _check_train_config(tc), 0
        self.names = list(params)
        self.flat = np.concatenate([params[n].ravel() for n in self.names])  # (n_params,)
        check_finite("params", self.flat)
        # Rebind every parameter to a view of flat, so one update of flat updates them all.
        start = 0
        for n in self.names:
            size = params[n].size
            params[n] = self.flat[start : start + size].reshape(params[n].shape)
            start += size
        self.params = params
        self.decay = np.concatenate(
            [np.full(params[n].size, float(params[n].ndim >= 2), self.flat.dtype) for n in self.names]
        )
        self.m = np.zeros_like(self.flat)  # running mean of gradients
        self.v = np.zeros_like(self.flat)  # running mean of squared gradients
        # Two scratch vectors: the update runs in place, since a temporary per line costs more than the arithmetic.
        self.g, self.tmp = np.empty_like(self.flat), np.empty_like(self.flat)

    def step(self, grads: dict[str, np.ndarray], lr: float) -> float:
        """Clip grads to global norm tc.clip, then one AdamW update at rate lr; returns the norm before clipping."""
        tc = self.tc
        _check_arrays("grads", grads)
        if set(grads) != set(self.names) or any(grads[n].shape != self.params[n].shape for n in self.names):
            raise ValueError("grads: expected one array per parameter, shaped like it")
        lr = check_number("lr", lr, low=0.0, strict=False)
        g, tmp = self.g, self.tmp
        np.concatenate([grads[n].ravel() for n in self.names], out=g, casting="same_kind")
        norm = math.sqrt(float(np.dot(g, g)))
        if not math.isfinite(norm):  # one NaN would silently turn every weight into NaN
            raise ValueError(f"grads: expected finite values, got a gradient of norm {norm}")
        if norm > tc.clip:
            g *= tc.clip / (norm + 1e-6)  # torch.nn.utils.clip_grad_norm_'s factor
        self.t += 1
        self.m *= tc.beta1
        np.multiply(g, 1 - tc.beta1, out=tmp)
        self.m += tmp
        self.v *= tc.beta2
        np.multiply(g, g, out=tmp)
        tmp *= 1 - tc.beta2
        self.v += tmp
        np.multiply(self.decay, self.flat, out=tmp)  # decoupled: lr * wd * w, not scaled by 1/sqrt(v)
        tmp *= lr * tc.weight_decay
        self.flat -= tmp
        np.sqrt(self.v, out=tmp)
        tmp *= 1 / math.sqrt(1 - tc.beta2**self.t)
        tmp += tc.eps
        np.divide(self.m, tmp, out=tmp)
        tmp *= lr / (1 - tc.beta1**self.t)
        self.flat -= tmp
        return norm


def get_batch(ids: np.ndarray, batch: int, n_ctx: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """batch random windows of ids: (tokens (batch, n_ctx), targets (batch, n_ctx)), targets one step ahead."""
    ids = as_int_array("ids", ids, 1)
    check_positive_int("batch", batch)
    if check_positive_int("n_ctx", n_ctx) >= len(ids):
        raise ValueError(f"n_ctx: expected fewer than the {len(ids)} ids, got {n_ctx}")
    check_size("batch", "the batch's windows", (batch, n_ctx + 1), np.int64)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng: expected a numpy Generator (np.random.default_rng(seed)), got {type_name(rng)}")
    starts = rng.integers(0, len(ids) - n_ctx, size=batch)  # (batch,)
    window = starts[:, None] + np.arange(n_ctx + 1)  # (batch, n_ctx + 1)
    chunk = ids[window]
    return chunk[:, :-1], chunk[:, 1:]


class Trainer:
    """Trains a GPT on train ids, evaluating on val ids; `log` holds every step's loss and every evaluation."""

    def __init__(
        self, config: GPTConfig, tc: TrainConfig, train_ids: np.ndarray, val_ids: np.ndarray, vocab: Vocab
    ) -> None:
        if not isinstance(config, GPTConfig):
            raise ValueError(f"config: expected a GPTConfig, got {type_name(config)}")
        _check_train_config(tc)
        if not isinstance(vocab, Vocab) or len(vocab) != config.vocab_size:
            raise ValueError(f"vocab: expected a Vocab of vocab_size={config.vocab_size} characters, got {vocab!r:.60}")
        for name, ids in (("train_ids", train_ids), ("val_ids", val_ids)):
            ids = as_int_array(name, ids, 1)
            if len(ids) <= config.n_ctx:
                raise ValueError(f"{name}: expected more than n_ctx={config.n_ctx} tokens, got {len(ids)}")
            if ids.min() < 0 or ids.max() >= config.vocab_size:
                raise ValueError(f"{name}: expected ids in [0, {config.vocab_size}), got {ids.min()}..{ids.max()}")
        self.config, self.tc, self.vocab = config, tc, vocab
        self.train_ids, self.val_ids = train_ids, val_ids
        self.params = init_params(config, tc.seed)
        self.adam = AdamW(self.params, tc)
        self.rng = np.random.default_rng(tc.seed)
        self.log: dict[str, list] = {"step": [], "loss": [], "lr": [], "val_step": [], "val_loss": []}

    @property
    def step_count(self) -> int:
        """Steps taken so far."""
        return len(self.log["step"])

    def make_batch(self) -> tuple[np.ndarray, np.ndarray]:
        """The next training batch: (tokens, targets), each (batch, n_ctx); a subclass may mix in other data."""
        return get_batch(self.train_ids, self.tc.batch, self.config.n_ctx, self.rng)

    def step(self) -> float:
        """One training step; returns its loss (NaN is returned, not raised: run() stops on it)."""
        s = self.step_count
        tokens, targets = self.make_batch()
        # Unchecked: a NaN in the weights must give a NaN loss, which run() reports with its step number.
        loss, grads = _loss_and_grads(self.params, self.config, tokens, targets)
        lr = lr_at(s, self.tc)
        if math.isfinite(loss):  # a NaN loss must not write NaN into every weight
            self.adam.step(grads, lr)
        self.log["step"].append(s)
        self.log["loss"].append(loss)
        self.log["lr"].append(lr)
        return loss

    def evaluate(self) -> float:
        """Mean loss over eval_batches validation batches, drawn from a fixed generator (the same every time)."""
        rng = np.random.default_rng(12345)
        losses = []
        for _ in range(self.tc.eval_batches):
            tokens, targets = get_batch(self.val_ids, self.tc.batch, self.config.n_ctx, rng)
            # The unchecked forward: no gradients needed, and the batch is ours.
            losses.append(cross_entropy(_forward(self.params, self.config, tokens)[0], targets)[0])
        val = float(np.mean(losses))
        self.log["val_step"].append(self.step_count)
        self.log["val_loss"].append(val)
        return val

    def run(self, steps: int | None = None, callback: Callable[[int, float], object] | None = None) -> str | None:
        """Train up to tc.steps (or `steps` more); None when done, else why it stopped (a NaN loss, the callback).

        callback(step, loss) runs after each step; returning False stops training. Evaluates every eval_every steps.
        """
        end = self.tc.steps if steps is None else self.step_count + check_positive_int("steps", steps)
        while self.step_count < end:
            loss = self.step()
            s = self.step_count
            if not math.isfinite(loss):
                return f"training stopped at step {s}: the loss is {loss} (try a lower lr or a smaller clip)"
            if s % self.tc.eval_every == 0 or s == self.tc.steps:
                self.evaluate()
            if callback is not None and callback(s, loss) is False:
                return f"stopped by the callback at step {s}"
        return None


def progress_line(step: int, total: int, loss: float, val: float | None, seconds: float) -> str:
    """One progress-bar line: [#####.....] step/total, the loss, the latest validation loss and the time so far."""
    done = int(BAR * step / total)
    val_text = "" if val is None else f"  val {val:.3f}"
    return f"[{'#' * done}{'.' * (BAR - done)}] {step}/{total}  loss {loss:.3f}{val_text}  {seconds:.0f} s"


def save_checkpoint(path: str | Path, trainer: Trainer) -> None:
    """Write params (float32), config, training config, vocabulary and log to one npz file."""
    if not isinstance(trainer, Trainer):
        raise ValueError(f"trainer: expected a Trainer, got {type_name(trainer)}")
    if not isinstance(path, (str, Path)) or Path(path).is_dir() or not Path(path).parent.is_dir():
        raise ValueError(f"path: cannot write a checkpoint to {path!r} (not a path, a directory, or no such folder)")
    meta = {
        "format": FORMAT,
        "config": dataclasses.asdict(trainer.config),
        "train_config": dataclasses.asdict(trainer.tc),
        "vocab": trainer.vocab.chars,
    }
    arrays = {f"param/{n}": a.astype(np.float32) for n, a in trainer.params.items()}
    arrays |= {f"log/{k}": np.asarray(v, dtype=np.float64) for k, v in trainer.log.items()}
    np.savez_compressed(path, meta=np.array(json.dumps(meta)), **arrays)


def load_checkpoint(checkpoint: str | Path) -> tuple[dict[str, np.ndarray], GPTConfig, Vocab, dict]:
    """Read a checkpoint -> (params, config, vocab, info with train_config and log); ValueError if malformed."""
    if not isinstance(checkpoint, (str, Path)):
        raise ValueError(f"checkpoint: expected a path, got {type_name(checkpoint)}")
    try:
        with np.load(checkpoint, allow_pickle=False) as f:
            data = {k: f[k] for k in f.files}
        meta = json.loads(str(data.pop("meta")))
        if meta.get("format") != FORMAT:
            raise ValueError(f"format {meta.get('format')!r}, expected {FORMAT!r}")
        config = GPTConfig(**meta["config"])
        vocab = Vocab(meta["vocab"])
        train_config = TrainConfig(**meta["train_config"])
    except (OSError, KeyError, TypeError, ValueError, json.JSONDecodeError) as exc:
        raise ValueError(f"checkpoint: {checkpoint} is not a readable mha_lesson.lm checkpoint ({exc})") from None
    if len(vocab) != config.vocab_size:
        raise ValueError(f"checkpoint: {len(vocab)} vocabulary characters but vocab_size={config.vocab_size}")
    params = {k.removeprefix("param/"): a for k, a in data.items() if k.startswith("param/")}
    try:
        check_params(params, config)
    except ValueError as exc:
        raise ValueError(f"checkpoint: {exc}") from None
    params = {n: params[n] for n in param_shapes(config)}  # the model's own order
    log = {k.removeprefix("log/"): a for k, a in data.items() if k.startswith("log/")}
    return params, config, vocab, {"train_config": train_config, "log": log}
