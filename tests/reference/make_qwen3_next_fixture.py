"""Regenerate tests/reference/qwen3_next_gated.npz: Hugging Face transformers' Qwen3NextAttention (gated, QK-norm).

Neither PyTorch nor transformers is a dependency; only this script imports them. From the repository root, in a
scratch environment (here torch 2.13.0 and transformers 5.24.0):

    /tmp/scratch24/bin/python tests/reference/make_qwen3_next_fixture.py

transformers/models/qwen3_next/modeling_qwen3_next.py, Qwen3NextAttention, eager attention, biases on, random
weights. Its layout, copied into MHAParams' x @ W form:
- q_proj emits 2 * head_dim rows per head, [query | gate]: -> w_q, b_q and w_gate, b_gate;
- k_proj, v_proj with h_kv = 2 key/value heads for h = 4 query heads (grouped), o_proj -> w_o, b_o;
- q_norm, k_norm: Qwen3NextRMSNorm scales by (1 + weight), so QKNorm gets 1 + weight.
mha_lesson's gated attention has no RoPE, so the layer is given cos = 1, sin = 0 (RoPE switched off).
HF runs the RMSNorm and the softmax in float32 even for float64 input: the test's tolerance.
Saved: x (batch, n, d), out, h, h_kv, eps, the MHAParams arrays, w_gate, b_gate, q_norm, k_norm.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import transformers
from transformers.models.qwen3_next.configuration_qwen3_next import Qwen3NextConfig
from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextAttention

OUT = Path(__file__).with_name("qwen3_next_gated.npz")
D, H, H_KV, EPS, BATCH, N = 16, 4, 2, 1e-6, 2, 6


def main() -> None:
    torch.manual_seed(0)
    d_k = D // H
    config = Qwen3NextConfig(
        hidden_size=D,
        num_attention_heads=H,
        num_key_value_heads=H_KV,
        head_dim=d_k,
        attention_bias=True,
        rms_norm_eps=EPS,
        attn_implementation="eager",
    )
    attn = Qwen3NextAttention(config, layer_idx=0).double().eval()
    with torch.no_grad():
        for w in attn.parameters():
            w.copy_(torch.randn_like(w) * 0.5)
    x = torch.randn(BATCH, N, D, dtype=torch.float64)
    # RoPE switched off: cos = 1, sin = 0 leave q and k as they are.
    cos = torch.ones(BATCH, N, d_k, dtype=torch.float64)
    sin = torch.zeros(BATCH, N, d_k, dtype=torch.float64)
    causal = torch.full((N, N), -torch.inf, dtype=torch.float64).triu(1)[None, None]  # added to the scores
    with torch.no_grad():
        out, _ = attn(x, (cos, sin), causal)

    T = lambda a: a.detach().numpy().T  # noqa: E731  (out, in) -> (in, out) for x @ W
    q = T(attn.q_proj.weight).reshape(D, H, 2, d_k)  # (d, h, [query, gate], d_k)
    b = attn.q_proj.bias.detach().numpy().reshape(H, 2, d_k)
    arrays = {
        "w_q": q[:, :, 0].reshape(D, D),
        "b_q": b[:, 0].reshape(D),
        "w_gate": q[:, :, 1].reshape(D, D),
        "b_gate": b[:, 1].reshape(D),
        "w_k": T(attn.k_proj.weight),
        "b_k": attn.k_proj.bias.detach().numpy(),
        "w_v": T(attn.v_proj.weight),
        "b_v": attn.v_proj.bias.detach().numpy(),
        "w_o": T(attn.o_proj.weight),
        "b_o": attn.o_proj.bias.detach().numpy(),
        "q_norm": 1 + attn.q_norm.weight.detach().numpy(),
        "k_norm": 1 + attn.k_norm.weight.detach().numpy(),
    }
    np.savez_compressed(
        OUT, x=x.numpy(), out=out.numpy(), h=np.array(H), h_kv=np.array(H_KV), eps=np.array(EPS), **arrays
    )
    print(f"wrote {OUT}: torch {torch.__version__}, transformers {transformers.__version__}")


if __name__ == "__main__":
    main()
