"""Bad input, generated: every public function and method of the root library and of `lm`, and every public
widget constructor, one bad argument at a time.

Each function, and each public method bound to a small valid object, has one valid call (VALID). From its
signature the sweep swaps one argument at a time for bad values chosen by the argument's annotation and name (None,
strings, dicts, negative, fractional, boolean and huge sizes, malformed masks and flags; for every array: a 0-d
and an empty array, NaN, +inf and -inf inside, an integer, a boolean and a float16 array where floats are expected,
complex and object arrays, wrong ndim and a huge broadcast view). Every call
runs in a forked child under a memory cap (1 GiB above what the parent holds) and a time limit, and ends in one
of OUTCOMES. `python tests/bad_input_sweep.py` prints the counts; tests/test_bad_input_generated.py asserts.
"""

from __future__ import annotations

import importlib
import inspect
import math
import os
import pickle
import pkgutil
import re
import resource
import signal
import sys
import tempfile
from collections import Counter
from collections.abc import Callable

import numpy as np

from mha_lesson import (
    attention,
    circuits,
    cost,
    differential,
    display,
    embeddings,
    encoder,
    gates,
    gradients,
    head_analysis,
    heads,
    kv_cache,
    measure,
    mla,
    multihead,
    norms,
    positional,
    projections,
    sinks,
    tiled,
    training,
    widgets,
)
from mha_lesson import pretrained as pre
from mha_lesson.demos import circuits as demo_circuits
from mha_lesson.lm import corpus as lm_corpus
from mha_lesson.lm import model as lm_model
from mha_lesson.lm import train as lm_train

rope = importlib.import_module("mha_lesson.rope")  # the package's `rope` is the function
linear_attention = importlib.import_module("mha_lesson.linear_attention")  # so is its `linear_attention`

MODULES = (attention, heads, projections, multihead, cost, encoder, embeddings, positional, rope, tiled, circuits)
HEAD_ANALYSIS = (head_analysis.token_scores, head_analysis.syntax, head_analysis.vector_norms, head_analysis.pruning)
MODULES += (*HEAD_ANALYSIS, head_analysis.selection, training, gradients, pre, display, measure)
MODULES += (sinks, gates, norms, mla, linear_attention, differential, kv_cache)
MODULES += (lm_model, lm_corpus, lm_train)
WIDGET_MODULES = tuple(
    importlib.import_module(f"mha_lesson.widgets.{m.name}")
    for m in pkgutil.iter_modules(widgets.__path__)
    if not m.name.startswith("_")
)
OUTCOMES = (
    "a ValueError naming the argument",
    "the right answer for valid input",
    "a ValueError that names something else",
    "another exception type",
    "bad input accepted silently, or a non-finite result",
    "a hang, or more than 1 GiB",
)
NAMED, RIGHT, OTHER_NAME, OTHER_TYPE, SILENT, HANG = OUTCOMES
TIME_LIMIT = 30  # seconds per call: a widget built on two busy shared cores can take 10
MEMORY_CAP = 2**30  # bytes a call may allocate above what the parent already holds

P = projections.init_params(8, 2, bias=True, seed=0)
P0 = projections.init_params(8, 2, seed=0)  # no biases, for the circuits
X = np.random.default_rng(0).normal(size=(2, 5, 8))
Y = X[:, :4, :4]
A = attention.softmax(np.random.default_rng(1).normal(size=(2, 6, 6)))  # attention weights (2, 6, 6)
LAYER = encoder.init_encoder_layer(8, 2, seed=0)
FFN = LAYER.ffn
G = np.random.default_rng(2)
S = np.array([3.0, 2.0, 1.0])
ROWS = [{"relation": "det", "direction": "dependent->head", "layer": 0, "head": hi, "accuracy": 0.5} for hi in (0, 1)]
SIM = np.eye(4) + 0.1
SCORES = {k: np.full((2, 3), 0.3) for k in head_analysis.SCORES}
BASELINE = head_analysis.uniform_baseline([5, 6])
QKN = norms.QKNorm(q_weight=np.full(4, 0.9), k_weight=np.full(4, 1.1), eps=1e-6)
MLAP = mla.init_mla_params(8, 2, 4, 2, seed=0)
MLA_FIELDS = {f: getattr(MLAP, f) for f in ("w_dkv", "w_uk", "w_uv", "w_kr", "w_q", "w_qr", "w_o", "h")}
LM_C = lm_model.GPTConfig(vocab_size=7, n_layer=1, n_head=2, d_model=8, n_ctx=6)
LM_P = lm_model.init_params(LM_C)
LM_T = np.array([[1, 2, 3], [4, 5, 6]])
LM_TC = lm_train.TrainConfig()

