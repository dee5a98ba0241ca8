"""Lesson 20's material: the shipped Shakespeare GPT, what its heads attend to, their ablations, the h sweep and
the induction-head run.

The three runs are too long for the lesson (minutes each); tests/reference/make_lm_runs.py regenerates the files
it loads, and the tests retrain short prefixes of them to check that they come out the same.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .. import circuits
from .._blas import one_blas_thread
from .._checks import check_positive_int
from ..lm import corpus
from ..lm.model import GPTConfig, _forward, ablate_heads, attention_weights, check_params, check_tokens, generate
from ..lm.train import TrainConfig, Trainer, load_checkpoint

DATA = Path(__file__).resolve().parents[1] / "data"
CHECKPOINT = DATA / "shakespeare_gpt.npz"  # python -m mha_lesson.lm train (the defaults), ~6 minutes
TRAIN_LOG = DATA / "shakespeare_gpt.log"  # that command's printed log
SWEEP_PATH = DATA / "lm_head_sweep.npz"
INDUCTION_PATH = DATA / "lm_induction.npz"

# --- what the heads attend to --------------------------------------------------------------------------------

ROLES = (
    "previous character",
    "itself",
    "start of the word",
    "start of the line",
    "a space or line break",
    "same character earlier",
    "speaker's name",
)
# A speech's heading line in the corpus: "King." or "First Witch.", after a blank line (a verse line ending in a
# full stop matches the pattern too, but never follows a blank line); act and scene headings do not count.
SPEAKER = re.compile(r"^(?!ACT |Act |SCENE |Scene )[A-Z][A-Za-z' ]{1,30}\.$")


def role_patterns(text: str) -> dict[str, np.ndarray]:
    """For a window of text (T characters): role -> (T, T) boolean, query i -> the keys that role points at.

    Rows are left empty where a role would coincide with another: "start of the word" and "start of the line"
    only score queries at least two characters after that start (else it is the previous character or itself),
    and both need the start inside the window. "same character earlier" leaves out the previous character and
    queries that are spaces or line breaks;
    "a space or line break" is every whitespace key two or more characters back.
    """
    if not isinstance(text, str) or not text:
        raise ValueError(f"text: expected a non-empty string, got {text!r:.40}")
    T = len(text)
    tokens = np.array(list(text))
    pats = {
        "previous character": np.eye(T, k=-1, dtype=bool),
        "itself": np.eye(T, dtype=bool),
        # not for a space or line break: an earlier copy of one is the "a space or line break" role
        "same character earlier": circuits.duplicate_token_pattern(tokens)
        & ~np.eye(T, k=-1, dtype=bool)
        & ~np.char.isspace(tokens)[:, None],
        "a space or line break": np.tril(np.broadcast_to(np.char.isspace(tokens), (T, T)), k=-2),
    }
    word, line, speaker = (np.zeros((T, T), bool) for _ in range(3))
    word_start = line_start = None  # inside the window, or None when the window starts mid-word / mid-line
    name: tuple[int, int] | None = None  # the last speaker line's characters, until a blank line ends the speech
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    lines = {s: text[s : text.find("\n", s) if "\n" in text[s:] else T] for s in starts}
    for i, c in enumerate(text):
        if i in lines:  # a new line begins here
            line_start = i
            if i > 0 and lines[i] == "":
                name = None  # a blank line: the speech is over
            elif i >= 2 and text[i - 2] == "\n" and SPEAKER.match(lines[i]):  # after a blank line
                name = (i, i + len(lines[i]) - 1)  # the name, without its full stop
        if c.isspace():
            word_start = None
        elif i == 0 or text[i - 1].isspace():
            word_start = i
        if word_start is not None and word_start < i - 1:
            word[i, word_start] = True
        if line_start is not None and line_start < i - 1 and i > 0 and i not in lines:
            line[i, line_start] = True
        if name is not None and i > name[1] + 1:
            speaker[i, name[0] : name[1]] = True
    pats["start of the word"], pats["start of the line"], pats["speaker's name"] = word, line, speaker
    return {role: pats[role] for role in ROLES}


def windows(ids: np.ndarray, count: int, length: int) -> np.ndarray:
    """(count, length) windows of ids at evenly spaced starts: the same every time."""
    check_positive_int("count", count)
    starts = np.linspace(0, len(ids) - length - 1, count).astype(int)
    return ids[starts[:, None] + np.arange(length)]


def role_scores(params: dict, config: GPTConfig, vocab: corpus.Vocab, tokens: np.ndarray) -> dict[str, np.ndarray]:
    """tokens (B, T) -> role -> (n_layer, n_head) attention on that role's keys, pooled over every scored query.

    Also "uniform: <role>": what a head spreading its attention evenly over the allowed keys would score,
    the baseline a real preference must beat.
    """
    tokens = check_tokens("tokens", tokens, config)
    weights = attention_weights(params, config, tokens)  # (L, B, h, T, T)
    return pooled_role_scores(weights, [vocab.decode(row) for row in tokens])


def pooled_role_scores(weights: np.ndarray, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """weights (L, B, h, T, T) on B texts of T characters -> role -> (L, h) mean share on the role's keys.

    Pooled: the attention on the role's keys summed over every scored query of every text, divided by the number
    of those queries (each row sums to 1), so a text with more scored queries counts for more. Two baselines:
    "uniform: <role>" (a number), a head spreading its attention evenly over the allowed keys; and
    "position: <role>" (L, h), the same head's own attention averaged over the texts, which keeps where it looks
    (how far back) but forgets which characters are there. A head tracks a role only if it beats both.
    """
    T = weights.shape[-1]
    uniform = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]  # (T, T) causal, rows sum to 1
    habit = weights.mean(axis=1)  # (L, h, T, T): each head's average map over the texts
    on = {r: np.zeros(weights.shape[0:1] + weights.shape[2:3]) for r in ROLES}
    by_position = {r: np.zeros_like(on[r]) for r in ROLES}
    rows = dict.fromkeys(ROLES, 0)
    base = dict.fromkeys(ROLES, 0.0)
    for b, text in enumerate(texts):
        for role, p in role_patterns(text).items():
            on[role] += (weights[:, b] * p).sum(axis=(-2, -1))
            by_position[role] += (habit * p).sum(axis=(-2, -1))
            rows[role] += int(p.any(axis=1).sum())
            base[role] += float((uniform * p).sum())
    out = {r: on[r] / max(rows[r], 1) for r in ROLES}
    out |= {f"position: {r}": by_position[r] / max(rows[r], 1) for r in ROLES}
    return out | {f"uniform: {r}": np.array(base[r] / max(rows[r], 1)) for r in ROLES}


def distance_profile(weights: np.ndarray, far: int = 8) -> np.ndarray:
    """weights (L, B, h, T, T) causal -> (L, h, far + 1): mean weight at distance 0..far-1 back, then beyond.

    Distance d is averaged over the queries that can reach it (t >= d); "beyond" is the weight at distance >= far,
    averaged over the queries t >= far. Then the mean over the batch.
    """
    T = weights.shape[-1]
    near = [weights[..., np.arange(d, T), np.arange(d, T) - d] for d in range(far)]  # each (L, B, h, T - d)
    rest = 1.0 - sum(w[..., far - d :] for d, w in enumerate(near))  # (L, B, h, T - far): queries t >= far
    cols = [w.mean(axis=-1) for w in near] + [rest.mean(axis=-1)]
    return np.stack(cols, axis=-1).mean(axis=1)  # (L, h, far + 1)


# --- ablation ----------------------------------------------------------------------------------------------

KINDS = ("first letter of a word", "rest of a word", "space, punctuation or newline")


def position_losses(params: dict, config: GPTConfig, tokens: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Cross-entropy at every position: (B, T) -> (B, T) nats, float64."""
    out = _forward(params, config, tokens)[0].astype(np.float64)  # (B, T, V)
    out -= out.max(axis=-1, keepdims=True)
    log_total = np.log(np.exp(out).sum(axis=-1))  # (B, T)
    return log_total - np.take_along_axis(out, targets[..., None], axis=-1)[..., 0]


