"""Regenerate tests/reference/torch_gqa.npz: grouped-query attention computed by PyTorch, for the numpy core to match.

PyTorch is not a dependency of mha_lesson or of its tests; only this script imports it. From the
repository root, with any Python that has torch>=2.5 (enable_gqa) and numpy (here the scratch environment):

    /work/scratch/bin/python tests/reference/make_gqa_fixture.py

torch.nn.MultiheadAttention has no grouped-query option, so the layer is written out with explicit
projection weights around torch.nn.functional.scaled_dot_product_attention(..., enable_gqa=True), which
gives query head i the key/value head i // (h / h_kv). Weights are drawn by numpy with fixed seeds, in
our x @ w convention. Each case is stored under keys "<case>__<field>":
    q, k, v                 inputs, (batch, n, d_model)
    mask                    our convention, True = may attend (absent when the case has no mask)
    h, h_kv                 query heads and key/value heads (0-d int arrays)
    w_q, w_k, w_v, w_o      weights, x @ w; w_k and w_v are (d_model, h_kv * d_k)
    b_q, b_k, b_v, b_o      biases
    out                     torch's output, (batch, n_q, d_model)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import mha_lesson as m  # noqa: E402

OUT = Path(__file__).with_name("torch_gqa.npz")
D_MODEL, H = 16, 4
# name: (h_kv, batch, n_q, n_kv, mask kind)
CASES = {
    "mqa_causal": (1, 2, 6, 6, "causal"),
    "gqa2_causal": (2, 2, 6, 6, "causal"),
    "mha_causal": (H, 2, 6, 6, "causal"),
    "gqa2_cross": (2, 3, 3, 5, None),
    "mqa_padding": (1, 2, 5, 5, "padding"),
}


def torch_gqa(q, k, v, p: m.MHAParams, mask) -> np.ndarray:
    """Project with p's weights, attend with torch's scaled_dot_product_attention(enable_gqa=True), mix with w_o."""
    t = {name: torch.from_numpy(a) for name, a in p.arrays().items()}
    batch, n_q, d_k = q.shape[0], q.shape[1], p.d_k

    def heads(x, w, b, n_heads):  # (batch, n, d_model) -> (batch, n_heads, n, d_k)
        return (torch.from_numpy(x) @ w + b).reshape(batch, -1, n_heads, d_k).transpose(1, 2)

    Q = heads(q, t["w_q"], t["b_q"], p.h)
    K, V = heads(k, t["w_k"], t["b_k"], p.h_kv), heads(v, t["w_v"], t["b_v"], p.h_kv)
    # In F.scaled_dot_product_attention a boolean attn_mask means True = may attend, as here.
    attn_mask = None if mask is None else torch.from_numpy(np.ascontiguousarray(mask))
    with torch.no_grad():
        out = torch.nn.functional.scaled_dot_product_attention(Q, K, V, attn_mask=attn_mask, enable_gqa=True)
        concat = out.transpose(1, 2).reshape(batch, n_q, p.h * d_k)  # (batch, n_q, d_model)
        return (concat @ t["w_o"] + t["b_o"]).numpy()


def main() -> None:
    """Build every case, compare with mha_lesson as a sanity print, and save the .npz."""
    rng = np.random.default_rng(0)
    data: dict[str, np.ndarray] = {}
    for name, (h_kv, batch, n_q, n_kv, kind) in CASES.items():
        kv = h_kv * D_MODEL // H
        shapes = {"w_q": (D_MODEL, D_MODEL), "w_k": (D_MODEL, kv), "w_v": (D_MODEL, kv), "w_o": (D_MODEL, D_MODEL)}
        arrays = {n: rng.normal(scale=0.5, size=s) for n, s in shapes.items()}
        arrays |= {"b" + n[1:]: rng.uniform(-0.5, 0.5, size=s[1]) for n, s in shapes.items()}
        p = m.MHAParams(h=H, h_kv=h_kv, **arrays)
        q = rng.normal(size=(batch, n_q, D_MODEL))
        k, v = (q, q) if kind in ("causal", "padding") else rng.normal(size=(2, batch, n_kv, D_MODEL))
        mask = None
        if kind == "causal":
            mask = m.causal_mask(n_q)  # (n, n)
        elif kind == "padding":
            mask = m.padding_mask([n_kv, 2], n_kv)  # (batch, 1, 1, n_kv)
        out = torch_gqa(q, k, v, p, mask)
        ours = m.multi_head_attention(q, k, v, p, mask)[0]
        print(f"{name:12s} h_kv={h_kv} max |ours - torch| = {np.abs(ours - out).max():.2e}")
        fields = {"q": q, "k": k, "v": v, "h": np.array(H), "h_kv": np.array(h_kv), "out": out, **p.arrays()}
        if mask is not None:
            fields["mask"] = mask
        data |= {f"{name}__{f}": np.asarray(a) for f, a in fields.items()}
    np.savez_compressed(OUT, **data)
    print(f"wrote {OUT} ({OUT.stat().st_size / 1024:.1f} KiB, torch {torch.__version__})")


if __name__ == "__main__":
    main()
