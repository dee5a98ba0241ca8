"""Checks for lesson 20's exercises (your own language model): predict what zeroing a head does to each kind of
character and check it against the model, count the KV cache of the model (apply), and diagnose a missing
induction head (interpret)."""

from __future__ import annotations

import functools

import numpy as np

from ..demos import lm as lesson
from ..lm import corpus
from ._base import Feedback, as_whole_number, check_letter, right, wrong

# Exercise 1 (predict, then check): zero layer 0, head 3. Which kind of target character loses the most?
ABLATED = (0, 3)
KIND_OPTIONS = {"a": lesson.KINDS[0], "b": lesson.KINDS[1], "c": lesson.KINDS[2]}


@functools.lru_cache(maxsize=1)
def ablation_by_kind() -> dict[str, np.ndarray]:
    """Validation loss per kind, intact and with ABLATED zeroed: {"intact", "ablated"} -> (3,) nats, and "share"."""
    params, config, vocab, _ = lesson.load_model()
    _, _, val_ids = corpus.load()
    windows = lesson.windows(val_ids, 64, config.n_ctx + 1)
    tokens, targets = windows[:, :-1], windows[:, 1:]
    kind = lesson.kinds(vocab, tokens, targets)
    out = {}
    for name, p in (("intact", params), ("ablated", lesson.ablate_heads(params, config, [ABLATED]))):
        losses = lesson.position_losses(p, config, tokens, targets)
        out[name] = np.array([losses[kind == k].mean() for k in range(len(lesson.KINDS))])
    return out | {"share": np.bincount(kind.ravel(), minlength=3) / kind.size}


def ablation_table_markdown() -> str:
    """The measured answer: loss per kind, intact and ablated, as a Markdown table."""
    r = ablation_by_kind()
    rows = [
        f"| {k} | {share:.0%} | {a:.2f} | {b:.2f} | {b - a:+.2f} |"
        for k, share, a, b in zip(lesson.KINDS, r["share"], r["intact"], r["ablated"], strict=True)
    ]
    head = "| target character | share | intact | layer 0, head 3 zeroed | rise |\n|---|---:|---:|---:|---:|\n"
    return head + "\n".join(rows)


def ablation_table_after(answer: object) -> str:
    """The measured table once `answer` holds a prediction (one of the options), else a line saying so.

    Shown only after the prediction, so an executed notebook does not print the answer under the question.
    """
    if isinstance(answer, str) and answer.strip().lower() in KIND_OPTIONS:
        return ablation_table_markdown()
    return '*The measured table appears here once `answer` above holds your prediction ("a", "b" or "c").*'


def check_ablation_prediction(answer: object) -> Feedback:
    """Exercise 1: the kind whose loss rises most when layer 0, head 3 is zeroed, measured on validation text."""
    r = ablation_by_kind()
    correct = "abc"[int(np.argmax(r["ablated"] - r["intact"]))]
    rise = dict(zip("abc", r["ablated"] - r["intact"], strict=True))
    praise = (
        f"The model agrees: +{rise[correct]:.2f} nats on '{KIND_OPTIONS[correct]}', against +{rise['b']:.2f} inside "
        f"words and +{rise['a']:.2f} on first letters. Ending a word (a space, a comma, a line break) depends on which "
        "word the last few characters spell; this head reads the last few characters (its distance profile), and the "
        "model leans on it for that decision far more than for the next letter inside a word."
    )
    hints = {
        "a": "First letters are the hardest to predict for the intact model too: what would the model need to know "
        "there that a glance at the last few characters gives? Look at the loss table after your guess.",
        "b": "Inside a word the last letter or two say a lot, and several layer-0 heads read them. Which decision "
        "needs the whole word seen so far, not just its last letters?",
        "c": "Spaces and punctuation follow the end of a word or phrase: check the table after your guess.",
    }
    return check_letter(answer, KIND_OPTIONS, correct, praise, hints)


# Exercise 2 (apply): the KV cache of a bigger version of the model (6 layers, 8 heads, d_model 256) after 64
# characters, in numbers. Sizes chosen so that each usual slip gives a different wrong number.
CACHE = {"n_layer": 6, "d_model": 256, "n_head": 8, "tokens": 64}


def check_cache_size(answer: object) -> Feedback:
    """Exercise 2: 2 (keys and values) x n_layer x tokens x d_model = 196,608 numbers."""
    value = as_whole_number(answer, "a number of cached numbers")
    if isinstance(value, Feedback):
        return value
    c = CACHE
    correct = 2 * c["n_layer"] * c["tokens"] * c["d_model"]
    if value == correct:
        return right(
            f"{correct:,d} numbers ({correct * 4 // 1024} KiB in float32): every layer keeps a key and a value of "
            "d_model = h x d_k numbers per token. Small here; at 32 layers, 4,096 wide and 100k tokens it is GBs."
        )
    if value == correct // 2:
        return wrong("The cache keeps two vectors per token and layer: its key and its value.")
    if value == correct // c["n_layer"]:
        return wrong("Every layer has its own attention, so its own cache.")
    if value == correct // c["n_head"] or value == correct // (2 * c["n_head"]):
        return wrong("A token's key holds every head's d_k numbers side by side: h x d_k = d_model in all.")
    if value == correct * c["n_head"]:
        return wrong("d_model already counts every head: h heads of d_k = d_model / h numbers each.")
    return wrong("Count per token and layer (a key and a value, d_model numbers each), then multiply.")


# Exercise 3 (interpret): no induction head on plain text.
DIAGNOSIS = {
    "a": "Two layers cannot express an induction head: the model needs at least three.",
    "b": "The model can hold an induction head; in these runs one formed only when the data held long exact "
    "repeats, and plain verse at this budget did not lead training to one.",
    "c": "Four heads are too few: each head is busy with local patterns.",
    "d": "The detector is wrong: induction heads exist but score low because verse is never repeated exactly.",
}


def check_diagnosis(answer: object) -> Feedback:
    """Exercise 3: the data lacked long repeats (b)."""
    return check_letter(
        answer,
        DIAGNOSIS,
        "b",
        "The control run and the mixed run share the architecture, the steps and the seed; only the data differs "
        "(the control even saw a third more Shakespeare), and only the mixed run grows an induction head. Long exact "
        "repeats are rare in plain verse within 128 characters; why that keeps training from building the head, these "
        "runs do not test. One seed and 3,000 steps: with far more text, Olsson et al. (2022) saw induction heads form "
        "on ordinary text.",
        {
            "a": "Lesson 14 built an induction head from two layers: a previous-token head, then a head that "
            "composes with it. The same two layers here form one when the data has repeats.",
            "c": "The mixed run has the same four heads per layer and still grows an induction head.",
            "d": "The same detector gives the mixed run's head 0.78 on repeated letters: it finds copying where "
            "copying happens. Look at what differs between the two runs.",
        },
    )