def kinds(vocab: corpus.Vocab, tokens: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """(B, T) index into KINDS of each target: a letter after a non-letter, a letter after a letter, or neither."""
    is_letter = np.array([c.isalpha() for c in vocab.chars])
    after_letter, letter = is_letter[tokens], is_letter[targets]
    return np.where(letter & ~after_letter, 0, np.where(letter, 1, 2))


def ablation_table(
    params: dict, config: GPTConfig, vocab: corpus.Vocab, tokens: np.ndarray, targets: np.ndarray
) -> dict[str, np.ndarray]:
    """Validation loss with each head zeroed: "all" (n_layer, n_head) and one table per kind, plus the baselines."""
    check_params(params, config)
    kind = kinds(vocab, tokens, targets)

    def summary(losses: np.ndarray) -> np.ndarray:
        return np.array([losses.mean()] + [losses[kind == k].mean() for k in range(len(KINDS))])

    base = summary(position_losses(params, config, tokens, targets))
    table = np.zeros((config.n_layer, config.n_head, 1 + len(KINDS)))
    for layer in range(config.n_layer):
        for head in range(config.n_head):
            ablated = ablate_heads(params, config, [(layer, head)])
            table[layer, head] = summary(position_losses(ablated, config, tokens, targets))
    return {
        "base": base,
        "all": table[..., 0],
        **{k: table[..., 1 + i] for i, k in enumerate(KINDS)},
        "share": np.bincount(kind.ravel(), minlength=len(KINDS)) / kind.size,
    }


def full_validation_loss(params: dict, config: GPTConfig, val_ids: np.ndarray, batch: int = 256) -> float:
    """Mean loss over the whole validation text, cut into non-overlapping windows of n_ctx + 1 characters."""
    n = (len(val_ids) - 1) // config.n_ctx
    starts = np.arange(n) * config.n_ctx
    total = 0.0
    for i in range(0, n, batch):
        win = val_ids[starts[i : i + batch, None] + np.arange(config.n_ctx + 1)]  # (<= batch, n_ctx + 1)
        total += position_losses(params, config, win[:, :-1], win[:, 1:]).sum()
    return total / (n * config.n_ctx)


def word_share(texts: Sequence[str], known: set[str]) -> float:
    """The share of the words in texts (runs of letters and apostrophes) that are in known (the corpus's words)."""
    words = [w for t in texts for w in re.findall(r"[A-Za-z']+", t)]
    return sum(w.lower() in known for w in words) / max(len(words), 1)


def corpus_words(text: str) -> set[str]:
    """Every word of text, lower-cased."""
    return {w.lower() for w in re.findall(r"[A-Za-z']+", text)}


def load_model(path: Path = CHECKPOINT) -> tuple[dict, GPTConfig, corpus.Vocab, dict]:
    """The shipped checkpoint: (params, config, vocab, info with train_config and log)."""
    return load_checkpoint(path)


# --- several heads against one: the h sweep ------------------------------------------------------------------

SWEEP_HS = (1, 2, 4, 8, 16)
SWEEP_SEEDS = (0, 1)
SWEEP_STEPS = 1000  # every run the same budget: the default model's first 1,000 steps, schedule compressed to them


def sweep_trainer(h: int, seed: int, steps: int = SWEEP_STEPS) -> Trainer:
    """The sweep's model for h heads (4 layers, d_model 128, n_ctx 64) with its trainer, before its first step."""
    vocab, train_ids, val_ids = corpus.load()
    config = GPTConfig(len(vocab), 4, h, 128, 64)
    return Trainer(config, TrainConfig(steps=steps, seed=seed, eval_every=steps // 4), train_ids, val_ids, vocab)


def sweep_run(h: int, seed: int, steps: int = SWEEP_STEPS) -> dict[str, np.ndarray]:
    """Train the sweep's model with h heads for steps: its log and wall time."""
    trainer = sweep_trainer(h, seed, steps)
    start = time.perf_counter()
    trainer.run()
    return {
        "loss": np.array(trainer.log["loss"]),
        "val_step": np.array(trainer.log["val_step"]),
        "val_loss": np.array(trainer.log["val_loss"]),
        "seconds": np.array(time.perf_counter() - start),
    }


def run_sweep(
    hs: Sequence[int] = SWEEP_HS, seeds: Sequence[int] = SWEEP_SEEDS, steps: int = SWEEP_STEPS, log=print
) -> dict[str, np.ndarray]:
    """Every (h, seed), as one dict of arrays keyed '<h>/<seed>/<field>' (minutes: see the script)."""
    out = {"numpy_version": np.array(np.__version__)}
    for h in hs:
        for seed in seeds:
            run = sweep_run(h, seed, steps)
            out |= {f"{h}/{seed}/{k}": v for k, v in run.items()}
            log(f"h={h:>2} seed={seed}: val {run['val_loss'][-1]:.4f} ({float(run['seconds']):.0f} s)")
    return out


EVALUATION_PATH = DATA / "lm_evaluation.npz"  # the shipped model on the whole validation text (seconds to recompute)


def evaluation(params: dict, config: GPTConfig) -> dict[str, np.ndarray]:
    """The shipped model's loss on all of the validation text, on its two plays separately, and on the part of
    Romeo and Juliet it trained on, each in non-overlapping windows: where the last 10% comes from matters."""
    vocab, train_ids, val_ids = corpus.load()
    text = vocab.decode(val_ids)
    tempest = text.index("\nTHE TEMPEST\n") + 1  # the last work's title: the validation text's second play
    romeo = vocab.decode(train_ids).rindex("\nROMEO AND JULIET\n") + 1  # its title, in the training text
    return {
        "validation": np.array(full_validation_loss(params, config, val_ids)),
        "romeo_and_juliet_end": np.array(full_validation_loss(params, config, val_ids[:tempest])),
        "tempest": np.array(full_validation_loss(params, config, val_ids[tempest:])),
        "tempest_share": np.array(1 - tempest / len(val_ids)),
        "romeo_and_juliet_trained": np.array(full_validation_loss(params, config, train_ids[romeo:])),
    }


LONG_PATH = DATA / "lm_head_long.npz"
LONG_HS = (1, 16)  # the full budget (the default run's 3,500 steps); h = 4 at that budget is the shipped model


def run_long(log=print) -> dict[str, np.ndarray]:
    """The default run's recipe (3,500 steps, seed 0) with h = 1 and h = 16, keyed like run_sweep's output."""
    return run_sweep(LONG_HS, (0,), TrainConfig().steps, log)


def load_sweep(path: Path = SWEEP_PATH) -> dict[str, np.ndarray]:
    """The sweep's arrays, keyed as run_sweep writes them."""
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def final_val(sweep: dict[str, np.ndarray]) -> np.ndarray:
    """(len(SWEEP_HS), len(SWEEP_SEEDS)) validation loss at the end of the budget."""
    return np.array([[sweep[f"{h}/{s}/val_loss"][-1] for s in SWEEP_SEEDS] for h in SWEEP_HS])


# --- induction heads on real data ------------------------------------------------------------------------------

REPEAT_FRACTION = 0.25  # of each batch's rows: a random letter block repeated to the end of the row
REPEAT_LENGTHS = (8, 64)  # the block's length, drawn uniformly from this range (inclusive)
INDUCTION_CONFIG = {"n_layer": 2, "n_head": 4, "d_model": 128, "n_ctx": 128}
INDUCTION_STEPS = 3000
PROBE_EVERY = 100
PROBE_K = 40  # the probes: PROBE_K characters, then the same PROBE_K again, then fresh ones


def letter_ids(vocab: corpus.Vocab) -> np.ndarray:
    """The ids of the lower-case letters a-z."""
    return np.array([vocab.chars.index(c) for c in "abcdefghijklmnopqrstuvwxyz"])


def repeated_letters(rng: np.random.Generator, letters: np.ndarray, length: int) -> np.ndarray:
    """(length,) ids: a block of random letters (REPEAT_LENGTHS long) repeated until length is filled."""
    k = int(rng.integers(REPEAT_LENGTHS[0], REPEAT_LENGTHS[1] + 1))
    block = rng.choice(letters, size=k)
    return np.tile(block, math.ceil(length / k))[:length]


class MixedTrainer(Trainer):
    """A Trainer whose batches have a REPEAT_FRACTION of their rows replaced by repeated random letters."""

    def __init__(self, *args, repeat_fraction: float = REPEAT_FRACTION, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.repeat_fraction = repeat_fraction
        self.letters = letter_ids(self.vocab)

    def make_batch(self) -> tuple[np.ndarray, np.ndarray]:
        """Shakespeare windows, a fraction of the rows swapped for repeats (the same rows of every batch)."""
        tokens, targets = super().make_batch()
        n = round(self.repeat_fraction * len(tokens))
        for row in range(n):
            seq = repeated_letters(self.rng, self.letters, self.config.n_ctx + 1)
            tokens[row], targets[row] = seq[:-1], seq[1:]
        return tokens, targets


def probe_tokens(
    vocab: corpus.Vocab, text: str, n_ctx: int, count: int = 8, seed: int = 1, k: int = PROBE_K
) -> dict[str, np.ndarray]:
    """Held-out probes (count, n_ctx): "letters" (k random letters twice, then random letters) and "verse"
    (k characters of the validation text twice, then the text that follows)."""
    rng = np.random.default_rng(seed)
    letters = letter_ids(vocab)
    rows = []
    for _ in range(count):
        block = rng.choice(letters, size=k)
        rows.append(np.concatenate([block, block, rng.choice(letters, size=n_ctx - 2 * k)]))
    ids = vocab.encode(text)
    starts = np.linspace(0, len(ids) - n_ctx - 1, count).astype(int)
    verse = [np.concatenate([ids[s : s + k], ids[s : s + n_ctx - k]]) for s in starts]
    return {"letters": np.array(rows), "verse": np.array(verse)}


def induction_scores(params: dict, config: GPTConfig, probes: np.ndarray, k: int = PROBE_K) -> np.ndarray:
    """(n_layer, n_head) induction score (lesson 14's detector) on probes whose first k characters repeat."""
    weights = attention_weights(params, config, probes)  # (L, B, h, T, T)
    return circuits.induction_score(weights, k).mean(axis=1)  # (L, h)


def copy_losses(params: dict, config: GPTConfig, probes: np.ndarray, k: int = PROBE_K) -> tuple[float, float]:
    """Mean loss predicting the first copy's characters 1..k-1 and the second copy's 1..k-1 (nats): copying shows as
    a drop. The second copy's first character is left out: nothing before it says the text starts again."""
    losses = position_losses(params, config, probes[:, :-1], probes[:, 1:])  # position t predicts t + 1
    return float(losses[:, : k - 1].mean()), float(losses[:, k : 2 * k - 1].mean())


def induction_trainer(repeat_fraction: float = REPEAT_FRACTION, steps: int = INDUCTION_STEPS, seed: int = 0):
    """The induction run's model (2 layers, 4 heads, d_model 128, n_ctx 128, batch 16) and its MixedTrainer."""
    vocab, train_ids, val_ids = corpus.load()
    config = GPTConfig(len(vocab), **INDUCTION_CONFIG)
    tc = TrainConfig(steps=steps, batch=16, seed=seed, eval_every=250)
    return MixedTrainer(config, tc, train_ids, val_ids, vocab, repeat_fraction=repeat_fraction)


def induction_run(repeat_fraction: float = REPEAT_FRACTION, steps: int = INDUCTION_STEPS, seed: int = 0):
    """Train the induction model, probing every PROBE_EVERY steps: (trainer, log of probes and val losses)."""
    trainer = induction_trainer(repeat_fraction, steps, seed)
    config, vocab = trainer.config, trainer.vocab
    probes = probe_tokens(vocab, vocab.decode(trainer.val_ids), config.n_ctx)
    probe_log: dict[str, list] = {"probe_step": [], "letters": [], "verse": []}

    def probe(step: int, _loss: float) -> None:
        if step % PROBE_EVERY == 0:
            probe_log["probe_step"].append(step)
            for name in ("letters", "verse"):
                probe_log[name].append(induction_scores(trainer.params, config, probes[name]))

    probe(0, 0.0)
    trainer.run(callback=probe)
    return trainer, {k: np.array(v) for k, v in probe_log.items()}


# --- sampling --------------------------------------------------------------------------------------------------


def greedy_by_recomputation(params: dict, config: GPTConfig, prompt_ids: np.ndarray, n_new: int) -> np.ndarray:
    """Greedy decoding without a cache: the whole sequence through the model again for every new token."""
    ids = list(prompt_ids)
    with one_blas_thread():  # as generate does: the comparison is then of the work, not of thread contention
        for _ in range(n_new):
            window = np.array(ids[-config.n_ctx :])[None]  # (1, <= n_ctx)
            ids.append(int(np.argmax(_forward(params, config, window)[0][0, -1])))
    return np.array(ids)


def time_decoding(params: dict, config: GPTConfig, prompt_ids: np.ndarray, n_new: int, repeats: int = 3):
    """(seconds with the KV cache, seconds recomputing, both outputs equal?): the best of repeats runs each."""
    cached, recomputed = [], []
    for _ in range(repeats):  # interleaved, so a busy moment slows both alike
        start = time.perf_counter()
        fast = generate(params, config, prompt_ids, n_new, temperature=0)
        cached.append(time.perf_counter() - start)
        start = time.perf_counter()
        slow = greedy_by_recomputation(params, config, prompt_ids, n_new)
        recomputed.append(time.perf_counter() - start)
    return min(cached), min(recomputed), bool(np.array_equal(fast, slow))


def parameter_table(params: dict, config: GPTConfig) -> str:
    """A Markdown table of where the parameters are: embeddings, attention, MLP and LayerNorms, with shares."""
    check_params(params, config)
    parts = ("token embedding wte (also the read-out)", "position embedding wpe", "attention (W^Q, W^K, W^V, "
             "W^O, biases)", "MLP (w1, w2, biases)", "LayerNorm gains and shifts")  # fmt: skip
    groups = dict.fromkeys(parts, 0)
    names = list(groups)
    for name, a in params.items():
        kind = 0 if name == "wte" else 1 if name == "wpe" else 2 if ".attn." in name else 3 if ".mlp." in name else 4
        groups[names[kind]] += a.size
    total = sum(groups.values())
    rows = [f"| {g} | {n:,d} | {n / total:.0%} |" for g, n in groups.items()]
    return "| part | parameters | share |\n|---|---:|---:|\n" + "\n".join(rows) + f"\n| **total** | **{total:,d}** | |"


def next_char_table(
    params: dict, config: GPTConfig, vocab: corpus.Vocab, context: str, temperatures: Sequence[float], k: int = 5
) -> str:
    """A Markdown table: the k likeliest next characters after context at each temperature, with probabilities."""
    ids = vocab.encode(context, "text")[-config.n_ctx :]
    z = _forward(params, config, ids[None])[0][0, -1].astype(np.float64)  # (V,) next-character logits
    order = np.argsort(z)[::-1][:k]
    header = "| next character | " + " | ".join(f"T = {t:g}" for t in temperatures) + " |"
    lines = [header, "|---|" + "---:|" * len(temperatures)]
    probs = []
    for t in temperatures:
        p = np.exp((z - z.max()) / t)
        probs.append(p / p.sum())
    for i in order:
        label = repr(vocab.chars[i]).strip("'")
        lines.append(f"| `{label}` | " + " | ".join(f"{p[i]:.3f}" for p in probs) + " |")
    return "\n".join(lines)


POSITIONAL = ("previous character", "itself")  # roles defined by distance alone: compared with the uniform head


def role_ratios(scores: dict[str, np.ndarray]) -> np.ndarray:
    """(n_layer * n_head, roles): each share over its baseline, the uniform head for POSITIONAL roles (a head's
    position habit would explain them fully) and the head's own position habit for the others."""
    cols = []
    for role in ROLES:
        base = scores[f"uniform: {role}"] if role in POSITIONAL else scores[f"position: {role}"]
        share = np.broadcast_to(scores[role], np.shape(scores[role]))
        base = np.broadcast_to(base, share.shape)
        cols.append(np.divide(share, base, out=np.full(share.shape, np.nan), where=base > 0).ravel())  # no keys: nan
    return np.stack(cols, axis=1)


def role_leaders(scores: dict[str, np.ndarray], role: str, k: int = 3) -> list[tuple[int, int, float, float]]:
    """The k heads that beat their baseline (see role_ratios) by most on role: (layer, head, share, ratio) each."""
    ratios = role_ratios(scores)[:, ROLES.index(role)]  # (n_layer * n_head,)
    n_head = scores[role].shape[1]
    order = np.argsort(-np.nan_to_num(ratios, nan=-np.inf), kind="stable")[:k]
    return [(*divmod(int(i), n_head), float(scores[role].ravel()[i]), float(ratios[i])) for i in order]


def role_summary(scores: dict[str, np.ndarray]) -> str:
    """A Markdown table: for each role, the head that beats its baseline (see role_ratios) by most."""
    lines = ["| role | head | its share | baseline | share / baseline |", "|---|---|---:|---:|---:|"]
    ratios = role_ratios(scores)
    n_head = scores[ROLES[0]].shape[1]
    for j, role in enumerate(ROLES):
        layer, head = divmod(int(ratios[:, j].argmax()), n_head)
        share = scores[role][layer, head]
        if role in POSITIONAL:
            base, what = float(scores[f"uniform: {role}"]), "uniform head"
        else:
            base, what = scores[f"position: {role}"][layer, head], "its position habit"
        lines.append(
            f"| {role} | layer {layer}, head {head} | {share:.2f} | {base:.2f} ({what}) | {share / base:.1f}x |"
        )
    return "\n".join(lines)


def sweep_table(final: np.ndarray) -> str:
    """A Markdown table of final_val's (h, seed) validation losses with each h's mean."""
    lines = ["| h | d_k | validation loss (seeds 0, 1) | mean |", "|---:|---:|---|---:|"]
    for h, row in zip(SWEEP_HS, final, strict=True):
        lines.append(f"| {h} | {128 // h} | {', '.join(f'{v:.3f}' for v in row)} | {row.mean():.3f} |")
    return "\n".join(lines)


def evaluation_table(path: Path = EVALUATION_PATH) -> str:
    """The saved evaluation (see evaluation) as a Markdown table."""
    ev = {k: float(v) for k, v in np.load(path).items()}
    rows = (
        ("all of the validation text", ev["validation"]),
        ("its end of Romeo and Juliet (held out, but the play was trained on)", ev["romeo_and_juliet_end"]),
        (f"its Tempest ({ev['tempest_share']:.0%} of the validation text; a play never seen)", ev["tempest"]),
        ("the part of Romeo and Juliet it trained on", ev["romeo_and_juliet_trained"]),
    )
    return "| text | loss (nats per character) |\n|---|---:|\n" + "\n".join(f"| {t} | {v:.3f} |" for t, v in rows)
