"""mha_lesson: multi-head attention derived step by step, as a small tested numpy library.

The core (attention, heads, projections, multihead, cost) is pure numpy. Plots and widgets live in
their own modules on top of it and are imported only when a lesson asks for them.
"""

from . import cost
from ._checks import DEFAULT_MAX_BYTES
from .attention import causal_mask, padding_mask, scaled_dot_product_attention, softmax
from .display import show_source
from .heads import merge_heads, split_heads
from .multihead import multi_head_attention, multi_head_attention_loop
from .projections import MHAParams, init_params

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MHAParams",
    "causal_mask",
    "cost",
    "init_params",
    "merge_heads",
    "multi_head_attention",
    "multi_head_attention_loop",
    "padding_mask",
    "scaled_dot_product_attention",
    "show_source",
    "softmax",
    "split_heads",
]
