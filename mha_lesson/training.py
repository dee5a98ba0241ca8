"""A tiny attention-only model trained in pure numpy: why several heads, shown by training.

The model: token embedding + positions -> L residual multi-head attention layers -> one linear read-out per
thing to predict, trained with softmax cross-entropy and Adam. Two tasks:

- "two_lookups": random tokens; every position must output the token 1 back and the token 2 back, each
  through its own read-out (causal mask, fixed sinusoidal positions). One head can make one lookup;
  two lookups at once need two heads.
- "induction": the first k tokens (k drawn per sequence in [4, 12]) are repeated at once; predict the next
  token of the repeated copy. Needs two layers: a previous-token head, then an induction head.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import math
import time
from collections.abc import Callable, Iterable

import numpy as np

from . import gradients
from ._blas import one_blas_thread
from ._checks import (
    as_array,
    as_finite_array,
    as_float_array,
    as_int_array,
    check_finite,
    check_heads,
    check_nonnegative_int,
    check_number,
    check_positive_int,
    check_size,
)
from .attention import SAFE_EXP_ARGUMENT, causal_mask
from .positional import sinusoidal_encoding
from .projections import MHAParams

TASKS = {
    "two_lookups": {"d_model": 16, "n": 16, "vocab": 16, "steps": 1500, "lr": 1e-2, "batch": 64},
    "induction": {"d_model": 32, "n": 24, "vocab": 32, "steps": 2000, "lr": 3e-3, "batch": 32},
}
LOOKUPS = (1, 2)  # two_lookups: each position outputs the tokens this many places back
REPEAT = (4, 12)  # induction: smallest and largest repeat length k
HELD_OUT = 256  # held-out sequences for accuracy and checkpoints
ADAM = (0.9, 0.999, 1e-8)  # beta1, beta2, eps: PyTorch's defaults
DTYPE = np.float32


@functools.cache
def keep_freed_memory() -> None:
    """Ask glibc to keep freed heap memory instead of returning it to the OS at once (elsewhere: do nothing).

    A training step allocates and frees a few MB of small temporaries. By default glibc hands free memory at the
    top of its heap back to the OS once a few hundred KiB collect there, and maps larger arrays afresh each time,
    so the next step faults the same pages in again: measured here, that kernel time was a quarter of a step's
    CPU time. Runs once per process; the setting stays for the process's life.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    m_trim_threshold, m_mmap_threshold = -1, -3  # mallopt parameter numbers, from glibc's malloc.h
    libc.mallopt(m_trim_threshold, 64 * 2**20)
    libc.mallopt(m_mmap_threshold, 32 * 2**20)  # glibc's largest allowed value


@dataclasses.dataclass(frozen=True)
class Batch:
    """Sequences and what each read-out must predict at each position."""

    tokens: np.ndarray  # (batch, n) ints
    targets: np.ndarray  # (batch, n, readouts) ints: the token read-out j must output at each position
    weights: np.ndarray  # (batch, n, readouts): 1/count where read-out j is scored, else 0


def _check_task(task: object) -> str:
    """task if it is one of TASKS, else ValueError: anything else would silently run the induction task."""
    if not isinstance(task, str) or task not in TASKS:
        raise ValueError(f"task: expected one of {sorted(TASKS)}, got {task!r}")
    return task


def _check_length(task: str, n: int) -> None:
    """Raise ValueError when n positions are too few for task (two lookups back, or two copies of 4 tokens)."""
    shortest = max(LOOKUPS) + 1 if task == "two_lookups" else 2 * REPEAT[0]
    if n < shortest:
        raise ValueError(f"n: expected at least {shortest} positions for {task}, got {n}")


