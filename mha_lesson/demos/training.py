"""Lesson 13: Training heads from scratch. The backward pass checked step by step, the h sweep on the two-lookup
task (run once, shipped in mha_lesson/data/training_sweep.npz), where each trained head looks, and the low-rank
bottleneck of one head's scores.

The sweep trains the default two_lookups model (mha_lesson.training) for every h in SWEEP_HS and seed in
SWEEP_SEEDS, plus a two-layer single-head model for the same seeds (the "depth instead of heads" counterpoint).
It takes minutes, too long for a lesson, so `tests/reference/make_h_sweep.py` saves it; the lesson loads the file
and re-runs one entry live, and tests/test_lesson13_training.py recomputes entries and compares bit for bit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from .. import gradients, training
from .._blas import blas_name, one_blas_thread
from .._checks import check_positive_int
from ..attention import causal_mask
from ..heads import merge_heads
from ..projections import MHAParams, init_params

# --- 0. the primer's loop ---------------------------------------------------------------------------------------

CRAWL = 0.4  # a 25-step stretch that gains less than this (nats) is on the plateau
LEARNED = 0.3  # below this loss (nats, both read-outs) the task is learned


@dataclasses.dataclass(frozen=True)
class Plateau:
    """Where a printed loss curve crawls and where it has fallen: steps read off its checkpoints."""

    start: int  # first checkpoint of the crawl
    end: int  # last checkpoint of the crawl, where the fall begins
    learned: int  # first checkpoint with a loss under LEARNED


def find_plateau(losses: dict[int, float], every: int = 25) -> Plateau:
    """The last crawl (checkpoints `every` steps apart, each gaining < CRAWL) before the loss drops under LEARNED."""
    marks = sorted(s for s in losses if s % every == 0)
    learned = next((s for s in marks if losses[s] < LEARNED), None)
    if learned is None:
        lowest = min(losses.values())
        raise ValueError(f"losses: expected a checkpoint under {LEARNED} nats, got a lowest of {lowest:.2f}")
    slow = [s for s in marks if s + every in losses and losses[s] - losses[s + every] < CRAWL]
    end = max((s + every for s in slow if s + every < learned), default=None)
    if end is None:
        raise ValueError(f"losses: expected a crawl (a gain under {CRAWL} in {every} steps) before step {learned}")
    start = end - every
    # Why walk back: the plateau is the run of slow stretches just before the fall, not every slow one.
    while start - every in slow:
        start -= every
    return Plateau(start, end, learned)


# --- 1. the backward pass, step by step -------------------------------------------------------------------------


def numeric_gradient(f: Callable[[np.ndarray], float], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences: d f / d x[i] ~ (f(x + eps e_i) - f(x - eps e_i)) / (2 eps), for every entry i of x.

    Its error is of order eps^2 (the first-order terms of the two Taylor expansions cancel) plus rounding of
    order 1e-16 / eps; in float64 with eps = 1e-6 these are near 1e-12 and 1e-10, so rounding dominates.
    """
    x = np.array(x, dtype=np.float64)  # a float64 copy: the caller's array is never moved
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        keep = x[i]
        x[i] = keep + eps
        up = f(x)
        x[i] = keep - eps
        down = f(x)
        x[i] = keep
        grad[i] = (up - down) / (2 * eps)
    return grad


def softmax_jacobian(a: np.ndarray) -> np.ndarray:
    """J = diag(a) - a a^T for one row of weights a (n,): J[j, k] = d a_j / d s_k, shape (n, n)."""
    return np.diag(a) - np.outer(a, a)


def backward_example(seed: int = 0) -> dict:
    """A small float64 self-attention layer (n 5, d_model 8, h 2, biases, causal mask), its forward cache, a random
    upstream gradient d_out (n, d_model) and the scalar the gradients belong to, loss = sum(output * d_out)."""
    rng = np.random.default_rng(seed)
    params = init_params(8, 2, bias=True, seed=seed)
    # Glorot weights and zero biases make some steps trivial; random biases exercise every term.
    params = dataclasses.replace(params, **{b: rng.normal(size=8) * 0.5 for b in ("b_q", "b_k", "b_v", "b_o")})
    x = rng.normal(size=(5, 8))
    mask = causal_mask(5)
    out, cache = gradients.forward(x, x, x, params, mask)
    return {"x": x, "params": params, "mask": mask, "out": out, "cache": cache, "d_out": rng.normal(size=out.shape)}


