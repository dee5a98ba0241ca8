"""The glossary: one or two sentences per term and the lesson that teaches it.

`notebooks/glossary.ipynb` is generated from TERMS (`python -m mha_lesson.aids.glossary --write`; a test checks
the committed page equals what this module generates). A lesson links a term as
`[residual stream](glossary.ipynb#residual-stream)`: the anchor is the term's heading, which is the term itself in
lower case with spaces as hyphens (how JupyterLab and nbconvert name a heading's anchor).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
PAGE = NOTEBOOKS / "glossary.ipynb"


@dataclasses.dataclass(frozen=True)
class Term:
    """A glossary entry: the term (lower case: it is also the heading), its definition, the teaching lesson's stem."""

    term: str
    definition: str
    lesson: str

    @property
    def anchor(self) -> str:
        """The heading's anchor: the term with spaces as hyphens."""
        return self.term.replace(" ", "-")


T = Term
TERMS: tuple[Term, ...] = (
    T("adam", "An optimiser: gradient descent whose step for each weight is scaled by running averages of that "
      "weight's gradient and squared gradient, so every weight moves at a similar pace.", "13_training_heads"),
    T("attention sink", "A token (often the first one, or [SEP]) on which heads park weight they do not need: "
      "softmax weights must sum to 1, so a head with nothing to find has to put its weight somewhere.",
      "15_real_heads"),
    T("attention weights", "The softmax of one head's scores: row i says how much query i takes from each key. "
      "Every row is non-negative and sums to 1.", "04_scaled_dot_product_attention"),
    T("bigram", "A pair of adjacent tokens. A bigram statistic predicts the next token from the current one alone.",
      "14_circuits_and_induction_heads"),
    T("causal mask", "A boolean mask that lets query i attend only to keys 0..i, so a decoder cannot read ahead. "
      "`mha.causal_mask(n)` is True on and below the diagonal.", "07_causal_mask"),
    T("cls and sep", "Two special tokens that BERT-style tokenizers add: [CLS] at the start of every input and [SEP] "
      "at its end (and between two sentences).", "15_real_heads"),
    T("cross-attention", "Attention whose queries come from one sequence and whose keys and values come from "
      "another, as a translation decoder reads the source sentence. Its weights are n_q × n_kv.", "07_causal_mask"),
    T("cross-entropy", "The loss of a model that predicts a probability for each possible answer: minus the log of "
      "the probability it gave the right one, averaged. Measured in nats with the natural log.",
      "13_training_heads"),
    T("decoder", "The part of a Transformer that writes a sequence one token at a time, so its self-attention is "
      "causal: position i reads positions 0..i only.", "07_causal_mask"),
    T("encoder", "The part of a Transformer that reads a whole input at once with self-attention and no causal "
      "mask, as BERT and MiniLM do.", "07_causal_mask"),
    T("prefill", "The first pass of decoding: the whole prompt goes through the model at once and fills the KV cache; "
      "the tokens after it are then generated one at a time.", "17_attention_at_scale"),
    T("rmsnorm", "A layer norm without the mean: each vector is divided by the root of its mean square and scaled by "
      "a learned weight. Llama, Mistral and most recent models use it.", "18_positions_and_windows"),
    T("d_k", "The width of one head's queries, keys and values: d_model / h.", "02_why_split_heads"),
    T("d_model", "The width of the vectors a layer reads and writes: each token is d_model numbers.",
      "02_why_split_heads"),
    T("explorer", "A figure with sliders in a lesson: move a slider and the figure redraws.", "00_start_here"),
    T("flashattention", "A way to compute exact attention in tiles with an online softmax, never storing the "
      "n × n weights, so memory grows with n instead of n² (Dao et al. 2022).", "17_attention_at_scale"),
    T("flop", "One floating-point operation (an add or a multiply). A matrix product of (m, k) by (k, n) costs "
      "about 2·m·k·n FLOPs.", "02_why_split_heads"),
    T("glorot initialisation", "Random starting weights with variance 2 / (fan_in + fan_out), so a layer keeps "
      "the scale of its input and of its gradients (Glorot & Bengio 2010).", "03_projections"),
    T("grouped-query attention", "GQA: several query heads share one key/value head, which shrinks the KV cache "
      "by the group size. With one key/value head it is multi-query attention (MQA).", "17_attention_at_scale"),
    T("head", "One attention computation with its own W_i^Q, W_i^K and W_i^V, of width d_k. Multi-head attention "
      "runs h of them side by side and mixes their outputs with W^O.", "01_one_head_is_not_enough"),
    T("held-out", "Data kept out of training and used only to measure, so a score says how a model does on "
      "examples it has not seen.", "13_training_heads"),
    T("induction head", "A head that finds an earlier occurrence of the current token and copies the token that "
      "followed it: [A][B] … [A] → [B]. It needs two layers (one with smeared keys).",
      "14_circuits_and_induction_heads"),
    T("kv cache", "The keys and values of every token decoded so far, kept so each new token projects only itself. "
      "It grows by 2·layers·h_kv·d_k numbers per token.", "17_attention_at_scale"),
    T("layer norm", "Rescales each token's features to mean 0 and variance 1, then applies a learned scale and "
      "shift.", "12_connections"),
    T("logit", "An unnormalised score that a softmax turns into a probability.", "04_scaled_dot_product_attention"),
    T("multi-head latent attention", "MLA (DeepSeek-V2): each token caches one d_c-wide latent (plus a small "
      "RoPE key) from which every head's keys and values are projected, instead of the keys and values themselves.",
      "19_attention_today"),
    T("qk-norm", "RMSNorm applied to each head's queries and keys before their dot products, so the scores stay "
      "bounded whatever the scale of the weights.", "19_attention_today"),
    T("linear attention", "Attention without a softmax, computed causally with a fixed d_v × d_k state updated once "
      "per token, so its memory does not grow with the sequence.", "19_attention_today"),
    T("nats", "The unit of a loss computed with the natural logarithm; ln 2 ≈ 0.693 nats is one bit.",
      "13_training_heads"),
    T("normal equations", "The linear system XᵀX w = Xᵀy whose solution w is the least-squares fit of y by X.",
      "01_one_head_is_not_enough"),
    T("ov circuit", "W_i^V W_i^O, the d_model × d_model matrix that says what head i writes for the token it "
      "attends to.", "14_circuits_and_induction_heads"),
    T("padding mask", "A mask that hides the padding tokens added to make sequences of a batch the same length. "
      "`mha.padding_mask(lengths, n)`.", "07_causal_mask"),
    T("qk circuit", "W_i^Q W_i^Kᵀ, the d_model × d_model matrix whose bilinear form gives head i's scores.",
      "14_circuits_and_induction_heads"),
    T("query, key and value", "Three projections of each token: the query says what a token looks for, the key "
      "what it offers to be found by, the value what it passes on when found.", "03_projections"),
    T("read-out", "The final linear map from a model's last vectors to one score per possible output token.",
      "13_training_heads"),
    T("residual stream", "The running sum that flows through a Transformer: each layer reads it and adds its "
      "output back to it (x + layer(x)), so every layer's output stays visible to later layers.",
      "14_circuits_and_induction_heads"),
    T("rope", "Rotary position embedding: rotates each pair of query and key features by an angle proportional to "
      "the position, so scores depend on the offset between two tokens.", "18_positions_and_windows"),
    T("self-attention", "Attention whose queries, keys and values all come from the same sequence.",
      "07_causal_mask"),
    T("skip-trigram", "A pattern [A] … [B] → [C]: a token earlier in the context changes what follows the current "
      "one. One attention layer can implement such patterns.", "14_circuits_and_induction_heads"),
    T("softmax", "exp(x_j) / Σ_k exp(x_k): turns scores into positive weights that sum to 1, keeping their order.",
      "04_scaled_dot_product_attention"),
    T("transformerlens", "A Python library for mechanistic interpretability: it loads GPT-style models with hooks "
      "on every activation (Nanda and contributors).", "14_circuits_and_induction_heads"),
    T("w^o", "The output projection: a d_model × d_model matrix that mixes the concatenated heads back into one "
      "vector per token.", "06_output_projection"),
    T("warm-up", "The first training steps, in which the learning rate rises from near 0 to its full value, so "
      "early, noisy gradients do not throw the weights far.", "18_positions_and_windows"),
    T("word piece", "A piece of a word in a subword vocabulary: 'playing' may become 'play' + '##ing', so rare "
      "words need no vocabulary entry of their own.", "15_real_heads"),
)  # fmt: skip