def _check_rng(rng: object) -> np.random.Generator:
    """rng if it is a numpy Generator, else ValueError naming it (a seed or a RandomState would draw other numbers)."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng: expected a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
    return rng


def make_batch(task: str, rng: np.random.Generator, batch: int, n: int, vocab: int) -> Batch:
    """A batch of random sequences for task, with targets and loss weights per read-out."""
    _check_task(task)
    _check_rng(rng)
    _check_length(task, check_positive_int("n", n))
    check_positive_int("batch", batch)
    if check_positive_int("vocab", vocab) < 2:
        raise ValueError(f"vocab: expected at least 2 tokens, got {vocab}")
    check_size("batch" if batch >= n else "n", "the batch's tokens and targets", (4, batch, n), np.int64)
    tokens = rng.integers(vocab, size=(batch, n))  # (batch, n)
    pos = np.arange(n)
    if task == "two_lookups":
        # Read-out j outputs the token LOOKUPS[j] back; the first positions have no such token.
        targets = np.stack([np.roll(tokens, back, axis=1) for back in LOOKUPS], axis=-1)  # (batch, n, 2)
        scored = np.broadcast_to((pos[:, None] >= np.array(LOOKUPS)), targets.shape)  # (batch, n, 2)
    else:
        k = rng.integers(REPEAT[0], min(REPEAT[1], n // 2) + 1, size=(batch, 1))  # (batch, 1) repeat lengths
        # Positions k .. 2k-1 copy positions 0 .. k-1; the rest stay random.
        tokens = np.take_along_axis(tokens, np.where((pos >= k) & (pos < 2 * k), pos - k, pos), axis=1)
        # Output the next token; only inside the copy (after its first token) can it be known.
        targets = np.roll(tokens, -1, axis=1)[..., None]  # (batch, n, 1)
        scored = ((pos >= k) & (pos <= 2 * k - 2))[..., None]  # (batch, n, 1)
    # Each read-out's loss is a mean over the positions where it is scored.
    return Batch(tokens, targets, (scored / scored.sum(axis=(0, 1))).astype(DTYPE))


@dataclasses.dataclass(eq=False)
class Model:
    """The parameters: every array is a view into one flat vector, so Adam updates them all in a few numpy calls."""

    flat: np.ndarray  # (n_params,)
    arrays: dict[str, np.ndarray]  # name -> view into flat
    layers: list[MHAParams]  # built on views: arrays["layer0.w_q"] is layers[0].w_q
    positions: np.ndarray  # (n, d_model): learned (a view into flat) or fixed sinusoidal
    mask: np.ndarray  # (n, n) causal

    @property
    def readouts(self) -> int:
        """Number of read-outs: columns j*vocab:(j+1)*vocab of readout.w and readout.b belong to read-out j."""
        return self.arrays["readout.w"].shape[1] // self.arrays["embed"].shape[0]


def init_model(task: str, h: int, layers: int, d_model: int, n: int, vocab: int, rng: np.random.Generator) -> Model:
    """N(0, 1) embeddings, Glorot attention weights, small read-outs; sizes checked (check_config) before allocating."""
    check_config(task, h, 0, layers, {"d_model": d_model, "n": n, "vocab": vocab})
    _check_rng(rng)
    glorot = math.sqrt(6.0 / (2 * d_model))
    readouts = len(LOOKUPS) if task == "two_lookups" else 1
    draws: dict[str, tuple[tuple[int, ...], Callable]] = {"embed": ((vocab, d_model), rng.standard_normal)}
    if task == "induction":  # learned positions: the previous-token head must find "one back" by position
        draws["positions"] = ((n, d_model), rng.standard_normal)
    for i in range(layers):
        for w in ("w_q", "w_k", "w_v", "w_o"):
            draws[f"layer{i}.{w}"] = ((d_model, d_model), lambda s: rng.uniform(-glorot, glorot, s))
    draws["readout.w"] = ((d_model, readouts * vocab), lambda s: rng.normal(scale=1 / math.sqrt(d_model), size=s))
    draws["readout.b"] = ((readouts * vocab,), np.zeros)
    flat = np.empty(sum(math.prod(shape) for shape, _ in draws.values()), dtype=DTYPE)
    arrays, start = {}, 0
    for name, (shape, draw) in draws.items():
        arrays[name] = flat[start : start + math.prod(shape)].reshape(shape)  # a view: Adam's updates reach it
        arrays[name][...] = draw(shape)
        start += math.prod(shape)
    mha = [
        MHAParams(h=h, **{name.split(".")[1]: a for name, a in arrays.items() if name.startswith(f"layer{i}.")})
        for i in range(layers)
    ]
    positions = arrays["positions"] if task == "induction" else sinusoidal_encoding(n, d_model, dtype=DTYPE)
    return Model(flat, arrays, mha, positions, causal_mask(n))


def _check_ids(name: str, ids: object, vocab: int) -> np.ndarray:
    """ids as an integer array of token ids in [0, vocab), or ValueError (a negative id would index from the end)."""
    ids = as_int_array(name, ids)
    if ids.size and (ids.min() < 0 or ids.max() >= vocab):
        raise ValueError(f"{name}: expected token ids in [0, {vocab}), got {ids.min()}..{ids.max()}")
    return ids


def forward(model: Model, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[gradients.Cache]]:
    """tokens (batch, n) -> (logits (batch, n, readouts, vocab), final residual (batch, n, d_model), caches)."""
    if not isinstance(model, Model):
        raise ValueError(
            f"model: expected a training.Model (from init_model, or a Trainer's .model), got {model!r:.60}"
        )
    tokens = _check_ids("tokens", tokens, len(model.arrays["embed"]))
    if np.ndim(tokens) != 2 or np.shape(tokens)[1] != len(model.positions):
        raise ValueError(f"tokens: expected shape (batch, n={len(model.positions)}), got {np.shape(tokens)}")
    x = model.arrays["embed"][tokens] + model.positions  # (batch, n, d_model)
    caches = []
    for params in model.layers:
        # Unchecked: the model's own activations; a diverged run's NaN must reach the loss, where Trainer.step
        # reports it with its step number.
        out, cache = gradients.forward(x, x, x, params, model.mask, check=False)  # (batch, n, d_model)
        x = x + out  # residual: each layer adds what its heads read to the stream
        caches.append(cache)
    logits = x @ model.arrays["readout.w"] + model.arrays["readout.b"]  # (batch, n, readouts*vocab)
    return logits.reshape(*tokens.shape, model.readouts, -1), x, caches  # (batch, n, readouts, vocab)


def cross_entropy(logits: np.ndarray, targets: np.ndarray, weights: np.ndarray) -> tuple[float, np.ndarray]:
    """Weighted softmax cross-entropy: logits (..., vocab), targets and weights (...) -> (loss, d_logits)."""
    logits = as_finite_array("logits", logits)
    if logits.shape[-1] == 0:
        raise ValueError(f"logits: expected a last (vocabulary) axis of at least one entry, got shape {logits.shape}")
    targets = _check_ids("targets", targets, logits.shape[-1])
    weights = as_finite_array("weights", weights, 0)
    for name, a in (("targets", targets), ("weights", weights)):
        if a.shape != logits.shape[:-1]:
            raise ValueError(
                f"{name}: expected shape {logits.shape[:-1]} like logits without its last axis, got {a.shape}"
            )
    if max(logits.max(), -logits.min()) > SAFE_EXP_ARGUMENT:  # shift each row only when exp() could overflow
        logits = logits - logits.max(axis=-1, keepdims=True)
    exp = np.exp(logits)
    total = gradients.row_sums(exp)  # (..., 1)
    # target: the one-hot row of the right token, scaled by how much that position counts.
    target = (targets[..., None] == np.arange(logits.shape[-1])) * weights[..., None]  # (..., vocab)
    loss = -float(np.vdot(logits - np.log(total), target))  # -sum of weight * log p(right token)
    # d loss / d logits = weight * softmax - target.
    return loss, exp * (weights[..., None] / total) - target


def loss_and_grads(model: Model, batch: Batch) -> tuple[float, np.ndarray]:
    """Unchecked step of Trainer: the read-outs' summed loss, and its gradient as a flat vector like model.flat."""
    logits, x, caches = forward(model, batch.tokens)
    if not np.isfinite(logits).all():  # diverged: no gradient to take; Trainer.step reports the step
        return math.nan, np.full_like(model.flat, np.nan)
    loss, d_logits = cross_entropy(logits, batch.targets, batch.weights)  # d_logits (batch, n, readouts, vocab)
    d_rows = d_logits.reshape(x.shape[0] * x.shape[1], -1)  # (batch*n, readouts*vocab)
    grads = {"readout.w": x.reshape(len(d_rows), -1).T @ d_rows, "readout.b": d_rows.sum(axis=0)}
    d_x = (d_rows @ model.arrays["readout.w"].T).reshape(x.shape)  # gradient on the residual stream
    for i in reversed(range(len(model.layers))):
        g = gradients.backward(caches[i], d_x, model.layers[i], check=False)
        # x feeds the layer three times (as q, k and v) and skips it once (the residual): four paths add up.
        d_x = d_x + g["q"] + g["k"] + g["v"]
        grads |= {f"layer{i}.{name}": g[name] for name in g if name not in ("q", "k", "v")}
    # Scatter-add: each row of d_x goes to its token's row, so a token seen twice gets both gradients.
    # Written as one_hot^T @ d_x (x = one_hot @ embed): the same sums as np.add.at(grad, tokens, d_x), 10x faster.
    one_hot = batch.tokens.reshape(1, -1) == np.arange(len(model.arrays["embed"]))[:, None]  # (vocab, batch*n)
    grads["embed"] = one_hot.astype(DTYPE) @ d_x.reshape(-1, d_x.shape[-1])  # (vocab, d_model)
    if "positions" in model.arrays:
        grads["positions"] = d_x.sum(axis=0)  # every sequence uses the same position vectors
    return loss, np.concatenate([grads[name].ravel() for name in model.arrays])