def step_checks(seed: int = 0) -> dict[str, float]:
    """Largest |analytic - central difference| of each backward step of mha_lesson.gradients, on random inputs.

    Each check takes the step's forward (a one-line function of its inputs), a random upstream gradient g, and the
    scalar L = sum(forward(inputs) * g); the step's backward must return dL/d(each input).
    """
    rng = np.random.default_rng(seed)
    h, n, d_k = 2, 4, 3
    d_model = h * d_k
    errors = {}

    def check(name: str, forward: Callable, inputs: Sequence[np.ndarray], analytic: Sequence[np.ndarray]) -> None:
        g = rng.normal(size=np.shape(forward(*inputs)))
        worst = 0.0
        for i, (x, d_x) in enumerate(zip(inputs, analytic, strict=True)):

            def loss(x_i: np.ndarray, i: int = i) -> float:
                return float(np.sum(forward(*inputs[:i], x_i, *inputs[i + 1 :]) * g))

            worst = max(worst, float(np.abs(numeric_gradient(loss, x) - d_x(g)).max()))
        errors[name] = worst

    x, w, b = rng.normal(size=(n, d_model)), rng.normal(size=(d_model, d_model)), rng.normal(size=d_model)
    check(
        "projection: y = x W + b",
        lambda x, w, b: x @ w + b,
        [x, w, b],
        [lambda g, i=i: gradients.projection_backward(g, x, w, True)[i] for i in range(3)],
    )
    heads = rng.normal(size=(h, n, d_k))
    check(
        "concatenation: [head_0 | head_1]",
        merge_heads,
        [heads],
        [lambda g: gradients.concat_backward(g, h)],
    )
    weights = gradients.masked_softmax(rng.normal(size=(h, n, n)), None)
    V = rng.normal(size=(h, n, d_k))
    check(
        "weighted sum: head = A V",
        lambda a, v: a @ v,
        [weights, V],
        [lambda g, i=i: gradients.weighted_sum_backward(g, weights, V)[i] for i in range(2)],
    )
    scores = rng.normal(size=(h, n, n))
    check(
        "softmax: A = softmax(S)",
        lambda s: gradients.masked_softmax(s.copy(), None),  # masked_softmax reuses its input's memory
        [scores],
        [lambda g: gradients.softmax_backward(g, gradients.masked_softmax(scores.copy(), None))],
    )
    Q, K = rng.normal(size=(h, n, d_k)), rng.normal(size=(h, n, d_k))
    check(
        "scores: S = Q K^T",
        lambda q, k: q @ k.swapaxes(-1, -2),
        [Q, K],
        [lambda g, i=i: gradients.scores_backward(g, Q, K)[i] for i in range(2)],
    )
    check(
        "scale: Q / sqrt(d_k)",
        lambda q: q * (1.0 / math.sqrt(d_k)),
        [Q],
        [lambda g: gradients.scale_backward(g, d_k)],
    )
    return errors


def layer_gradient_errors(example: dict) -> dict[str, float]:
    """Largest |multi_head_attention_grads - central difference| for each input and weight, divided by the
    largest gradient entry when that is above 1, for backward_example()'s layer (self-attention: x is q, k and v).

    (Not always relative: the key bias's gradient is exactly 0, since b_K adds q . b_K to a whole row of scores,
    which the softmax ignores; dividing by its rounding noise would mean nothing.)"""
    x, params, mask, d_out = example["x"], example["params"], example["mask"], example["d_out"]
    grads = gradients.multi_head_attention_grads(x, x, x, params, d_out, mask)
    analytic = {"x": grads["q"] + grads["k"] + grads["v"], **{k: v for k, v in grads.items() if k not in "qkv"}}

    def loss_of(name: str) -> Callable[[np.ndarray], float]:
        def loss(value: np.ndarray) -> float:
            if name == "x":
                return float(np.sum(gradients.forward(value, value, value, params, mask)[0] * d_out))
            p = dataclasses.replace(params, **{name: value})
            return float(np.sum(gradients.forward(x, x, x, p, mask)[0] * d_out))

        return loss

    errors = {}
    for name, grad in analytic.items():
        start = x if name == "x" else getattr(params, name)
        numeric = numeric_gradient(loss_of(name), start)
        errors[name] = float(np.abs(numeric - grad).max() / max(np.abs(numeric).max(), 1.0))
    return errors


