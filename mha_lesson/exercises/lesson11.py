"""Exercise checks for lesson 11 (training heads from scratch).

Exercise 1 builds the two lookups by hand in a small layer whose input has readable columns:
x = [word one-hot (VOCAB) | position one-hot (MAX_LEN) | zeros], d_model = 16, h = 2 heads of d_k = 8.
Every head's key is its token's position (W_K) and its value its token's word (W_V); the learner writes W^Q (where
each head looks) and W^O (where each head's word lands). Read-out j reads output columns j*VOCAB .. (j+1)*VOCAB - 1
and answers the word with the largest entry: read-out 0 must give the word 1 back, read-out 1 the word 2 back.
"""

from __future__ import annotations

import functools

import numpy as np

from ..attention import causal_mask
from ..demos.training import HEADLINE, SPECIALISED, SWEEP_SEEDS, SWEEP_STEPS, Sweep, load_sweep, readout_shares
from ..multihead import multi_head_attention
from ..projections import MHAParams
from ..training import Trainer, train
from ._base import Feedback, as_array, as_label_set, right, wrong

VOCAB, MAX_LEN, D_MODEL, H = 4, 8, 16, 2
D_K = D_MODEL // H
WORDS = slice(0, VOCAB)  # columns of x holding the word one-hot
POSITIONS = slice(VOCAB, VOCAB + MAX_LEN)  # columns holding the position one-hot
BACKS = (1, 2)  # read-out j must give the word BACKS[j] positions back
SEQUENCES = 200  # random test sequences
TARGET = 0.99  # fraction of scored positions where both read-outs must be right


def _every_head(rows: slice) -> np.ndarray:
    """(D_MODEL, D_MODEL): copies input columns `rows` into the first columns of every head's block."""
    w = np.zeros((D_MODEL, D_MODEL))
    size = rows.stop - rows.start
    for i in range(H):
        w[rows, i * D_K : i * D_K + size] = np.eye(size)
    return w


W_K = _every_head(POSITIONS)  # every head's key: the token's position one-hot, in the block's first 8 columns
W_V = _every_head(WORDS)  # every head's value: the token's word one-hot, in the block's first 4 columns


def embed(words: np.ndarray) -> np.ndarray:
    """x (..., MAX_LEN, D_MODEL) for word ids (..., MAX_LEN): word one-hot, then position one-hot, then zeros."""
    words = np.asarray(words)
    x = np.zeros((*words.shape, D_MODEL))
    x[..., WORDS] = np.eye(VOCAB)[words]
    x[..., POSITIONS] = np.eye(MAX_LEN)
    return x


def design_params(w_q: np.ndarray, w_o: np.ndarray) -> MHAParams:
    """The two-head layer with the learner's W^Q and W^O and the given W_K and W_V."""
    return MHAParams(h=H, w_q=w_q, w_k=W_K, w_v=W_V, w_o=w_o)


def read_out(out: np.ndarray) -> np.ndarray:
    """(..., n, 2) word ids read from outputs (..., n, D_MODEL): the largest of columns j*VOCAB .. (j+1)*VOCAB-1."""
    blocks = out[..., : 2 * VOCAB].reshape(*out.shape[:-1], 2, VOCAB)  # (..., n, read-out, word)
    return blocks.argmax(axis=-1)


def test_words(seed: int = 11) -> np.ndarray:
    """(SEQUENCES, MAX_LEN) random word ids the check runs the layer on."""
    return np.random.default_rng(seed).integers(VOCAB, size=(SEQUENCES, MAX_LEN))


def design_report(w_q: np.ndarray, w_o: np.ndarray) -> dict[str, np.ndarray | float]:
    """Run the layer (causal) on test_words(): the fraction with both lookups right, each read-out's fraction right,
    and each head's mean weight on the key 1 and 2 back (H, 2), over the positions where both lookups exist."""
    words = test_words()
    x = embed(words)
    out, weights = multi_head_attention(x, x, x, design_params(w_q, w_o), causal_mask(MAX_LEN))
    t = np.arange(max(BACKS), MAX_LEN)  # positions where both lookups exist
    answers = read_out(out)[:, t]  # (SEQUENCES, len(t), 2)
    wanted = np.stack([words[:, t - back] for back in BACKS], axis=-1)  # (SEQUENCES, len(t), 2)
    right_each = answers == wanted
    on_back = np.stack([weights[:, :, t, t - back].mean(axis=(0, 2)) for back in BACKS], axis=-1)  # (H, 2)
    return {"both": float(right_each.all(axis=-1).mean()), "each": right_each.mean(axis=(0, 1)), "on_back": on_back}