class Adam:
    """Adam (Kingma and Ba 2015) on one flat parameter vector, updated in place."""

    def __init__(self, params: np.ndarray, lr: float) -> None:
        ok = isinstance(params, np.ndarray) and np.issubdtype(params.dtype, np.floating) and params.flags.writeable
        if not ok:
            raise ValueError(
                f"params: expected a writeable floating-point numpy array, updated in place, got {params!r:.80}"
            )
        as_array("params", params)  # refuses a broadcast view too large to hold its moments
        check_finite("params", params)
        # A NaN, infinite or negative rate would silently wreck (or reverse) every update.
        self.params, self.lr, self.t = params, check_number("lr", lr, low=0.0), 0
        self.m = np.zeros_like(params)  # running mean of gradients
        self.v = np.zeros_like(params)  # running mean of squared gradients

    def step(self, grad: np.ndarray) -> None:
        """One update: params -= lr * m_hat / (sqrt(v_hat) + eps); grad is shaped like params and finite."""
        grad = as_float_array("grad", grad, 0)
        if grad.shape != self.params.shape:
            # A scalar or a row would broadcast and silently update every parameter by the same rule.
            raise ValueError(f"grad: expected the shape of params {self.params.shape}, got {grad.shape}")
        check_finite("grad", grad)  # one NaN would silently turn every later update into NaN
        beta1, beta2, eps = ADAM
        self.t += 1
        self.m *= beta1
        self.m += (1 - beta1) * grad
        self.v *= beta2
        self.v += (1 - beta2) * grad * grad
        # The bias corrections undo the zero start of m and v; the same formula as torch.optim.Adam.
        denom = np.sqrt(self.v) * (1 / math.sqrt(1 - beta2**self.t)) + eps
        self.params -= (self.lr / (1 - beta1**self.t)) * self.m / denom