# --- 2. the h sweep ----------------------------------------------------------------------------------------------

DATA = Path(__file__).resolve().parents[1] / "data"
SWEEP_PATH = DATA / "training_sweep.npz"
SWEEP_HS = (1, 2, 4, 8, 16)  # every h with d_k = 16 / h a whole number: d_k = 16, 8, 4, 2, 1
SWEEP_SEEDS = (0, 1, 2, 3, 4)
SWEEP_STEPS = 3000  # twice the task's default, to see whether narrow heads are worse or only slower
EVERY = 250  # a checkpoint every this many steps, and at step 0
WINDOW = 10  # losses are shipped as means over windows of this many steps (the plot needs no more)
HEADLINE = training.TASKS["two_lookups"]["steps"]  # 1,500: the steps of a default run, the table's column
DEEP = {"h": 1, "layers": 2}  # the counterpoint: one head per layer, two layers
OFFSETS = ("itself", "1 back", "2 back", "3+ back")  # columns of offset_masses
FIRST_QUERY = max(training.LOOKUPS)  # queries from here on have both tokens to look up
LIVE = {"h": 2, "seed": 0, "steps": 750}  # the entry the lesson trains again: its first half, by when both are right


def offset_masses(trainer: training.Trainer) -> np.ndarray:
    """(layers, h, 4): each head's mean attention weight on the key 0, 1, 2 and 3 or more positions back.

    Averaged over every held-out sequence and every query t >= FIRST_QUERY (where both lookups exist); each row
    sums to 1 because the causal mask gives no weight to later keys.
    """
    _, _, caches = training.forward(trainer.model, trainer.held_out.tokens)
    t = np.arange(FIRST_QUERY, trainer.config["n"])
    rows = []
    for cache in caches:
        w = cache.weights  # (batch, h, n, n)
        near = np.stack([w[:, :, t, t - back].mean(axis=(0, 2)) for back in range(3)], axis=-1)  # (h, 3)
        rows.append(np.concatenate([near, 1 - near.sum(axis=-1, keepdims=True)], axis=-1))  # (h, 4)
    return np.stack(rows)


def losses_digest(losses: np.ndarray) -> str:
    """SHA-256 of the float32 training losses: equal digests mean equal losses, to the last bit, at every step."""
    return hashlib.sha256(np.ascontiguousarray(losses, dtype=np.float32).tobytes()).hexdigest()


@dataclasses.dataclass(frozen=True, eq=False)
class SweepEntry:
    """One two_lookups run with checkpoints every EVERY steps (0 included)."""

    h: int
    seed: int
    layers: int
    steps: np.ndarray  # (C,) checkpoint steps
    accuracy: np.ndarray  # (C,) held out, both lookups right
    readout: np.ndarray  # (C, 2) held out, each lookup right on its own
    masses: np.ndarray  # (C, layers, h, 4) offset_masses
    loss_windows: np.ndarray  # (steps / WINDOW,) mean training loss of each WINDOW steps
    digests: np.ndarray  # (C,) str: losses_digest of the losses up to each checkpoint
    seconds: float