def glossary_markdown(terms: tuple[Term, ...] = TERMS) -> str:
    """The glossary page as Markdown: a heading per term, its definition, a link to the teaching lesson."""
    lines = [
        "# Glossary",
        "",
        "Every term the lessons use without explaining it on the spot, in alphabetical order. Each entry names the "
        "lesson that teaches it. Back to the [start page](00_start_here.ipynb).",
    ]
    for t in sorted(terms, key=lambda t: t.term):
        link = f"[lesson {int(t.lesson[:2])}]({t.lesson}.ipynb)"
        lines += ["", f"### {t.term}", "", f"{t.definition} *Taught in* {link}."]
    return "\n".join(lines)


def check_terms(terms: tuple[Term, ...] = TERMS, folder: Path = NOTEBOOKS) -> None:
    """Raise ValueError for a term that is not lower case, repeated, or taught in a lesson that does not exist."""
    seen = set()
    for t in terms:
        if t.term != t.term.lower() or not re.fullmatch(r"[a-z0-9^_ ,-]+", t.term):
            raise ValueError(f"terms: expected a lower-case term of letters, digits and spaces, got {t.term!r}")
        if t.term in seen:
            raise ValueError(f"terms: expected unique terms, got {t.term!r} twice")
        seen.add(t.term)
        if not (folder / f"{t.lesson}.ipynb").exists():
            raise ValueError(f"terms: expected an existing lesson for {t.term!r}, got {t.lesson!r}")


def page_notebook(terms: tuple[Term, ...] = TERMS) -> dict:
    """The glossary notebook: one Markdown cell, a kernelspec so JupyterLab opens it without a dialog."""
    return {
        "cells": [
            {
                "cell_type": "markdown",
                "id": "glossary",
                "metadata": {},
                "source": glossary_markdown(terms).splitlines(keepends=True),
            }
        ],
        "metadata": {
            "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def page_text(terms: tuple[Term, ...] = TERMS) -> str:
    """The glossary notebook's file content, as nbformat writes it."""
    return json.dumps(page_notebook(terms), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Check the terms; with --write, regenerate notebooks/glossary.ipynb."""
    parser = argparse.ArgumentParser(prog="python -m mha_lesson.aids.glossary", description=main.__doc__)
    parser.add_argument("--write", action="store_true", help="rewrite notebooks/glossary.ipynb")
    args = parser.parse_args(argv)
    check_terms()
    if args.write:
        PAGE.write_text(page_text(), encoding="utf-8")
    print(f"{len(TERMS)} terms" + (f", written to {PAGE}" if args.write else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