# One valid call per public function: keyword arguments (a function here is a check, not a call).
VALID: dict[Callable, dict] = {
    attention.softmax: {"x": X, "axis": -1},
    attention.causal_mask: {"n": 4},
    attention.sliding_window_mask: {"n": 6, "window": 2},
    attention.receptive_field: {"mask": attention.causal_mask(4), "layers": 2},
    attention.padding_mask: {"lengths": [2, 3], "n": 4},
    attention.scaled_dot_product_attention: {"q": Y, "k": Y, "v": Y, "mask": None, "max_bytes": 2**20},
    heads.split_heads: {"x": X, "h": 2},
    heads.merge_heads: {"x": heads.split_heads(X, 2)},
    projections.MHAParams: {**P.arrays(), "h": 2, "h_kv": 2},
    projections.init_params: {"d_model": 8, "h": 2, "h_kv": 1, "bias": True, "seed": 1, "dtype": np.float32},
    multihead.multi_head_attention: {
        "q": X,
        "k": X,
        "v": X,
        "params": P,
        "mask": None,
        "need_weights": True,
        "max_bytes": 2**20,
        "qk_norm": QKN,
    },  # fmt: skip
    multihead.multi_head_attention_loop: {
        "q": X,
        "k": X,
        "v": X,
        "params": P,
        "mask": None,
        "return_trace": False,
        "max_bytes": 2**20,
    },  # fmt: skip
    cost.param_count: {"d_model": 8, "h": 2, "bias": True, "split": True, "h_kv": 1},
    cost.flop_count: {"n_q": 4, "n_kv": 5, "d_model": 8, "h": 2, "split": True},
    cost.attention_memory_bytes: {"n_q": 4, "n_kv": 4, "h": 2, "dtype": np.float32, "batch": 2},
    cost.kv_cache_bytes: {"layers": 2, "n": 4, "h_kv": 2, "d_k": 4, "dtype": np.float32, "batch": 1},
    encoder.gelu: {"x": X},
    encoder.layer_norm: {"x": X, "gamma": np.ones(8), "beta": np.zeros(8), "eps": 1e-5},
    encoder.FeedForwardParams: {"w_1": FFN.w_1, "b_1": FFN.b_1, "w_2": FFN.w_2, "b_2": FFN.b_2},
    encoder.feed_forward: {"x": X, "params": FFN},
    encoder.EncoderLayerParams: {
        "attn": LAYER.attn,
        "ffn": FFN,
        "ln1_gamma": np.ones(8),
        "ln1_beta": np.zeros(8),
        "ln2_gamma": np.ones(8),
        "ln2_beta": np.zeros(8),
        "eps": 1e-5,
    },  # fmt: skip
    encoder.init_encoder_layer: {"d_model": 8, "h": 2, "d_ff": 16, "seed": 0, "dtype": np.float64},
    encoder.encoder_layer: {"x": X, "params": LAYER, "mask": None, "need_weights": True, "norm": "pre"},
    embeddings.random_token_embeddings: {"tokens": ["a", "b", "a"], "d_model": 4, "seed": 0, "scale": 1.0},
    positional.sinusoidal_encoding: {"n": 5, "d_model": 8, "base": 100.0, "dtype": np.float64},
    rope.rope_angles: {"positions": np.arange(5), "d_k": 4, "base": 10000.0},
    rope.rope: {"x": X, "positions": np.arange(5), "base": 10000.0},
    tiled.tiled_attention: {"q": Y, "k": Y, "v": Y, "block": 2, "causal": True, "mask": None},
    circuits.qk_circuit: {"params": P, "i": 1},
    circuits.ov_circuit: {"params": P, "i": 1},
    circuits.circuit_attention: {"x": X, "params": P0, "mask": None},
    circuits.head_terms: {"x": X, "params": P0, "mask": None},
    circuits.mha_from_circuits: {"x": X, "params": P0, "mask": None},
    circuits.reparametrize: {"params": P, "i": 0, "qk": 2 * np.eye(4), "ov": 3 * np.eye(4)},
    circuits.circuit_singular_values: {"params": P, "i": 0, "kind": "ov"},
    circuits.effective_rank: {"s": S, "fraction": 0.9},
    circuits.participation_ratio: {"s": S},
    circuits.sharp_gain: {"max_len": 8},
    circuits.hand_built_induction: {"vocab_size": 5, "max_len": 8},
    circuits.repeated_sequence: {"rng": G, "vocab_size": 10, "k": 3, "n": 8},
    circuits.detection_score: {"attention": A, "pattern": np.eye(6, k=-1, dtype=bool), "all_rows": True},
    circuits.previous_token_pattern: {"n": 5},
    circuits.duplicate_token_pattern: {"tokens": [1, 2, 1], "causal": True},
    circuits.induction_pattern: {"tokens": [1, 2, 1, 2], "causal": False},
    circuits.repeat_pattern: {"n": 8, "k": 3, "back": 2, "start": 1},
    circuits.previous_token_score: {"attention": A, "all_rows": False},
    circuits.duplicate_token_score: {"attention": A, "k": 2, "start": 1, "all_rows": False},
    circuits.induction_score: {"attention": A, "k": 2, "start": 0, "all_rows": True},
    head_analysis.previous_token: {"w": A},
    head_analysis.next_token: {"w": A},
    head_analysis.same_token: {"w": A},
    head_analysis.first_token: {"w": A},
    head_analysis.last_token: {"w": A},
    head_analysis.entropy: {"w": A},
    head_analysis.corpus_scores: {"weights": [A, A[..., :4, :4]]},
    head_analysis.uniform_baseline: {"lengths": [5, 6]},
    head_analysis.heads_above: {"score": np.eye(2), "threshold": 0.5},
    head_analysis.compare_with_clark: {"scores": SCORES, "baseline": BASELINE, "threshold": 0.5, "little": 0.25},
    head_analysis.word_groups: {"word_ids": [None, 0, 0, 1, None]},
    head_analysis.word_attention: {
        "weights": A[..., :5, :5] / A[..., :5, :5].sum(-1, keepdims=True),
        "word_ids": [None, 0, 0, 1, None],
    },  # fmt: skip
    head_analysis.most_attended: {"word_weights": A, "candidates": np.array([0, 1, 1, 0, 1, 0], bool)},
    head_analysis.relation_accuracy: {"predicted": [np.array([1, 2, 0])], "arcs": [[(0, 1), (1, 2)]]},
    head_analysis.offset_baseline: {"candidates": [np.ones(4, bool)], "arcs": [[(0, 1)]], "offsets": (-1, 1)},
    head_analysis.best_heads: {"rows": ROWS},
    head_analysis.relation_grid: {"rows": ROWS, "relation": "det", "direction": "dependent->head"},
    head_analysis.value_norms: {"x": X, "params": P},
    head_analysis.norm_weighted: {"weights": A, "norms": np.ones((2, 6))},
    head_analysis.retrieval_accuracy: {"similarity": SIM, "partner": np.array([1, 0, 3, 2])},
    head_analysis.retrieval_margin: {"similarity": SIM, "partner": np.array([1, 0, 3, 2])},
    head_analysis.head_outputs: {"x": X, "params": P, "mask": None},
    head_analysis.ablate_heads: {"params": P, "heads": [1], "means": np.ones((2, 4))},
    head_analysis.prune_order: {"importance": {"accuracy_drop": np.eye(2), "margin_drop": np.eye(2)}},
    head_analysis.load_paraphrases: {"path": None},
    training.make_batch: {"task": "induction", "rng": G, "batch": 2, "n": 10, "vocab": 5},
    training.cross_entropy: {"logits": X, "targets": np.ones((2, 5), int), "weights": np.ones((2, 5))},
    training.check_config: {"task": "two_lookups", "h": 2, "seed": 0, "layers": 1, "sizes": {"steps": 2}},
    training.Adam: {"params": np.zeros(3), "lr": 0.1},
    gradients.multi_head_attention_grads: {"q": X, "k": X, "v": X, "params": P, "grad_output": X, "mask": None},
    pre.mean_pool: {"hidden": X, "lengths": np.array([3, 5])},
    pre.l2_normalize: {"x": X[0]},
    pre.describe_ablation: {"cosine": 1 - np.eye(3), "reference": 0.5, "reference_name": "gap", "small": 0.01},
    display.show_source: {"obj": attention.causal_mask},
    sinks.attention_with_sink: {
        "q": Y,
        "k": Y,
        "v": Y,
        "sink": np.array([[[0.5]], [[-0.5]]]),
        "mask": None,
        "max_bytes": 2**20,
    },  # fmt: skip
    gates.sigmoid: {"x": X},
    gates.gated_multi_head_attention: {
        "q": X,
        "k": X,
        "v": X,
        "params": P,
        "w_gate": np.eye(8),
        "b_gate": np.full(8, 0.1),
        "mask": None,
        "max_bytes": 2**20,
        "qk_norm": QKN,
    },  # fmt: skip
    norms.rms_norm: {"x": X, "weight": np.full(8, 0.5), "eps": 1e-6},
    norms.QKNorm: {"q_weight": np.full(4, 0.9), "k_weight": np.full(4, 1.1), "eps": 1e-6},
    norms.head_rms_norm: {"x": X, "h": 2, "weight": np.full(4, 0.5), "eps": 1e-6},
    mla.MLAParams: {**MLA_FIELDS, "latent_norm": np.full(4, 0.5), "rope_base": 10000.0},
    mla.init_mla_params: {"d_model": 8, "h": 2, "d_c": 4, "d_rope": 2, "seed": 0},
    mla.mla_attention: {"x": X, "params": MLAP, "mask": None, "absorb": True},
    mla.MLACache: {},
    mla.mla_decode_step: {"x_t": X[0, 0], "params": MLAP, "cache": mla.MLACache()},
    linear_attention.linear_attention: {
        "q": Y,
        "k": Y / np.linalg.norm(Y, axis=-1, keepdims=True),
        "v": Y,
        "beta": np.full((2, 4), 0.5),
        "decay": np.full((2, 4), 0.9),
        "chunk": 2,
    },  # fmt: skip
    differential.differential_attention: {
        "q1": Y,
        "k1": Y,
        "q2": Y[::-1],
        "k2": Y[::-1],
        "v": Y,
        "lam": 0.5,
        "mask": None,
    },
    kv_cache.KVCache: {"window": 4, "sinks": 1},
    kv_cache.decode_step: {"x_t": X[0, 0], "params": P, "cache": kv_cache.KVCache()},
    lm_model.GPTConfig: {"vocab_size": 7, "n_layer": 1, "n_head": 2, "d_model": 8, "n_ctx": 6, "d_ff": 12},
    lm_model.param_shapes: {"config": LM_C},
    lm_model.init_params: {"config": LM_C, "seed": 1},
    lm_model.n_params: {"params": LM_P},
    lm_model.check_params: {"params": LM_P, "config": LM_C},
    lm_model.logits: {"params": LM_P, "config": LM_C, "tokens": LM_T},
    lm_model.loss_and_grads: {"params": LM_P, "config": LM_C, "tokens": LM_T, "targets": LM_T},
    lm_model.attention_weights: {"params": LM_P, "config": LM_C, "tokens": LM_T},
    lm_model.ablate_heads: {"params": LM_P, "config": LM_C, "heads": [(0, 1)]},
    lm_model.generate: {
        "params": LM_P,
        "config": LM_C,
        "prompt_ids": np.array([1, 2]),
        "n_new": 3,
        "temperature": 0.5,
        "top_k": 2,
        "seed": 0,
    },
    lm_corpus.Vocab: {"chars": "abc"},
    lm_corpus.build_text: {"works": ["a", "b"]},
    lm_corpus.split: {"ids": np.arange(20), "val_fraction": 0.1},
    lm_corpus.load: {"val_fraction": 0.1},
    lm_corpus.load_text: {"path": lm_corpus.CORPUS},
    lm_train.TrainConfig: {
        "steps": 10,
        "batch": 2,
        "lr": 1e-3,
        "min_lr": 1e-4,
        "warmup": 2,
        "beta1": 0.9,
        "beta2": 0.99,
        "eps": 1e-8,
        "weight_decay": 0.1,
        "clip": 1.0,
        "seed": 0,
        "eval_every": 5,
        "eval_batches": 2,
    },
    lm_train.lr_at: {"step": 3, "tc": LM_TC},
    lm_train.AdamW: {"params": {"w": np.ones((2, 2))}, "tc": LM_TC},
    lm_train.get_batch: {"ids": np.arange(20), "batch": 2, "n_ctx": 4, "rng": G},
}
# Public methods, bound to small valid objects. Every call runs in a forked child, so an append or a step changes
# the child's copy only: each call starts from the same state (a cache holding one token, a fresh optimiser).
KV = kv_cache.KVCache()
KV.append(np.full((2, 4), 0.5), np.full((2, 4), 0.25))
MLAC = mla.MLACache()
MLAC.append(np.full(4, 0.5), np.full(2, 0.25))
INDUCTION = circuits.hand_built_induction(5, 8)
ADAM = training.Adam(np.zeros(3), 0.1)
TRAINER = training.Trainer("two_lookups", h=2, steps=1, batch=2)
TOKENS = np.array([1, 2, 1, 2])
LM_VOCAB = lm_corpus.Vocab("abc")
LM_ADAMW = lm_train.AdamW({"w": np.ones((2, 2))}, LM_TC)
VALID |= {
    P.w_q_head: {"i": 1},
    P.w_k_head: {"i": 1},
    P.w_v_head: {"i": 0},
    P.w_o_head: {"i": 1},
    P.b_head: {"name": "b_k", "i": 1},
    P.arrays: {},
    P.astype: {"dtype": np.float32},
    P.without_heads: {"heads": [1]},
    LAYER.without_heads: {"heads": [0]},
    INDUCTION.residuals: {"tokens": TOKENS},
    INDUCTION.logits: {"tokens": TOKENS},
    INDUCTION.predict: {"tokens": TOKENS},
    INDUCTION.attention: {"tokens": TOKENS},
    ADAM.step: {"grad": np.full(3, 0.5)},
    KV.append: {"k_t": np.full((2, 4), 0.5), "v_t": np.full((2, 4), 0.25)},
    MLAC.append: {"c_t": np.full(4, 0.5), "k_r_t": np.full(2, 0.25)},
    TRAINER.step: {},
    TRAINER.evaluate: {},
    TRAINER.readout_accuracy: {},
    TRAINER.attention: {"tokens": np.arange(16)},
    TRAINER.checkpoint: {},
    LM_VOCAB.encode: {"text": "abca", "name": "text"},
    LM_VOCAB.decode: {"ids": np.array([0, 1, 2])},
    LM_ADAMW.step: {"grads": {"w": np.full((2, 2), 0.5)}, "lr": 1e-3},
}
# The backward pass, the trainer and the MiniLM analyses: small valid objects, built once in the parent.
_, CACHE = gradients.forward(X, X, X, P, None)
T_MODEL = training.init_model("two_lookups", 2, 1, 8, 6, 5, np.random.default_rng(0))
T_TOKENS = np.array([[0, 1, 2, 3, 4, 0], [4, 3, 2, 1, 0, 1]])
MINILM = pre.load_minilm()
SENTENCES = head_analysis.load_relations()
COREF = [s for s in SENTENCES if s.arcs["coref"]][:2]
TWO = [*COREF, *(s for s in SENTENCES if s.arcs["det"])][:3]
MAPS = head_analysis.word_maps(MINILM, TWO)
TEXTS = ["The cat sat.", "A dog ran home."]
IDS, LENGTHS, _ = MINILM.tokenize(TEXTS)
PAIRS = [(p.sentence, p.paraphrase) for p in head_analysis.load_paraphrases()[:3]]
LM_TC2 = lm_train.TrainConfig(steps=2, batch=2, warmup=1, eval_every=1, eval_batches=1)
LM_IDS = np.arange(40) % 7
LM_VOCAB7 = lm_corpus.Vocab("abcdefg")
LM_TRAINER = lm_train.Trainer(LM_C, LM_TC2, LM_IDS, LM_IDS[::-1].copy(), LM_VOCAB7)
SCRATCH = tempfile.mkdtemp(prefix="bad_input_sweep_")
CHECKPOINT = os.path.join(SCRATCH, "trained.npz")
lm_train.save_checkpoint(CHECKPOINT, LM_TRAINER)
VALID |= {
    gradients.forward: {"q": X, "k": X, "v": X, "params": P, "mask": None, "check": True},
    gradients.backward: {"cache": CACHE, "grad_output": X, "params": P, "check": True},
    tiled.rescale: {
        "row_sum": np.full((2, 4, 1), 2.0),
        "out": Y,
        "m_old": np.zeros((2, 4, 1)),
        "m_new": np.ones((2, 4, 1)),
    },  # fmt: skip
    training.init_model: {"task": "two_lookups", "h": 2, "layers": 1, "d_model": 8, "n": 6, "vocab": 5, "rng": G},
    training.forward: {"model": T_MODEL, "tokens": T_TOKENS},
    training.Trainer: {"task": "two_lookups", "h": 2, "seed": 0, "layers": 1, "steps": 2, "batch": 2},
    training.train: {
        "task": "two_lookups",
        "h": 2,
        "seed": 0,
        "layers": 1,
        "callback": None,
        "checkpoints": (0, 1),
        "steps": 2,
        "batch": 2,
    },  # fmt: skip
    head_analysis.word_maps: {"model": MINILM, "sentences": TWO},
    head_analysis.relation_table: {"model": MINILM, "sentences": TWO, "directions": ("dependent->head",), "maps": MAPS},
    head_analysis.antecedent_baselines: {"sentences": COREF},
    head_analysis.sink_scores: {"model": MINILM, "sentences": TEXTS},
    head_analysis.load_relations: {"path": None},
    head_analysis.ablated_model: {"model": MINILM, "heads": [(0, 1)], "means": None},
    head_analysis.head_importance: {"model": MINILM, "pairs": PAIRS, "mode": "zero", "heads": None},
    head_analysis.prune_curve: {
        "model": MINILM,
        "pairs": PAIRS,
        "mode": "mean",
        "order": [(li, hi) for li in range(6) for hi in range(12)],
        "counts": [0, 3],
    },  # fmt: skip
    head_analysis.pruning_reference: {},
    head_analysis.wilson_interval: {"hits": 3, "n": 10, "z": 1.96},
    head_analysis.arc_hits: {"maps": MAPS, "sentences": TWO, "relation": "det"},
    head_analysis.held_out_selection: {"maps": MAPS, "sentences": TWO, "relation": "det", "seed": 0, "n_boot": 20},
    measure.peak_bytes: {"fn": attention.causal_mask, "n": 4},
    pre.load_minilm: {"dtype": np.float32},
    pre.head_ablation: {"model": MINILM, "sentences": TEXTS[:1]},
    pre.model_dir: {},
    pre.torch_reference: {},
    pre.corpus: {},
    MINILM.tokenize: {"sentences": TEXTS},
    MINILM.word_ids: {"sentences": TEXTS},
    MINILM.embed: {"ids": IDS},
    MINILM.hidden_states: {"ids": IDS, "lengths": LENGTHS, "need_weights": True},
    MINILM.encode: {"sentences": TEXTS, "batch_size": 1},
    MINILM.attentions: {"text": TEXTS[0]},
    MINILM.attentions_many: {"texts": TEXTS},
    MINILM.without_heads: {"heads": [(0, 1)]},
    lm_train.Trainer: {"config": LM_C, "tc": LM_TC2, "train_ids": LM_IDS, "val_ids": LM_IDS, "vocab": LM_VOCAB7},
    LM_TRAINER.step: {},
    LM_TRAINER.evaluate: {},
    LM_TRAINER.make_batch: {},
    lm_train.save_checkpoint: {"path": CHECKPOINT, "trainer": LM_TRAINER},
    lm_train.load_checkpoint: {"checkpoint": CHECKPOINT},
}


