"""mha_lesson: multi-head attention derived step by step, as a small tested numpy library.

The root's modules, by group (import any of them as `mha_lesson.NAME`, e.g. `mha.attention`, `mha.kv_cache`):
- the derivation's steps and the layer: `cost` (why d_k = d_model / h, and what a layer costs), `projections`
  (W^Q, W^K, W^V, W^O), `heads` (split and merge), `attention` (scaled dot-product attention, softmax, masks),
  `multihead` (the whole layer, as a loop over heads and batched);
- around the layer: `embeddings`, `positional` and `rope` (where tokens sit), `encoder` (layer norm, feed-forward,
  residuals), `gradients` (the backward pass), `training` (tiny models trained in numpy), `circuits` (a head as
  two circuits, induction heads), `pretrained` (all-MiniLM-L6-v2 on this code);
- today's variants and attention at scale: `sinks`, `gates`, `norms` (QK-norm), `mla`, `linear_attention`,
  `differential`, `tiled` (the online softmax) and `kv_cache`;
- helpers: `display` (show_source), `measure` (peak memory), `_checks` and `_blas`.

Layers, each importing only from those before it:
- the root above, and two sub-packages of the library built on it: `lm/` (a small GPT trained on Shakespeare)
  and `head_analysis/` (what a trained model's heads do, one module per method);
- `demos/`: what exists to make one lesson's point; `aids/`: the lesson list, glossary, concept map,
  flashcards and HTML export;
- `plots/` and `widgets/` on top; then `exercises/`.
The benchmarks and the browser driver live outside the package, in the repository's `benchmarks/`.
"""

from . import cost, kv_cache, mla
from ._checks import DEFAULT_MAX_BYTES
from .attention import (
    causal_mask,
    padding_mask,
    receptive_field,
    scaled_dot_product_attention,
    sliding_window_mask,
    softmax,
)
from .differential import differential_attention
from .display import show_source
from .gates import gated_multi_head_attention
from .gradients import multi_head_attention_grads
from .heads import merge_heads, split_heads
from .kv_cache import KVCache
from .linear_attention import linear_attention
from .multihead import multi_head_attention, multi_head_attention_loop
from .norms import QKNorm, head_rms_norm, rms_norm
from .projections import MHAParams, init_params
from .rope import rope
from .sinks import attention_with_sink
from .tiled import tiled_attention

__all__ = [
    "DEFAULT_MAX_BYTES",
    "KVCache",
    "MHAParams",
    "QKNorm",
    "attention_with_sink",
    "causal_mask",
    "cost",
    "differential_attention",
    "gated_multi_head_attention",
    "head_rms_norm",
    "init_params",
    "kv_cache",
    "linear_attention",
    "merge_heads",
    "mla",
    "multi_head_attention",
    "multi_head_attention_grads",
    "multi_head_attention_loop",
    "padding_mask",
    "receptive_field",
    "rms_norm",
    "rope",
    "scaled_dot_product_attention",
    "show_source",
    "sliding_window_mask",
    "softmax",
    "split_heads",
    "tiled_attention",
]
