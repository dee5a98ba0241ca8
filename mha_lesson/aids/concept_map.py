"""The series as data: its lessons in reading order, and a concept map of multi-head attention.

One data structure feeds three things: the figure in lesson 00 (`mha_lesson.plots.concept_map`), the
lesson table printed under it, and the test that every node's lesson exists as a notebook. Node positions
are a hand-made portrait layout (the five derivation steps down the left edge, what they are built from to their
right, the layer below with how it is measured and inspected on its right and where it is used under it), so the
figure needs no graph-layout library.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..notation import html_scripts

# Where the notebooks live when the package is used from its checkout (as `make lab` does).
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

# Reading order: notebook stem -> title.
LESSONS: dict[str, str] = {
    "00_start_here": "Start here",
    "01_one_head_is_not_enough": "One head is not enough",
    "02_why_split_heads": "Why split into heads? Reducing the dimension per head",
    "03_projections": "Projecting into head subspaces",
    "04_scaled_dot_product_attention": "Scaled dot-product attention, one head at a time",
    "05_concatenate_heads": "Concatenate the heads",
    "06_output_projection": "The output projection $W^O$",
    "07_causal_mask": "The causal mask, padding and cross-attention",
    "08_forward_pass_by_hand": "A complete forward pass, by hand",
    "09_capstone": "Capstone: write multi-head attention",
    "10_parameters_and_complexity": "Parameters and complexity",
    "11_common_mistakes": "Common mistakes",
    "12_connections": "Connections",
    "13_training_heads": "Training heads from scratch",
    "14_circuits_and_induction_heads": "Circuits and induction heads",
    "15_real_heads": "Real heads: what heads track",
    "16_real_heads_matter": "Real heads: what heads matter",
    "17_attention_at_scale": "Attention at scale: long sequences, the KV cache and grouped queries",
    "18_positions_and_windows": "Positions, windows and layer order",
    "19_attention_today": "Attention in today's models",
    "20_your_own_language_model": "Your own language model",
    "21_review": "Review",
}

# Node groups, one per row of the layout: (legend text, face colour).
GROUPS: dict[str, tuple[str, str]] = {
    "ingredient": ("built from", "#dbe9f6"),
    "step": ("derivation step", "#fff2cc"),
    "core": ("the layer", "#f8cba0"),
    "analysis": ("measured and inspected", "#d9ead3"),
    "use": ("used in", "#e6dcf0"),
    "scale": ("at scale", "#f4cccc"),
}


@dataclasses.dataclass(frozen=True)
class Node:
    """One concept: figure label (may hold line breaks and mathtext), the lesson covering it, a one-line summary."""

    key: str
    label: str
    lesson: str
    description: str
    xy: tuple[float, float]  # box centre in map coordinates: x in [0, 10], y in [0, 12]
    group: str

    @property
    def lesson_number(self) -> str:
        """The two-digit number of the covering lesson, e.g. '03'."""
        return self.lesson[:2]


@dataclasses.dataclass(frozen=True)
class Edge:
    """A labelled arrow from one node to another; the label sits at fraction `at` along the arrow."""

    source: str
    target: str
    relation: str
    at: float = 0.5


NODES: tuple[Node, ...] = (
    # Right of the derivation's first three steps: what each is built from, and the question that starts the series.
    Node("several", "Why several\nheads", "01_one_head_is_not_enough",
         "One head takes one average per query, so it cannot make two lookups at once; two heads can.", (4.4, 9.6),
         "analysis"),
    Node("qkv", "Query-key-value\nintuition", "03_projections",
         "A query asks, keys advertise, values carry what is passed on.", (4.3, 11.55), "ingredient"),
    Node("linear", "Linear projections", "03_projections",
         "x @ W: every W^Q, W^K, W^V and W^O is one learned linear map.", (7.7, 10.9), "ingredient"),
    Node("sdpa", "Scaled dot-product\nattention", "04_scaled_dot_product_attention",
         "softmax(Q Kᵀ / √d_k) V: the mechanism inside every head.", (5.3, 8.1), "ingredient"),
    # Down the left edge: the derivation, one lesson per step.
    Node("project", "1  Project x\nto Q, K, V", "03_projections",
         "Q = x W^Q, K = x W^K, V = x W^V, each (n, d_model).", (1.1, 11.0), "step"),
    Node("split", "2  Split into $h$\nheads of $d_k$", "02_why_split_heads",
         "d_k = d_model / h: head i takes columns i·d_k to (i+1)·d_k of Q, K, V (why: lesson 2; code: lesson 6).",
         (1.1, 9.55), "step"),
    Node("attend", "3  Attend\nin each head", "04_scaled_dot_product_attention",
         "head_i = softmax(Q_i K_iᵀ / √d_k) V_i, one (n, n) weight matrix per head.", (1.1, 8.1), "step"),
    Node("concat", "4  Concatenate\nthe heads", "05_concatenate_heads",
         "[head_0 | ... | head_(h-1)]: shape (n, h·d_v), (n, d_model) when d_v = d_model / h.", (1.1, 6.65), "step"),
    Node("mix", "5  Mix the heads\nwith $W^O$", "06_output_projection",
         "Concat(head_0, ..., head_(h-1)) W^O = Σ_i head_i W_i^O.", (1.1, 5.2), "step"),
    # The layer itself, right of the last step, with how it is measured down the right edge.
    Node("mha", "Multi-head\nattention", "08_forward_pass_by_hand",
         "All five steps on four tokens, every number checked.", (4.6, 5.2), "core"),
    Node("params", "Parameter count", "10_parameters_and_complexity",
         "4·d_model² weights whatever h is (plus 4·d_model biases).", (8.7, 6.3), "analysis"),
    Node("complexity", "Complexity", "10_parameters_and_complexity",
         "FLOPs grow as n²·d_model (attention) plus n·d_model² (projections).", (8.8, 5.35), "analysis"),
    Node("mistakes", "Common mistakes", "11_common_mistakes",
         "Wrong reshape, wrong scale, flipped mask convention, and more.", (8.6, 4.45), "analysis"),
    # Between the question and the layer: it answers the question by training (heads that divide the lookups).
    Node("training", "Training\nheads", "13_training_heads",
         "Gradients by hand, step by step; trained heads divide two lookups, and one head cannot.", (2.9, 6.8),
         "analysis"),
    # Above right of the layer: what one head computes and what two layers of heads build; below right, real heads.
    Node("circuits", "QK and OV\ncircuits", "14_circuits_and_induction_heads",
         "W_QK = W_i^Q W_i^Kᵀ decides where head i looks, W_OV = W_i^V W_i^O what it writes: MHA = Σ_i A_i X W_OV.",
         (5.6, 6.75), "analysis"),
    Node("induction", "Induction heads", "14_circuits_and_induction_heads",
         "A previous-token head, then a head that attends to the token after the last occurrence of its own.",
         (8.8, 7.3), "analysis"),
    Node("vis", "Attention\nvisualisation", "15_real_heads",
         "A pretrained MiniLM's heads: maps, scores over a corpus, grammar and co-reference heads against baselines.",
         (7.3, 3.0), "analysis"),
    Node("roles", "Head roles,\ntested", "16_real_heads_matter",
         "Which heads matter: switched off one by one on a task; weights times value norms.",
         (8.0, 1.5), "analysis"),
    # Under the layer: where multi-head attention is used.
    Node("self", "Self-attention", "07_causal_mask",
         "Q, K and V all come from the same sequence.", (1.1, 3.5), "use"),
    Node("cross", "Cross-attention", "07_causal_mask",
         "Q from one sequence (the decoder), K and V from another (the encoder).", (1.2, 1.9), "use"),
    Node("encoder", "Transformer\nencoder layer", "12_connections",
         "MHA then a feed-forward network, each with a residual and LayerNorm.", (5.0, 0.55), "use"),
    Node("posenc", "Positional\nencoding", "12_connections",
         "Adds word order, which attention alone cannot see.", (8.9, 0.5), "use"),
    # At scale: next to what each one changes (lesson 17's beside the layer, 18 and 19 beside attention).
    Node("tiled", "Tiled attention\n(online softmax)", "17_attention_at_scale",
         "Exact attention key block by key block: memory n·block instead of n².", (6.0, 2.0), "scale"),
    Node("kvcache", "KV cache", "17_attention_at_scale",
         "Decoding keeps every token's K and V: 2·layers·n·h_kv·d_k numbers.", (9.3, 3.5), "scale"),
    Node("gqa", "GQA, MQA", "17_attention_at_scale",
         "h_kv < h key/value heads, each shared by a group of query heads.", (9.3, 2.1), "scale"),
    Node("today", "Today's\nvariants", "19_attention_today",
         "Sink logits, output gates, QK-norm, latent attention (MLA), local/global layers, linear heads.", (8.9, 9.7),
         "scale"),
    Node("gpt", "Your own\nlanguage model", "20_your_own_language_model",
         "A 4-layer GPT on Shakespeare in numpy: heads that read recent characters, spaces and word starts.",
         (2.6, 0.55), "use"),
    Node("rope", "RoPE", "18_positions_and_windows",
         "Positions as rotations of q and k: a score sees only the offset j − m.", (8.9, 8.5), "scale"),
)  # fmt: skip

EDGES: tuple[Edge, ...] = (
    Edge("several", "split", "leads to", at=0.45),
    Edge("several", "training", "shown by", at=0.3),
    Edge("training", "mha", "trains", at=0.45),
    Edge("qkv", "project", "motivates"),
    Edge("linear", "project", "give $W^Q, W^K, W^V$ to", at=0.3),
    Edge("sdpa", "attend", "runs in", at=0.72),
    Edge("project", "split", "then"),
    Edge("split", "attend", "then"),
    Edge("attend", "concat", "then"),
    Edge("concat", "mix", "then"),
    Edge("mix", "mha", "completes", at=0.45),
    Edge("mha", "params", "measured by"),
    Edge("mha", "complexity", "measured by"),
    Edge("mha", "mistakes", "pitfalls"),
    Edge("mha", "vis", "weights shown by", at=0.65),
    Edge("vis", "roles", "tested for", at=0.4),
    Edge("mha", "self", "used as", at=0.55),
    Edge("mha", "cross", "used as", at=0.55),
    Edge("mha", "encoder", "sub-layer of", at=0.55),
    Edge("posenc", "encoder", "added to its input"),
    Edge("mha", "circuits", "read through", at=0.6),
    Edge("circuits", "induction", "compose into"),
    Edge("mha", "tiled", "computed in blocks by", at=0.6),
    Edge("mha", "kvcache", "decodes with", at=0.45),
    Edge("gqa", "kvcache", "shrinks"),
    Edge("rope", "sdpa", "turns q, k for"),
    Edge("today", "sdpa", "change", at=0.55),
    Edge("mha", "gpt", "stacked into", at=0.45),
)


def check_map(nodes: tuple[Node, ...] = NODES, edges: tuple[Edge, ...] = EDGES) -> None:
    """Raise ValueError if keys repeat, an edge names an unknown node, or a node names an unknown lesson or group."""
    keys = [n.key for n in nodes]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise ValueError(f"nodes: expected unique keys, got repeats {repeated}")
    for n in nodes:
        if n.lesson not in LESSONS:
            raise ValueError(f"nodes: expected a lesson from LESSONS for node {n.key!r}, got {n.lesson!r}")
        if n.group not in GROUPS:
            raise ValueError(f"nodes: expected a group from {sorted(GROUPS)} for node {n.key!r}, got {n.group!r}")
    for e in edges:
        for end in (e.source, e.target):
            if end not in keys:
                raise ValueError(f"edges: expected node keys, got {end!r} in {e.source!r} -> {e.target!r}")
        if not 0.0 < e.at < 1.0:
            raise ValueError(f"edges: expected label position `at` in (0, 1), got {e.at} for {e.source!r}")


def lesson_link(stem: str) -> str:
    """Markdown link to a lesson notebook, relative to notebooks/: '[01 Why split into heads?](01_....ipynb)'."""
    if stem not in LESSONS:
        raise ValueError(f"stem: expected one of {list(LESSONS)}, got {stem!r}")
    return f"[{stem[:2]} {LESSONS[stem]}]({stem}.ipynb)"


def plain(label: str) -> str:
    """A node label as one line of plain text: line breaks become spaces, mathtext loses its $ and braces."""
    text = " ".join(label.split())
    for old, new in (("$", ""), ("_{model}", "_model"), ("{", ""), ("}", "")):
        text = text.replace(old, new)
    return text


def markdown_table(nodes: tuple[Node, ...] = NODES) -> str:
    """A Markdown table of the map's nodes in lesson order: concept, what it says, where it is covered (no raw ^)."""
    rows = ["| concept | in one line | lesson |", "| --- | --- | --- |"]
    for n in sorted(nodes, key=lambda n: (n.lesson, n.xy[0])):
        # Markdown shows maths: a label keeps its $W^O$ (MathJax), a description's W^Q becomes W<sup>Q</sup>
        cells = (" ".join(n.label.split()), html_scripts(n.description), lesson_link(n.lesson))
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")  # a bare | would end the cell
    return "\n".join(rows)