def sweep_entry(h: int, seed: int, *, layers: int = 1, steps: int = SWEEP_STEPS) -> SweepEntry:
    """Train two_lookups for `steps` steps (a multiple of EVERY), recording a checkpoint every EVERY steps."""
    check_positive_int("steps", steps)
    if steps % EVERY:
        raise ValueError(f"steps: expected a multiple of {EVERY} (the checkpoint spacing), got {steps}")
    start = time.perf_counter()
    trainer = training.Trainer("two_lookups", h=h, seed=seed, layers=layers, steps=steps)
    rows: dict[str, list] = {"steps": [], "accuracy": [], "readout": [], "masses": [], "digests": []}
    with one_blas_thread():  # the same thread count in every run, so evaluations repeat bit for bit too
        for step in range(0, steps + 1, EVERY):
            if step:
                trainer.run(EVERY)
            values = (
                step,
                trainer.evaluate()[1],
                trainer.readout_accuracy(),
                offset_masses(trainer),
                losses_digest(np.array(trainer.losses, dtype=np.float32)),
            )
            for name, value in zip(rows, values, strict=True):
                rows[name].append(value)
    losses = np.array(trainer.losses, dtype=np.float32)  # each loss is a float32 value: this is exact
    return SweepEntry(
        h=h,
        seed=seed,
        layers=layers,
        loss_windows=losses.astype(np.float64).reshape(-1, WINDOW).mean(axis=1),  # (steps/WINDOW, WINDOW) rows
        seconds=time.perf_counter() - start,
        **{name: np.array(values) for name, values in rows.items()},
    )


@dataclasses.dataclass(frozen=True, eq=False)
class Sweep:
    """The shipped sweep: entries[(h, seed)] for one layer, deep[seed] for DEEP, and how it was made."""

    entries: dict[tuple[int, int], SweepEntry]
    deep: dict[int, SweepEntry]
    numpy_version: str
    blas: str

    @property
    def steps(self) -> np.ndarray:
        """(C,) checkpoint steps, the same for every entry."""
        return next(iter(self.entries.values())).steps

    def at(self, step: int) -> int:
        """Index of the checkpoint at step, or ValueError."""
        where = np.flatnonzero(self.steps == step)
        if not len(where):
            raise ValueError(f"step: expected a checkpoint step (0 to {self.steps[-1]} every {EVERY}), got {step!r}")
        return int(where[0])

    def accuracy(self, step: int = HEADLINE) -> np.ndarray:
        """(len(SWEEP_HS), len(SWEEP_SEEDS)) held-out both-right accuracy at a checkpoint step."""
        i = self.at(step)
        return np.array([[self.entries[h, s].accuracy[i] for s in SWEEP_SEEDS] for h in SWEEP_HS])

    def is_reproducible_here(self) -> bool:
        """Whether this machine's numpy and BLAS are the ones the file was made with (bit-for-bit comparisons)."""
        return self.numpy_version == np.__version__ and self.blas == blas_name()


def run_sweep(
    hs: Sequence[int] = SWEEP_HS, seeds: Sequence[int] = SWEEP_SEEDS, steps: int = SWEEP_STEPS, log=print
) -> Sweep:
    """Every (h, seed) on one layer, and DEEP for every seed (minutes: run by tests/reference/make_h_sweep.py)."""
    entries, deep = {}, {}
    for h in hs:
        for seed in seeds:
            entries[h, seed] = e = sweep_entry(h, seed, steps=steps)
            log(f"h={h:>2} seed={seed}: both right {e.accuracy[-1]:.3f} after {steps} steps ({e.seconds:.0f} s)")
    for seed in seeds:
        deep[seed] = e = sweep_entry(DEEP["h"], seed, layers=DEEP["layers"], steps=steps)
        log(f"deep seed={seed}: both right {e.accuracy[-1]:.3f} ({e.seconds:.0f} s)")
    return Sweep(entries, deep, np.__version__, blas_name())


_FIELDS = ("steps", "accuracy", "readout", "masses", "loss_windows", "digests")


def save_sweep(sweep: Sweep, path: Path = SWEEP_PATH) -> None:
    """Write a sweep as one compressed .npz: arrays per entry under '<kind>/<h>/<seed>/<field>'."""
    arrays = {"numpy_version": np.array(sweep.numpy_version), "blas": np.array(sweep.blas)}
    for kind, group in (("one_layer", sweep.entries), ("deep", {(DEEP["h"], s): e for s, e in sweep.deep.items()})):
        for (h, seed), e in group.items():
            key = f"{kind}/{h}/{seed}"
            arrays |= {f"{key}/{field}": getattr(e, field) for field in _FIELDS}
            arrays[f"{key}/seconds"] = np.array(e.seconds)
    np.savez_compressed(path, **arrays)


