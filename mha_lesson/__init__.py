"""mha_lesson: multi-head attention derived step by step, as a small tested numpy library.

Layers, each importing only from those before it:
- this package's root: the numpy library (attention, heads, projections, multihead, cost, encoder, pretrained, ...);
- `lm/`: a small GPT trained on Shakespeare, built on the root only (import it as `mha_lesson.lm`);
- `demos/`: what exists to make one lesson's point; `aids/`: the concept map, flashcards and HTML export;
- `plots/` and `widgets/` on top; then `exercises/` and `bench/`.
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