def check_config(task: str, h: int, seed: int, layers: int, sizes: dict) -> dict:
    """The full configuration with defaults filled in, or ValueError naming the bad argument."""
    _check_task(task)
    if not isinstance(sizes, dict):
        raise ValueError(f"sizes: expected a dict of overrides (some of {sorted(TASKS[task])}), got {sizes!r:.60}")
    unknown = sorted(set(sizes) - set(TASKS[task]))
    if unknown:
        raise ValueError(f"{unknown[0]}: unknown keyword; expected some of {sorted(TASKS[task])}")
    config = {"task": task, "h": h, "seed": seed, "layers": check_positive_int("layers", layers)}
    config |= TASKS[task] | sizes
    for name in ("d_model", "n", "vocab", "steps", "batch"):
        check_positive_int(name, config[name])
    check_heads(config["d_model"], h)
    check_nonnegative_int("seed", seed)
    check_number("lr", config["lr"], low=0.0)
    _check_length(task, config["n"])
    dims = {name: config[name] for name in ("d_model", "n", "vocab", "layers", "batch")}
    # The parameters (embeddings, positions, read-outs and four matrices per layer) and one batch's attention
    # weights, at float32: refuse before init_model allocates them. Blame the largest size.
    d, n, vocab = config["d_model"], config["n"], config["vocab"]
    params = d * (3 * vocab + n + 4 * d * config["layers"])
    activations = config["batch"] * n * (n * h + 8 * d) * config["layers"]
    check_size(max(dims, key=dims.get), "the model and one batch", (params + activations,), DTYPE)
    if config["vocab"] < 2:
        raise ValueError(f"vocab: expected at least 2 tokens, got {config['vocab']}")
    return config


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """The model after `step` steps, on the held-out sequences."""

    step: int
    loss: float  # held-out loss (induction: on the repeated copy)
    accuracy: float
    attention: np.ndarray  # (layers, h, n, n) on held-out sequence 0