def load_sweep(path: Path = SWEEP_PATH) -> Sweep:
    """Read the sweep save_sweep wrote."""
    entries, deep = {}, {}
    with np.load(path) as data:
        keys = {tuple(k.split("/")[:3]) for k in data.files if "/" in k}
        for kind, h, seed in sorted(keys):
            key = f"{kind}/{h}/{seed}"
            layers = DEEP["layers"] if kind == "deep" else 1
            e = SweepEntry(
                h=int(h),
                seed=int(seed),
                layers=layers,
                seconds=float(data[f"{key}/seconds"]),
                **{field: data[f"{key}/{field}"] for field in _FIELDS},
            )
            if kind == "deep":
                deep[int(seed)] = e
            else:
                entries[int(h), int(seed)] = e
        return Sweep(entries, deep, str(data["numpy_version"]), str(data["blas"]))


def same_entry(a: SweepEntry, b: SweepEntry, steps: int | None = None) -> bool:
    """Whether two entries agree to the last bit over their first `steps` steps (default: all of a's).

    Compares every checkpoint up to that step (accuracies, offset masses and the digest of every loss so far)
    and the loss windows.
    """
    steps = int(a.steps[-1]) if steps is None else steps
    c, w = steps // EVERY + 1, steps // WINDOW
    fields = ("steps", "accuracy", "readout", "masses", "digests")
    same = all(len(getattr(x, f)) >= c for x in (a, b) for f in fields)
    same = same and all(np.array_equal(getattr(a, f)[:c], getattr(b, f)[:c]) for f in fields)
    return bool(same and np.array_equal(a.loss_windows[:w], b.loss_windows[:w]))


PLATEAU = {"h": 2, "seed": 0, "steps": (0, 150, 300, 400, 450, 475, 500)}  # the frames lesson 13 shows


@dataclasses.dataclass(frozen=True, eq=False)
class Frames:
    """One run's heads at a few steps: attention on held-out sequence 0, offset masses, held-out loss."""

    steps: tuple[int, ...]
    attention: np.ndarray  # (frames, h, n, n)
    masses: np.ndarray  # (frames, h, 4) offset_masses of the one layer
    loss: np.ndarray  # (frames,) held-out loss (nats, both read-outs summed)
    losses: np.ndarray  # (last step,) training loss of every step


def plateau_frames(
    h: int = PLATEAU["h"], seed: int = PLATEAU["seed"], steps: Sequence[int] = PLATEAU["steps"]
) -> Frames:
    """Train two_lookups and keep the heads at each of `steps` (increasing, from 0): a few seconds."""
    steps = tuple(int(s) for s in steps)
    if not steps or steps[0] < 0 or bool(np.any(np.diff(steps) <= 0)):
        raise ValueError(f"steps: expected increasing step numbers from 0 up, got {steps!r}")
    trainer = training.Trainer("two_lookups", h=h, seed=seed, steps=max(steps[-1], 1))
    rows: dict[str, list] = {"attention": [], "masses": [], "loss": []}
    with one_blas_thread():
        for step in steps:
            trainer.run(step - len(trainer.losses))
            rows["attention"].append(trainer.attention()[0])
            rows["masses"].append(offset_masses(trainer)[0])
            rows["loss"].append(trainer.evaluate()[0])
    return Frames(steps, *(np.array(rows[k]) for k in ("attention", "masses", "loss")), np.array(trainer.losses))


# --- 3. specialisation -------------------------------------------------------------------------------------------

SPECIALISED = 0.5  # a head "makes" a lookup when more than half its weight goes to that offset


def lookup_heads(masses: np.ndarray, threshold: float = SPECIALISED) -> dict[int, list[int]]:
    """{1: heads with more than `threshold` of their weight 1 back, 2: the same 2 back}, from masses (h, 4)."""
    return {back: [int(i) for i in np.flatnonzero(masses[:, back] > threshold)] for back in (1, 2)}


def divides_lookups(masses: np.ndarray, threshold: float = SPECIALISED) -> bool:
    """Whether the heads divide the two lookups: one head (or more) mostly on 1 back, a different one on 2 back."""
    found = lookup_heads(masses, threshold)
    return bool(found[1] and found[2] and set(found[1]) != set(found[2]))