def widget_constructors() -> list[type]:
    """Every public class of the widget modules: the explorers, the quiz and the setup check."""
    return [
        obj
        for mod in WIDGET_MODULES
        for name, obj in vars(mod).items()
        if not name.startswith("_") and inspect.isclass(obj) and obj.__module__ == mod.__name__
    ]


def defaults(cls: type) -> dict | None:
    """cls's keyword defaults as its valid call (what the lessons open it with), or None when one is required."""
    params = [
        p for n, p in inspect.signature(cls).parameters.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    ]
    if any(p.default is p.empty for p in params):
        return None
    return {p.name: p.default for p in params}


WIDGET_RECORDS = [cls for cls in widget_constructors() if defaults(cls) is None]
VALID |= {cls: defaults(cls) for cls in widget_constructors() if cls not in WIDGET_RECORDS}
# Public functions and methods the sweep leaves out, and why.
LEFT_OUT = {
    "unchecked, as its docstring says": [
        attention.attend, multihead.kv_heads, multihead.attention_heads, training.loss_and_grads,
        gradients.masked_softmax, gradients.row_sums,
        gradients.projection_backward, gradients.concat_backward, gradients.weighted_sum_backward,
        gradients.softmax_backward, gradients.scores_backward, gradients.scale_backward,
        gradients.shared_heads_backward, lm_model.attn_params, lm_model.layer_norm, lm_model.layer_norm_backward,
        lm_model.gelu, lm_model.gelu_backward, lm_model.cross_entropy,
    ],
    "checks for other functions (their callers' calls cover them)": [
        attention.check_qkv, multihead.check_qk_norm, lm_model.check_tokens, projections.MHAParams.head_indices,
        pre.MiniLM.layer_heads, head_analysis.syntax.check_sentences, head_analysis.syntax.check_maps,
    ],
    "runs as long as asked, steps=10**9 being 10**9 steps (tests/test_training, test_lm)": [
        training.Trainer.run, lm_train.Trainer.run,
    ],
    "formats a trainer's own counters for display (tests/test_lm's CLI run)": [lm_train.progress_line],
    "runs all 144 single-head ablations twice, minutes (its pieces head_importance, prune_order and prune_curve "
    "are swept)": [head_analysis.pruning_results],
    "records (dataclasses without checks of their own, built by the functions that return them)": [
        head_analysis.Annotated, head_analysis.Paraphrase, training.Batch, training.Model, training.Checkpoint,
        training.TrainResult, gradients.Cache, pre.ModelNotInstalledError, pre.MiniLM, circuits.InductionModel,
        *WIDGET_RECORDS,
    ],
}  # fmt: skip
# Arguments the sweep leaves alone: a huge value there is a valid request for a long run, not bad input.
NOT_SWEPT = {(training.train, "steps"), (training.Trainer, "steps")}
# Valid calls that allocate between the sweep's 1 GiB cap and the library's 4 GiB max_bytes rule: (fn, arg, label).
WITHIN_MAX_BYTES = {(attention.padding_mask, "n", "huge")}
demo_circuits.trained_runs()  # CheckpointExplorer's two training runs, once here rather than in every child