class Trainer:
    """Training one step at a time, so an explorer can redraw and stop between steps; train() runs one to the end."""

    def __init__(self, task: str, *, h: int, seed: int = 0, layers: int = 1, **sizes) -> None:
        self.config = c = check_config(task, h, seed, layers, sizes)
        # Separate streams for the weights, the training batches and the held-out set: changing one
        # (say, the number of steps) leaves the others as they were.
        init_rng, self._data_rng, held_rng = (np.random.default_rng([seed, i]) for i in range(3))
        self.model = init_model(task, h, c["layers"], c["d_model"], c["n"], c["vocab"], init_rng)
        self.held_out = make_batch(task, held_rng, HELD_OUT, c["n"], c["vocab"])
        self.adam = Adam(self.model.flat, float(c["lr"]))
        self.losses: list[float] = []
        keep_freed_memory()

    def step(self) -> float:
        """One Adam step on a fresh batch; returns its loss. Raises FloatingPointError if the loss is not finite."""
        c = self.config
        loss, grad = loss_and_grads(self.model, make_batch(c["task"], self._data_rng, c["batch"], c["n"], c["vocab"]))
        if not math.isfinite(loss):
            raise FloatingPointError(
                f"loss: became {loss} at step {len(self.losses) + 1}: training diverged; try an lr below {c['lr']}"
            )
        self.adam.step(grad)
        self.losses.append(loss)
        return loss

    def run(self, steps: int, callback: Callable[[int, float, Trainer], object] | None = None) -> None:
        """Take up to steps steps on one BLAS thread; stop early when callback(step, loss, trainer) returns False."""
        steps = check_nonnegative_int("steps", steps)
        if callback is not None and not callable(callback):
            raise ValueError(f"callback: expected a function (step, loss, trainer) or None, got {callback!r}")
        with one_blas_thread():  # tiny matrices: more threads only add waiting
            for _ in range(steps):
                loss = self.step()
                if callback is not None and callback(len(self.losses), loss, self) is False:
                    return

    def evaluate(self) -> tuple[float, float]:
        """(held-out loss, fraction of scored positions where every read-out is right)."""
        b = self.held_out
        logits, _, _ = forward(self.model, b.tokens)
        right = (logits.argmax(axis=-1) == b.targets).all(axis=-1)  # (batch, n)
        scored = (b.weights > 0).all(axis=-1)  # positions where every read-out is scored
        return cross_entropy(logits, b.targets, b.weights)[0], float(right[scored].mean())

    def readout_accuracy(self) -> np.ndarray:
        """(readouts,): held-out fraction right of each read-out alone, over the positions where it is scored."""
        b = self.held_out
        right = forward(self.model, b.tokens)[0].argmax(axis=-1) == b.targets  # (batch, n, readouts)
        scored = b.weights > 0
        return (right & scored).sum(axis=(0, 1)) / scored.sum(axis=(0, 1))

    def attention(self, tokens: np.ndarray | None = None) -> np.ndarray:
        """Attention weights (layers, h, n, n) on one sequence (n,) of token ids; default held-out sequence 0."""
        if tokens is None:
            tokens = self.held_out.tokens[0]
        n, vocab = self.config["n"], self.config["vocab"]
        tokens = np.asarray(tokens)
        ids = tokens.shape == (n,) and np.issubdtype(tokens.dtype, np.integer)
        if not (ids and np.all((tokens >= 0) & (tokens < vocab))):
            raise ValueError(f"tokens: expected {n} integer token ids in [0, {vocab}), got {tokens!r}")
        seq = tokens[None]  # (1, n): a batch of one
        _, _, caches = forward(self.model, seq)
        return np.stack([cache.weights[0] for cache in caches])  # (layers, h, n, n)

    def checkpoint(self) -> Checkpoint:
        """The model's held-out loss, accuracy and attention now."""
        loss, accuracy = self.evaluate()
        return Checkpoint(len(self.losses), loss, accuracy, self.attention())


