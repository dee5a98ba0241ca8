"""A small GPT trained on Shakespeare in numpy (issue 25): the model, its corpus, a trainer and a sampler.

`python -m mha_lesson.lm train` trains one and `python -m mha_lesson.lm sample` samples from a checkpoint.
Built on the root library only: the attention forward and backward are mha_lesson.gradients', and decoding
uses mha_lesson.kv_cache.
"""

from .corpus import Vocab, load, load_text, split
from .model import (
    GPTConfig,
    ablate_heads,
    attention_weights,
    generate,
    init_params,
    logits,
    loss_and_grads,
    n_params,
)
from .train import AdamW, TrainConfig, Trainer, load_checkpoint, lr_at, save_checkpoint

__all__ = [
    "AdamW",
    "GPTConfig",
    "TrainConfig",
    "Trainer",
    "Vocab",
    "ablate_heads",
    "attention_weights",
    "generate",
    "init_params",
    "load",
    "load_checkpoint",
    "load_text",
    "logits",
    "loss_and_grads",
    "lr_at",
    "n_params",
    "save_checkpoint",
    "split",
]