def check_two_head_design(w_q: object, w_o: object) -> Feedback:
    """Exercise 1: W^Q and W^O (each D_MODEL x D_MODEL) of a two-head layer that makes both lookups."""
    matrices = []
    for name, answer in (("w_q", w_q), ("w_o", w_o)):
        m = as_array(answer, f"a ({D_MODEL}, {D_MODEL}) matrix for {name}")
        if isinstance(m, Feedback):
            return m
        if m.shape != (D_MODEL, D_MODEL):
            return wrong(f"{name}: expected shape ({D_MODEL}, {D_MODEL}) (weights applied as x @ W), got {m.shape}.")
        if not np.isfinite(m).all():
            return wrong(f"{name}: use finite numbers; a large gain is enough to make a head sharp.")
        matrices.append(m)
    report = design_report(*matrices)
    if report["both"] >= TARGET:
        return right(
            f"both lookups right at {report['both']:.1%} of the positions. Head 0 puts "
            f"{report['on_back'][0, 0]:.2f} of its weight 1 back, head 1 {report['on_back'][1, 1]:.2f} 2 back, and "
            "W^O sends each head's word to its own read-out: the division of labour training finds on its own."
        )
    on_back = report["on_back"]  # (H, 2): weight 1 back, 2 back
    prefers = np.sign(np.round(on_back[:, 0] - on_back[:, 1], 2))  # +1: more 1 back, -1: more 2 back, 0: neither
    if prefers[0] == -1 and prefers[1] == 1:
        return wrong("Head 0 looks 2 back and head 1 looks 1 back: swap them, or route them the other way in W^O.")
    if prefers[0] != 1 or prefers[1] != -1:
        lost = [f"head {i}" for i, want in enumerate((1, -1)) if prefers[i] != want]
        verb = "does not look where it" if len(lost) == 1 else "do not look where they"
        return wrong(
            f"{' and '.join(lost)} {verb} should yet. Head i's query is columns i*8 to i*8+7 of x @ W^Q, and "
            "its key is the position one-hot in the same columns of x @ W_K: make position p's query point at "
            "position p-1 (head 0) or p-2 (head 1)."
        )
    if on_back[0, 0] < 0.9 or on_back[1, 1] < 0.9:
        return wrong(
            f"The heads look the right way but softly (weight 1 back in head 0: {on_back[0, 0]:.2f}, 2 back in "
            f"head 1: {on_back[1, 1]:.2f}), and other words win. Scores are divided by sqrt(d_k) = "
            f"{np.sqrt(D_K):.2f} before the softmax: raise the gain so the wanted key scores several units above "
            "the rest."
        )
    each = report["each"]
    return wrong(
        f"The heads look in the right places, but the read-outs are right only {each[0]:.0%} (1 back) and "
        f"{each[1]:.0%} (2 back) of the time: check W^O. Head i's value (its word one-hot) is in rows i*8 to "
        f"i*8+{VOCAB - 1} of W^O; read-out j reads output columns {VOCAB}j to {VOCAB}j+{VOCAB - 1}."
    )


# --- exercise 2: a freshly trained single head; exercise 3: the shipped sweep ---------------------------------------

ONE_HEAD_OPTIONS = {
    "a": "mostly on the token 2 back, the right answer: the head's average holds it",
    "b": "split between the tokens 1 back and 2 back, with more on the 1-back one",
    "c": "spread evenly over all 16 tokens: it has given up",
    "d": "mostly on the current token",
}


@functools.cache
def one_head_shares() -> np.ndarray:
    """(2, 4) readout_shares of the default one-head model (h = 1, seed 0, 1,500 steps), trained on first use."""
    return readout_shares(train("two_lookups", h=1, seed=0).trainer)