def public_methods() -> list[Callable]:
    """Every public method (properties aside) of the classes among public_functions(), as plain functions."""
    return [
        obj
        for cls in public_functions()
        if inspect.isclass(cls)
        for name, obj in vars(cls).items()
        if not name.startswith("_") and inspect.isfunction(obj)
    ]


def public_functions() -> list[Callable]:
    """Every public function and class defined in MODULES."""
    return [
        obj
        for mod in MODULES
        for name, obj in vars(mod).items()
        if not name.startswith("_")
        and (inspect.isfunction(obj) or inspect.isclass(obj))
        and obj.__module__ == mod.__name__
    ]


NUMBERS_ARE_VALID = {"axis", "threshold", "little", "offsets", "off", "offset"}  # negative or zero is fine here
FREE_TEXT = {"reference_name", "text", "path"}  # any string is valid text, or a file name (written in SCRATCH)
# -inf is valid here: a masked score for softmax, the running max before any key for rescale.
NEG_INF_VALID = {("softmax", "x"), ("rescale", "m_old")}


def bad_values(fn: Callable, name: str, valid: object) -> list[tuple[str, object, bool]]:
    """(label, value, must_refuse) for argument `name` of fn, chosen by its annotation and valid value."""
    param = inspect.signature(fn).parameters.get(name)  # None for a **sizes override
    annotation = "" if param is None else str(param.annotation)
    optional = "None" in annotation
    common = [("a dict", {}, not isinstance(valid, dict))] + ([] if optional else [("None", None, True)])
    if name == "max_bytes":
        return common + [("NaN", math.nan, True), ("negative", -1, True), ("zero", 0, True), ("a string", "1", True)]
    if name == "dtype":
        # Integer and complex dtypes are fine for the byte counts in cost, and refused where weights are drawn.
        return (
            common
            + [("dtype 'nonsense'", "nonsense", True)]
            + [(f"dtype {d}", d, False) for d in (np.int32, np.complex128)]
        )
    if name == "rng":
        return common + [("an int", 0, True), ("a RandomState", np.random.RandomState(0), True)]
    if isinstance(valid, (bool, np.bool_)):
        return common + [("'no'", "no", True), ("2", 2, True), ("a 2-element array", np.array([True, False]), True)]
    if isinstance(valid, str):
        return common + [("an int", 5, True), ("nonsense", "nonsense", name not in FREE_TEXT), ("bytes", b"x", True)]
    if isinstance(valid, (int, np.integer)):
        free = name in NUMBERS_ARE_VALID
        return common + [
            ("a string", str(valid), True), ("fractional", valid + 0.5, True), ("True", True, True),
            ("NaN", math.nan, True), ("negative", -1, not free), ("zero", 0, False), ("huge", 10**9, False),
            ("10**18", 10**18, False),
        ]  # fmt: skip
    if isinstance(valid, float):
        return common + [
            ("a string", "1", True), ("NaN", math.nan, True), ("inf", math.inf, True), ("True", True, True),
            ("complex", 1j, True), ("negative", -1.0, False), ("zero", 0.0, False),
        ]  # fmt: skip
    if isinstance(valid, np.ndarray) or name in ("mask", "lengths", "tokens", "positions"):
        return common + array_values(fn, name, valid)
    if isinstance(valid, dict) and valid and all(isinstance(v, np.ndarray) for v in valid.values()):
        return common + dict_values(valid)
    if isinstance(valid, (list, tuple)) and valid and all(isinstance(v, np.ndarray) for v in valid):
        return common + list_values(valid)
    return common + [("a string", "abc", True), ("an int", 3, True), ("an empty list", [], False)]


