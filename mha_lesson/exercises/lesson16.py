"""Exercise checks for lesson 16 (what heads matter): the ablation map by layer, a head to prune, a sink's reading."""

from __future__ import annotations

import numpy as np

from ._base import Feedback, as_pair, as_whole_number, right, wrong

# The determiner head of lesson 15 (section 7): a head can follow grammar and still not be needed by a task.
SYNTAX_HEAD = (2, 8)  # (layer, head)


def check_ablation_layer(answer: object, cosine: np.ndarray) -> Feedback:
    """Exercise 3: the layer whose heads, switched off one at a time, move the embedding most on average."""
    layer = as_whole_number(answer, f"a layer number from 0 to {len(cosine) - 1}")
    if isinstance(layer, Feedback):
        return layer
    if not 0 <= layer < len(cosine):
        return wrong(f"MiniLM's layers are numbered 0 to {len(cosine) - 1}; got {layer}.")
    move = 1.0 - np.asarray(cosine)  # (n_layers, h): how far each head's absence moves the embedding
    best = int(move.mean(axis=1).argmax())
    if layer == best:
        return right(
            f"layer {best}'s heads move the embedding by {move[best].mean():.4f} on average, against at most "
            f"{np.delete(move.mean(axis=1), best).max():.4f} for any other layer. A likely reason: the embedding is "
            "the mean of the last layer's outputs, so a head there writes straight into it, while the layers above "
            "an earlier head can partly make up for its absence."
        )
    top_layer = int(np.unravel_index(move.argmax(), move.shape)[0])
    if layer == top_layer:
        return wrong("That layer holds the single head that moves it most. Average over each layer's 12 heads.")
    return wrong("Average 1 - cosine over the heads of each layer (one row of `cosine`), then compare the layers.")


# Pruning and value norms (sections 1 and 4) ----------------------------------------------------------------------


def harmless_heads(ref: dict[str, np.ndarray]) -> list[tuple[int, int]]:
    """Heads that, switched off alone, lose no sentence and do not shrink the margin under both ablations."""
    safe = np.ones_like(np.asarray(ref["accuracy_drop_zero"]), dtype=bool)
    for mode in ("zero", "mean"):
        safe &= (np.asarray(ref[f"accuracy_drop_{mode}"]) == 0) & (np.asarray(ref[f"margin_drop_{mode}"]) <= 0)
    return [(int(li), int(hi)) for li, hi in zip(*np.nonzero(safe), strict=True)]


def check_prune_first(answer: object, ref: dict[str, np.ndarray], n_sentences: int) -> Feedback:
    """Which head would you prune first? Right: one that costs the task nothing, by zero- and by mean-ablation."""
    pair = as_pair(answer, "a head as (layer, head)")
    if isinstance(pair, Feedback):
        return pair
    shape = np.shape(ref["accuracy_drop_zero"])
    if not (0 <= pair[0] < shape[0] and 0 <= pair[1] < shape[1]):
        return wrong(f"Layers go from 0 to {shape[0] - 1} and heads from 0 to {shape[1] - 1}; got {pair}.")
    lost = {m: round(float(ref[f"accuracy_drop_{m}"][pair]) * n_sentences) for m in ("zero", "mean")}
    margin = {m: float(ref[f"margin_drop_{m}"][pair]) for m in ("zero", "mean")}
    if pair in harmless_heads(ref):
        remark = (
            f" It is also {SYNTAX_HEAD}, lesson 15's determiner head: a head can track grammar and still not be "
            "needed by a task."
            if pair == SYNTAX_HEAD
            else ""
        )
        return right(
            f"Switched off alone, head {pair} loses no sentence, and the margin moves by {-margin['zero']:+.4f} "
            f"(zero) and {-margin['mean']:+.4f} (mean): this task does not use it, whichever way it is "
            f"removed.{remark} Keep the limits in mind: the ranking takes one head at a time, so two heads that back "
            "each other up both look harmless; Michel et al. prune greedily and iteratively, by a gradient-based "
            "estimate of importance."
        )
    costly = [m for m in ("zero", "mean") if lost[m] > 0]
    if costly:
        return wrong(
            f"Switched off alone, that head already loses {lost[costly[0]]} sentence(s) by {costly[0]}-ablation. "
            "Look for one whose removal costs no sentence."
        )
    worse = [m for m in ("zero", "mean") if margin[m] > 0]
    if len(worse) == 1:
        other = "mean" if worse[0] == "zero" else "zero"
        return wrong(
            f"By {other}-ablation it looks free, but by {worse[0]}-ablation the margin shrinks by "
            f"{margin[worse[0]]:.4f}: the two ablations disagree on this head. Pick one both call harmless."
        )
    return wrong(
        f"It loses no sentence, but the margin between each paraphrase and the nearest other sentence shrinks by "
        f"{margin['zero']:.4f} (zero) and {margin['mean']:.4f} (mean). Pick a head whose removal leaves it as it is."
    )


# A head that parks most of its weight on [CLS]: what does it add to the tokens? Letters of SINK_OPTIONS.
SINK_OPTIONS = {
    "a": "It copies a summary of the whole sentence, stored at [CLS], into every token.",
    "b": "It adds little from [CLS] to any token: [CLS]'s value vector, after W^O, is many times shorter than a "
    "word's, so most of the head's weight moves almost nothing.",
    "c": "It is among the most important heads for the sentence embedding, which all-MiniLM-L6-v2 reads from [CLS].",
    "d": "The map must be wrong: after a softmax, no single key can take most of a row's weight.",
}


def sink_head(sinks: dict) -> tuple[int, int]:
    """The head that puts the largest share of its attention weight on [CLS] (sinks: head_analysis.sink_scores)."""
    share = np.asarray(sinks["attention"]["[CLS]"])
    return tuple(int(i) for i in np.unravel_index(share.argmax(), share.shape))


def check_sink_reading(answer: object, sinks: dict) -> Feedback:
    """What does the strongest [CLS] sink add to the tokens? One letter of SINK_OPTIONS."""
    if answer is None:
        return wrong('Replace None with one letter, e.g. "a".')
    letter = str(answer).strip().strip("'\"").lower()
    if letter not in SINK_OPTIONS:
        return wrong(f"Answer with one of the letters {', '.join(SINK_OPTIONS)}.")
    layer, head = sink_head(sinks)
    if letter == "b":
        raw, weighted = (float(sinks[way]["[CLS]"][layer, head]) for way in ("attention", "value-norm"))
        ratio = float(sinks["norms"]["other"][layer, head] / sinks["norms"]["[CLS]"][layer, head])
        return right(
            f"Head ({layer}, {head}) gives [CLS] {raw:.0%} of its weight, but [CLS]'s ||v W^O|| is {ratio:.0f} times "
            f"smaller than a word's, so [CLS] makes up only {weighted:.0%} of what the head adds. Parking weight "
            "there is close to doing nothing: Clark et al.'s no-op, measured as Kobayashi et al. suggest."
        )
    hints = {
        "a": "What reaches a token is the weight times [CLS]'s value vector. How long is that vector (section 4)?",
        "c": "MiniLM's embedding is the mean over all tokens (lesson 15, section 2), not [CLS]; and section 1 "
        "measured what switching heads off costs.",
        "d": "A softmax row can put almost all of its weight on one key whose score is far above the others.",
    }
    return wrong(hints[letter])