def one_head_pattern(shares: np.ndarray) -> str | None:
    """The option of ONE_HEAD_OPTIONS that read-out 1's shares (1 back, 2 back, current, rest) fit, or None."""
    one, two, current, _ = shares
    if two > 0.6:
        return "a"
    if one + two > 0.6 and one > two:
        return "b"
    if max(one, two, current) < 0.2:
        return "c"
    if current > 0.5:
        return "d"
    return None


def check_one_head(answer: object) -> Feedback:
    """Exercise 2: where the single head's 2-back read-out puts its probability (one letter of ONE_HEAD_OPTIONS)."""
    chosen = as_label_set(answer, tuple(ONE_HEAD_OPTIONS), 'one letter, e.g. "a"')
    if isinstance(chosen, Feedback):
        return chosen
    if len(chosen) != 1:
        return wrong("Choose one letter.")
    (letter,) = chosen
    one, two, current, rest = one_head_shares()[1]
    if letter == one_head_pattern(one_head_shares()[1]):
        return right(
            f"measured on a one-head model trained just now: read-out 1 puts {one:.0%} of its probability on the "
            f"token 1 back, {two:.0%} on the right one (2 back) and {rest + current:.0%} on the other tokens. The "
            "head's average holds both tokens, so hedging between them lowers the loss; but the 1-back token has a "
            "little more weight in the average, so the largest score usually lands on it."
        )
    hints = {
        "a": "If it did, the 2-back lookup would be right most of the time; section 4 measured how often it is.",
        "b": "Look again at what the head's average holds, and with which weights.",
        "c": "The head's output does carry candidates for the answer: which tokens are in its average?",
        "d": "The current token is in the residual stream, but nothing rewards read-out 1 for naming it.",
    }
    return wrong(hints[letter])


NARROW_OPTIONS = {
    "a": "16 heads of width 1 have fewer parameters than 2 heads of width 8",
    "b": "a head of width 1 has rank-1 scores and cannot put most of its weight 1 back for every query, so several "
    "heads must share each lookup",
    "c": "training diverged: the loss grew",
    "d": "the narrow heads learn slowly: their accuracy is still rising after 1,500 steps",
}


def narrow_evidence(sweep: Sweep | None = None) -> set[str]:
    """The options of NARROW_OPTIONS that the sweep supports for h = 16, each measured."""
    sweep = load_sweep() if sweep is None else sweep
    runs = [sweep.entries[16, s] for s in SWEEP_SEEDS]
    i, j = sweep.at(HEADLINE), sweep.at(SWEEP_STEPS)
    sizes = {h: Trainer("two_lookups", h=h).model.flat.size for h in (2, 16)}
    measured = {
        "a": sizes[16] < sizes[2],
        "b": max(r.masses[i, 0, :, 1].max() for r in runs) < SPECIALISED,  # no head mostly on 1 back
        "c": any(r.loss_windows[-1] > r.loss_windows[0] for r in runs),
        "d": np.median([r.accuracy[j] for r in runs]) > np.median([r.accuracy[i] for r in runs]) + 0.02,
    }
    return {letter for letter, supported in measured.items() if supported}


def check_narrow_heads(answer: object) -> Feedback:
    """Exercise 3: the explanations of the h = 16 result that the lesson's evidence supports (a set of letters)."""
    chosen = as_label_set(answer, tuple(NARROW_OPTIONS), 'a set of letters, e.g. {"a", "c"}')
    if isinstance(chosen, Feedback):
        return chosen
    truth = narrow_evidence()
    if chosen == truth:
        return right(
            "the parameters are the same and the loss falls; what differs is how the weights are cut. Width-1 heads "
            "can only share the lookups, and they get there slowly."
        )
    if "a" in chosen and "a" not in truth:
        return wrong("Count the parameters: section 2 printed them for every h.")
    if "c" in chosen and "c" not in truth:
        return wrong("Look at the loss curves: does any run's loss end above where it started?")
    return wrong("Something the evidence supports is missing: compare sections 3, 4 and 5 for h = 16.")