@dataclasses.dataclass(frozen=True)
class TrainResult:
    """What train() returns; `trainer` gives the trained model for further probing."""

    losses: np.ndarray  # (steps,) training loss per step
    accuracy: float  # held out; two_lookups: both lookups right; induction: next token on the repeated copy
    attention: np.ndarray  # (layers, h, n, n) on held-out sequence 0
    config: dict
    seconds: float
    checkpoints: dict[int, Checkpoint]
    trainer: Trainer = dataclasses.field(repr=False)


def train(
    task: str,
    *,
    h: int,
    seed: int = 0,
    layers: int = 1,
    callback: Callable[[int, float, Trainer], object] | None = None,
    checkpoints: Iterable[int] = (),
    **sizes,
) -> TrainResult:
    """Train a fresh model on task; sizes override TASKS[task] (d_model, n, vocab, steps, lr, batch).

    callback(step, loss, trainer) runs after every step; returning False stops training early.
    checkpoints: steps (0 = before training) at which to record a Checkpoint.
    """
    if callback is not None and not callable(callback):
        raise ValueError(f"callback: expected a function (step, loss, trainer) or None, got {callback!r:.60}")
    trainer = Trainer(task, h=h, seed=seed, layers=layers, **sizes)
    steps = trainer.config["steps"]
    if isinstance(checkpoints, (str, bytes, dict)) or not isinstance(checkpoints, Iterable):
        raise ValueError(f"checkpoints: expected an iterable of step numbers, got {checkpoints!r:.60}")
    wanted = set(checkpoints)
    if not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) and 0 <= s <= steps for s in wanted):
        raise ValueError(f"checkpoints: expected step numbers in [0, steps={steps}], got {sorted(wanted, key=str)}")
    saved: dict[int, Checkpoint] = {}

    def on_step(step: int, loss: float, t: Trainer) -> object:
        if step in wanted:
            saved[step] = t.checkpoint()
        return True if callback is None else callback(step, loss, t)

    start = time.perf_counter()
    with one_blas_thread():
        if 0 in wanted:
            saved[0] = trainer.checkpoint()
        trainer.run(steps, on_step)
        seconds = time.perf_counter() - start
        _, accuracy = trainer.evaluate()
        attention = trainer.attention()
    return TrainResult(np.array(trainer.losses), accuracy, attention, trainer.config, seconds, saved, trainer)
