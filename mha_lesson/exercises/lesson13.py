"""Exercise checks for lesson 13 (training heads from scratch).

Exercise 1 builds the two lookups by hand in a small layer whose input has readable columns:
x = [word one-hot (VOCAB) | position one-hot (MAX_LEN) | zeros], d_model = 16, h = 2 heads of d_k = 8.
Every head's key is its token's position (W_K) and its value its token's word (W_V); the learner writes W^Q (where
each head looks) and W^O (where each head's word lands). Read-out j reads output columns j*VOCAB .. (j+1)*VOCAB - 1
and answers the word with the largest entry: read-out 0 must give the word 1 back, read-out 1 the word 2 back.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..attention import causal_mask
from ..multihead import multi_head_attention
from ..projections import MHAParams
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


def routing_report(w_o: np.ndarray) -> np.ndarray:
    """(2,) fraction of test positions each read-out gets right when head i looks exactly BACKS[i] back: W^O alone.

    With one-hot attention, head i's output at position t is the value of token t - BACKS[i] (its word one-hot in
    the head's first columns), so this judges W^O's routing whatever the learner's gain in W^Q.
    """
    words = test_words()
    x = embed(words)
    t = np.arange(max(BACKS), MAX_LEN)
    concat = np.zeros((len(words), len(t), D_MODEL))
    for i, back in enumerate(BACKS):
        cols = slice(i * D_K, (i + 1) * D_K)
        concat[..., cols] = (x[:, t - back] @ W_V)[..., cols]  # head i's value of the token BACKS[i] back
    wanted = np.stack([words[:, t - back] for back in BACKS], axis=-1)
    return (read_out(concat @ w_o) == wanted).mean(axis=(0, 1))


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
    routed = routing_report(matrices[1])
    if (routed < TARGET).any():
        return wrong(
            f"The heads look the right way, but even with perfectly sharp heads the read-outs would be right only "
            f"{routed[0]:.0%} (1 back) and {routed[1]:.0%} (2 back) of the time: fix W^O first. Head i's value (its "
            f"word one-hot) is in rows i*8 to i*8+{VOCAB - 1} of W^O; read-out j reads output columns {VOCAB}j to "
            f"{VOCAB}j+{VOCAB - 1}."
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


# --- exercise 2: what a width-1 head can make sharp; exercise 3: two layers that look 1 and 3 back ----------------

WIDTH_ONE_OPTIONS = {
    "a": "every query attends to itself (causal mask)",
    "b": "every query attends to the token 1 back (causal mask)",
    "c": "every query attends to the token 2 back (causal mask)",
    "d": "every query attends to the first token (causal mask)",
    "e": "every query attends to the token 1 back, with no mask (every key visible)",
}
ENUMERATE_N = 6  # short enough to try every ordering of the key scores


def wanted_key(option: str, i: int) -> int | None:
    """The key query i must favour under an option, or None when the query has no such key."""
    target = {"a": i, "b": i - 1, "c": i - 2, "d": 0, "e": i - 1}[option]
    return target if target >= 0 else None


def representable(option: str, n: int = ENUMERATE_N) -> bool:
    """Whether some width-1 head (scores u_i v_j) makes every query's favourite key the option's, for n tokens.

    Only the order of the v_j and the sign of each u_i decide a favourite, so trying every order of v (n! of them)
    with the better sign per query settles it.
    """
    causal = option != "e"
    for order in itertools.permutations(range(n)):
        v = np.array(order)
        ok = True
        for i in range(n):
            want = wanted_key(option, i)
            if want is None:
                continue
            seen = v[: i + 1] if causal else v
            ok = v[want] in (seen.max(), seen.min())  # distinct values: an extreme is a strict favourite
            if not ok:
                break
        if ok:
            return True
    return False


def check_width_one(answer: object) -> Feedback:
    """Exercise 2: the set of patterns a width-1 head can make sharp at every query (letters of WIDTH_ONE_OPTIONS)."""
    chosen = as_label_set(answer, tuple(WIDTH_ONE_OPTIONS), 'a set of letters, e.g. {"a", "c"}')
    if isinstance(chosen, Feedback):
        return chosen
    truth = {option for option in WIDTH_ONE_OPTIONS if representable(option)}
    if chosen == truth:
        return right(
            "with scores u_i v_j, query i favours the key with the largest v it can see (u_i > 0) or the smallest "
            "(u_i < 0). Itself: let v grow. 1 back: let v set records alternately high and low. The first token: "
            "make v_0 the largest. 2 back fails because v_{i-1} and v_i would both have to stay inside v_{i-2}'s "
            "record while each set a record of its own; with no mask, only two keys can be the extremes of all."
        )
    missing, extra = sorted(truth - chosen), sorted(chosen - truth)
    if "a" in missing or "d" in missing:
        return wrong("Try it: with u_i = 1 for every query, which v makes each query favour itself, or key 0?")
    if "b" in missing:
        return wrong("Section 4 built the 1-back pattern in width 1: look at its v and the signs of u.")
    if "c" in extra:
        return wrong(
            "For 2 back, v_{i-2} must be the extreme of v_0..v_i for query i, and v_{i-1} the extreme of "
            "v_0..v_{i+1} for query i + 1. Can both hold, together with the next query's?"
        )
    if "e" in extra:
        return wrong("With no mask every query sees all keys: how many different keys can be the largest or smallest?")
    return wrong("Check each pattern: query i favours the key with the largest or smallest v it may see.")


def stream_offsets(first: int, second: int) -> set[int]:
    """Offsets back of the tokens position t's stream holds after two one-head layers that copy first, then second
    back (each head copies the whole stream it reads, V-composition): {0, first, second, first + second}."""
    return {0, first, second, first + second}


def check_two_layer_offsets(first: object, second: object) -> Feedback:
    """Exercise 3: offsets (whole numbers 1-3) of layer 0's and layer 1's heads so that the stream holds the tokens
    1 back and 3 back."""
    chosen = []
    for name, answer in (("first", first), ("second", second)):
        if answer is None:
            return wrong(f"Replace None with a whole number of positions back for {name}.")
        if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)) or not 1 <= answer <= 3:
            return wrong(f"{name}: expected a whole number from 1 to 3 (how far back that head looks), got {answer!r}.")
        chosen.append(int(answer))
    holds = sorted(stream_offsets(*chosen) - {0})
    if 1 in holds and 3 in holds:
        return right(
            f"position t's stream then holds the tokens {holds} back, 1 and 3 among them. Layer 1's head reads a "
            "stream that layer 0 has already written into (V-composition), so offsets add up: "
            f"{chosen[0]} + {chosen[1]} = {sum(chosen)}."
        )
    if chosen[0] == chosen[1]:
        return wrong(
            f"Both heads look {chosen[0]} back: the stream holds {holds} back. Layer 1 reads a stream that already "
            "holds layer 0's token, so its offset adds to layer 0's."
        )
    return wrong(
        f"The stream holds the tokens {holds} back. It holds each head's own offset and their sum: which pair gives "
        "1 and 3?"
    )