NON_FINITE = (("NaN", np.nan), ("+inf", np.inf), ("-inf", -np.inf))
HUGE_BYTES = 2**33  # a broadcast view this big holds one row in memory, but anything computed from it would not fit


def huge_view(a: np.ndarray) -> np.ndarray:
    """a broadcast (a view, no copy) along a new leading axis to HUGE_BYTES: a batch that would not fit."""
    return np.broadcast_to(a, (-(-HUGE_BYTES // max(a.nbytes, 1)), *a.shape))


def with_entry(a: np.ndarray, value: float) -> np.ndarray:
    """A float copy of a with its first entry set to value (NaN, +inf, -inf)."""
    b = a.astype(np.result_type(a.dtype, np.float64) if not np.issubdtype(a.dtype, np.floating) else a.dtype)
    b.flat[0] = value
    return b


def array_values(fn: Callable, name: str, valid: object) -> list[tuple[str, object, bool]]:
    """Bad arrays: non-numbers, NaN and +-inf, the wrong dtype (int, bool, float16, complex, object), wrong ndim,
    0-d and zero size, and a huge broadcast view."""
    a = np.asarray(valid) if valid is not None else np.ones((2, 5, 5), bool)
    out = [("a string", "abc", True), ("an object array", np.array([object()] * 3), True)]
    out += [("0-D", np.float64(1.0), False), ("zero size", a[..., :0], False), ("extra dim", a[None], False)]
    if a.size and a.dtype.kind in "biuf":
        out.append(("a huge broadcast view", huge_view(a), False))
    if name == "mask" or a.dtype == np.bool_:
        return out + [("a float mask", a.astype(float), True), ("an int mask", a.astype(int), True),
                      ("a wrong shape", np.ones((3, 7), bool), True), ("'yes'", "yes", True)]  # fmt: skip
    if np.issubdtype(a.dtype, np.floating) and a.size:
        out += [(label, with_entry(a, value), label != "-inf" or (fn.__name__, name) not in NEG_INF_VALID)
                for label, value in NON_FINITE]  # fmt: skip
        out += [("complex", a + 1j, True), ("a bool array", a > a.flat[0], True)]
        out += [("an int array", np.rint(a).astype(np.int64), False), ("float16", a.astype(np.float16), False)]
    if np.issubdtype(a.dtype, np.integer) and a.size:
        out += [("negative ids", -a - 1, False), ("a bool array", a > a.flat[0], True)]
        out += [(label, with_entry(a, value), True) for label, value in NON_FINITE[:2]]
    return out


def dict_values(valid: dict) -> list[tuple[str, object, bool]]:
    """A dict of arrays (parameters, gradients, importances) with one entry made bad: None, NaN, +-inf, empty."""
    key = next(iter(valid))
    out = [("None inside", {**valid, key: None}, True), ("empty inside", {**valid, key: valid[key][..., :0]}, False)]
    if valid[key].dtype.kind in "biuf" and valid[key].size:
        out += [(f"{label} inside", {**valid, key: with_entry(valid[key], v)}, True) for label, v in NON_FINITE]
    return out


def list_values(valid: list | tuple) -> list[tuple[str, object, bool]]:
    """A list of arrays (weights per sentence, predictions) with the first one made bad: None, NaN, 0-d, empty."""
    first, rest = valid[0], list(valid[1:])
    out = [("None inside", [None, *rest], True), ("0-D inside", [np.float64(1.0), *rest], False)]
    out += [("empty inside", [first[..., :0], *rest], False)]
    if first.dtype.kind == "f" and first.size:
        out += [(f"{label} inside", [with_entry(first, v), *rest], True) for label, v in NON_FINITE]
    return out


def finite(result: object) -> bool:
    """True when every float array or number in result (nested in tuples, lists, dicts) is finite."""
    if isinstance(result, dict):
        return all(finite(v) for v in result.values())
    if isinstance(result, (tuple, list)):
        return all(finite(v) for v in result)
    if isinstance(result, (np.ndarray, float, np.floating)):
        r = np.asarray(result)
        return not np.issubdtype(r.dtype, np.inexact) or bool(np.isfinite(r).all())
    return True


def nan_documented(fn: Callable) -> bool:
    """The docstring says NaN in gives NaN out: then NaN through is the documented answer."""
    return "NaN in gives NaN out" in (fn.__doc__ or "")


def classify(fn: Callable, kwargs: dict, name: str | None, label: str, must_refuse: bool) -> str:
    """Call fn(**kwargs) and sort what happened into OUTCOMES (in the forked child)."""
    try:
        result = fn(**kwargs)
    except MemoryError:
        return HANG
    except (ValueError, TypeError) as exc:
        if name is None:
            return OTHER_TYPE
        named = re.search(rf"(^|[^\w]){re.escape(name)}([^\w]|$)", str(exc))
        if named:
            return NAMED
        return OTHER_NAME if isinstance(exc, ValueError) else OTHER_TYPE
    except Exception:
        return OTHER_TYPE
    if label.split()[0] in ("NaN", "+inf", "-inf", "inf") and nan_documented(fn):
        return RIGHT
    return SILENT if must_refuse or not finite(result) else RIGHT


def run_forked(fn: Callable, kwargs: dict, name: str | None, label: str, must_refuse: bool) -> str:
    """classify() in a forked child with a memory cap and a time limit; a child killed or too slow is HANG."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read)
        outcome = HANG
        try:
            with open("/proc/self/statm") as f:
                held = int(f.read().split()[0]) * resource.getpagesize()
            resource.setrlimit(resource.RLIMIT_AS, (held + MEMORY_CAP, resource.RLIM_INFINITY))
            signal.alarm(TIME_LIMIT)  # the default action ends the child: a hang
            os.chdir(SCRATCH)  # a file name swept as a path is written there, not in the repository
            outcome = classify(fn, kwargs, name, label, must_refuse)
        finally:
            os.write(write, pickle.dumps(outcome))
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return pickle.loads(data) if data else HANG


def cases() -> list[tuple[Callable, str | None, str, object, bool]]:
    """(fn, argument, label, value, must_refuse): each valid call (argument None) then one bad argument at a time."""
    out = []
    for fn, valid in VALID.items():
        out.append((fn, None, "valid", None, False))
        for name, value in valid.items():
            if (fn, name) in NOT_SWEPT:
                continue
            out += [
                (fn, name, label, bad, refuse)
                for label, bad, refuse in bad_values(fn, name, value)
                if (fn, name, label) not in WITHIN_MAX_BYTES
            ]
    return out


def call(case: tuple) -> str:
    """The outcome of one case."""
    fn, name, label, value, must_refuse = case
    kwargs = dict(VALID[fn])
    if name is not None:
        kwargs[name] = value
    return run_forked(fn, kwargs, name, label, must_refuse)


def label(fn: Callable) -> str:
    return f"{fn.__module__.removeprefix('mha_lesson.')}.{fn.__qualname__}"


def main() -> None:
    """Print the counts per outcome; -v lists every case not named or right; -k TEXT sweeps the labels holding TEXT."""
    only = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else ""
    counts, bad = Counter(), []
    for case in cases():
        if only not in label(case[0]):
            continue
        outcome = call(case)
        counts[outcome] += 1
        if outcome not in (NAMED, RIGHT):
            bad.append(f"{outcome}: {label(case[0])}({case[1]}={case[2]})")
    if "-v" in sys.argv:
        print("\n".join(bad))
    print("| outcome | calls |\n|---|---|")
    for outcome in OUTCOMES:
        print(f"| {outcome} | {counts[outcome]} |")
    print(f"| total | {sum(counts.values())} |")


if __name__ == "__main__":
    main()