def division_rates(sweep: Sweep, step: int = HEADLINE) -> dict[int, float]:
    """For each h: the fraction of seeds whose trained heads divide the lookups (divides_lookups) at step."""
    i = sweep.at(step)
    divided = {h: [divides_lookups(sweep.entries[h, s].masses[i, 0]) for s in SWEEP_SEEDS] for h in SWEEP_HS}
    return {h: float(np.mean(seeds)) for h, seeds in divided.items()}


# --- 4. the low-rank bottleneck ----------------------------------------------------------------------------------

LOW_RANK_N = 16  # tokens: the two-lookup task's n, and its d_model
LOW_RANK_DKS = (1, 2, 3, 4, 6, 8, 12, 15)  # up to n - 1, which is already exact (a row shift is free)
FIT_STEPS = 400
LONG_FIT_STEPS = 2000  # the width-1 comparison: five times the budget, from either start
FIT_LR = 0.05
LOOKUP_WEIGHT = 0.8  # a target row puts this much weight on its key and spreads the rest over the others


def lookup_target(n: int = LOW_RANK_N, seed: int = 0, weight: float = LOOKUP_WEIGHT) -> np.ndarray:
    """(n, n) a content-based target: query i puts `weight` on one random key (a permutation), the rest evenly."""
    key = np.random.default_rng(seed).permutation(n)
    target = np.full((n, n), (1 - weight) / (n - 1))
    target[np.arange(n), key] = weight
    return target


def previous_target(n: int = LOW_RANK_N, weight: float = LOOKUP_WEIGHT) -> np.ndarray:
    """(n, n) a causal previous-token target: query i puts `weight` on key i - 1, the rest evenly on keys <= i;
    query 0 has only itself."""
    target = np.tril(np.ones((n, n)))
    for i in range(1, n):
        target[i, : i + 1] = (1 - weight) / i
        target[i, i - 1] = weight
    return target


@dataclasses.dataclass(frozen=True)
class LowRankFit:
    """Scores S = U V^T of rank d_k fitted to a target pattern: the weights softmax(S) and their mean KL."""

    d_k: int
    u: np.ndarray  # (n, d_k): the queries X W^Q (already divided by sqrt(d_k))
    v: np.ndarray  # (n, d_k): the keys X W^K
    weights: np.ndarray  # (n, n)
    kl: float  # mean over queries of KL(target row || fitted row), in nats


