"""Regenerate tests/reference/deepseek_v3_mla.npz: Hugging Face transformers' DeepseekV3Attention (MLA) on random input.

Neither PyTorch nor transformers is a dependency; only this script imports them. From the repository root, in a
scratch environment (here torch 2.13.0 and transformers 5.24.0):

    /tmp/scratch24/bin/python tests/reference/make_deepseek_v3_fixture.py

transformers/models/deepseek_v3/modeling_deepseek_v3.py, DeepseekV3Attention, with q_lora_rank=None (queries
straight from x, as mha_lesson.mla has them), eager attention and a random kv_a_layernorm weight. Its weights are
copied into MLAParams' x @ W layout:
- q_proj (h*(nope+rope), d): per head, rows [nope | rope] -> w_q and w_qr;
- kv_a_proj_with_mqa (d_c + rope, d): the first d_c rows -> w_dkv, the rest -> w_kr;
- kv_b_proj (h*(nope+v), d_c): per head, rows [nope | v] -> w_uk and w_uv; o_proj -> w_o; kv_a_layernorm -> latent_norm.
DeepSeek's RoPE pairs features (2j, 2j+1) (rope_interleave=True); apply_rotary_pos_emb_interleave returns them
as [evens rotated | odds rotated], which is mha_lesson.rope (pairs j, j + d/2) applied to the features
reordered evens-then-odds. So w_qr's and w_kr's columns are reordered that way and the outputs agree exactly.
HF computes RoPE angles, the RMSNorm and the softmax in float32 even for float64 input: the test's tolerance.
Saved: x (batch, n, d), out (batch, n, d), weights (batch, h, n, n), h, rope_base and the MLAParams arrays.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import transformers
from transformers.models.deepseek_v3.configuration_deepseek_v3 import DeepseekV3Config
from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3Attention, DeepseekV3RotaryEmbedding

OUT = Path(__file__).with_name("deepseek_v3_mla.npz")
D, H, D_C, D_ROPE, BASE, BATCH, N = 32, 4, 6, 4, 1000.0, 2, 7


def main() -> None:
    torch.manual_seed(0)
    d_head = D // H
    config = DeepseekV3Config(
        hidden_size=D,
        num_attention_heads=H,
        num_key_value_heads=H,
        q_lora_rank=None,
        kv_lora_rank=D_C,
        qk_rope_head_dim=D_ROPE,
        qk_nope_head_dim=d_head,
        v_head_dim=d_head,
        rope_parameters={"rope_type": "default", "rope_theta": BASE},
        rope_interleave=True,
        attn_implementation="eager",
    )
    attn = DeepseekV3Attention(config, layer_idx=0).double().eval()
    with torch.no_grad():
        for w in attn.parameters():
            w.copy_(torch.randn_like(w) * 0.3)
        attn.kv_a_layernorm.weight.copy_(1 + 0.3 * torch.randn(D_C, dtype=torch.float64))
    x = torch.randn(BATCH, N, D, dtype=torch.float64)
    positions = torch.arange(N)[None].expand(BATCH, N)
    cos, sin = DeepseekV3RotaryEmbedding(config)(x, positions)
    causal = torch.full((N, N), -torch.inf, dtype=torch.float64).triu(1)[None, None]  # added to the scores
    with torch.no_grad():
        out, weights = attn(x, (cos, sin), causal)

    T = lambda lin: lin.weight.detach().numpy().T  # noqa: E731  (out, in) -> (in, out) for x @ W
    evens_then_odds = np.r_[0:D_ROPE:2, 1:D_ROPE:2]
    q = T(attn.q_proj).reshape(D, H, d_head + D_ROPE)  # (d, h, nope + rope)
    kv_a = T(attn.kv_a_proj_with_mqa)  # (d, d_c + rope)
    kv_b = T(attn.kv_b_proj).reshape(D_C, H, 2 * d_head)  # (d_c, h, nope + v)
    arrays = {
        "w_q": q[..., :d_head].reshape(D, H * d_head),
        "w_qr": q[..., d_head:][..., evens_then_odds].reshape(D, H * D_ROPE),
        "w_dkv": kv_a[:, :D_C],
        "w_kr": kv_a[:, D_C:][:, evens_then_odds],
        "w_uk": kv_b[..., :d_head].reshape(D_C, H * d_head),
        "w_uv": kv_b[..., d_head:].reshape(D_C, H * d_head),
        "w_o": T(attn.o_proj),
        "latent_norm": attn.kv_a_layernorm.weight.detach().numpy(),
    }
    np.savez_compressed(
        OUT, x=x.numpy(), out=out.numpy(), weights=weights.numpy(), h=np.array(H), rope_base=np.array(BASE), **arrays
    )
    print(f"wrote {OUT}: torch {torch.__version__}, transformers {transformers.__version__}")


if __name__ == "__main__":
    main()