def row_kl(target: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(n,) KL(target_i || weights_i) = sum_j t_ij ln(t_ij / w_ij) per row, in nats; 0 ln 0 counts as 0."""
    safe_t = np.where(target > 0, target, 1.0)
    safe_w = np.where(target > 0, weights, 1.0)
    return np.sum(target * np.log(safe_t / safe_w), axis=-1)


def fit_low_rank(
    target: np.ndarray,
    d_k: int,
    mask: np.ndarray | None = None,
    steps: int = FIT_STEPS,
    lr: float = FIT_LR,
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> LowRankFit:
    """Fit softmax(U V^T) (masked) to a row-stochastic target with U, V of shape (n, d_k), by Adam on the mean KL.

    With d_model >= n and tokens whose vectors are linearly independent, X W^Q can be any (n, d_k) matrix, so this
    is exactly what one head of width d_k can reach. Starts from the truncated SVD of the target's centred log
    weights (the best rank-d_k scores in squared error), then descends the KL; the gradient of the mean KL with
    respect to the scores is (softmax(S) - target) / n, row by row. start: (U, V), each (n, d_k), to descend from
    instead of the SVD (say, a hand-made construction).
    """
    target = np.asarray(target, dtype=np.float64)
    n = target.shape[0]
    d_k = check_positive_int("d_k", d_k)
    if target.shape != (n, n) or not np.allclose(target.sum(axis=-1), 1):
        raise ValueError(f"target: expected an (n, n) matrix whose rows sum to 1, got shape {target.shape}")
    if d_k > n:
        raise ValueError(f"d_k: expected at most n = {n} (higher ranks add nothing), got {d_k}")
    allowed = np.ones((n, n), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    logits = np.where(allowed, np.log(np.where(target > 0, target, 1.0)), 0.0)
    logits -= logits.sum(axis=-1, keepdims=True) / allowed.sum(axis=-1, keepdims=True)  # centre each row
    if start is None:
        left, sv, right = np.linalg.svd(logits)
        start = (left[:, :d_k] * np.sqrt(sv[:d_k]), right[:d_k].T * np.sqrt(sv[:d_k]))
    elif any(np.shape(a) != (n, d_k) for a in start):
        raise ValueError(f"start: expected two ({n}, {d_k}) arrays (U, V), got shapes {[np.shape(a) for a in start]}")
    flat = np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in start])
    u, v = flat[: n * d_k].reshape(n, d_k), flat[n * d_k :].reshape(n, d_k)  # views: Adam's updates reach them
    adam = training.Adam(flat, lr)
    for t in range(steps):
        adam.lr = lr * (1 - t / steps)  # decay to 0: Adam's steps keep their size near a minimum unless lr shrinks
        weights = gradients.masked_softmax(u @ v.T, allowed)
        d_scores = (weights - target) / n  # (n, n): the mean KL's gradient; 0 where masked
        adam.step(np.concatenate([(d_scores @ v).ravel(), (d_scores.T @ u).ravel()]))
    weights = gradients.masked_softmax(u @ v.T, allowed)
    return LowRankFit(d_k, u.copy(), v.copy(), weights, float(row_kl(target, weights).mean()))


def alternating_previous_head(n: int = LOW_RANK_N, gain: float = 4.0) -> tuple[np.ndarray, np.ndarray]:
    """A width-1 causal previous-token head by construction: (U, V), each (n, 1), scores U V^T.

    Key scores v = (0, 1, -1, 2, -2, ...) alternate in sign and grow, so each new key sets a record, alternately high
    and low; query i's weight u_i = gain * sign(v_{i-1}) (u_1 = -gain) then favours key i - 1 over every other key it
    may see by at least `gain` in score. The largest score is gain * ceil((n - 1) / 2).
    """
    n = check_positive_int("n", n)
    j = np.arange(n)
    v = np.where(j % 2 == 1, (j + 1) // 2, -(j // 2)).astype(np.float64)  # 0, 1, -1, 2, -2, ...
    u = gain * np.sign(np.concatenate([[0.0], v[:-1]]))  # u_i follows the sign of the key before i
    u[: min(n, 2)] = -gain  # query 0 sees only itself; query 1 prefers v_0 = 0 over v_1 = 1 when u_1 < 0
    return u[:, None], v[:, None]


def kl_by_rank(target: np.ndarray, d_ks: Sequence[int] = LOW_RANK_DKS, mask: np.ndarray | None = None) -> np.ndarray:
    """(len(d_ks),) the mean KL of fit_low_rank at each d_k."""
    return np.array([fit_low_rank(target, d_k, mask).kl for d_k in d_ks])


def head_params_from_fit(fit: LowRankFit, x: np.ndarray) -> MHAParams:
    """A layer whose head 0 has scores fit.u @ fit.v.T on the tokens x (n, d_model >= n, independent rows).

    W^Q = pinv(x) U sqrt(width) and W^K = pinv(x) V in head 0's columns (its width is d_k when d_k divides
    d_model, else d_model with the extra columns zero), so x W^Q (x W^K)^T / sqrt(width) = U V^T; W^V = W^O = I.
    """
    n, d_model = x.shape
    if d_model < n or np.linalg.matrix_rank(x) < n:
        raise ValueError(f"x: expected {n} linearly independent token vectors (d_model >= n), got shape {x.shape}")
    h = d_model // fit.d_k if d_model % fit.d_k == 0 else 1
    width = d_model // h
    pinv = np.linalg.pinv(x)  # (d_model, n): pinv(x) @ M undoes x @ ... for independent rows
    w_q, w_k = np.zeros((d_model, d_model)), np.zeros((d_model, d_model))
    w_q[:, : fit.d_k] = pinv @ fit.u * math.sqrt(width)  # attention divides by sqrt(width) again
    w_k[:, : fit.d_k] = pinv @ fit.v
    return MHAParams(h=h, w_q=w_q, w_k=w_k, w_v=np.eye(d_model), w_o=np.eye(d_model))
