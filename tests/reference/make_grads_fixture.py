"""Regenerate tests/reference/torch_grads.npz: PyTorch autograd gradients that multi_head_attention_grads must match.

PyTorch is not a dependency of mha_lesson or of its tests; only this script imports it. From the
repository root, with any Python that has torch>=2.5, numpy and threadpoolctl (here the scratch environment):

    /work/scratch/bin/python tests/reference/make_grads_fixture.py

Every case is float64 with fixed seeds. The loss is sum(output * grad_output) for a random grad_output,
so its gradient with respect to the output is grad_output. q, k and v are three separate leaf tensors
(equal in the self-attention cases), so each gets its own gradient. Keys are "<case>__<field>":
    q, k, v, mask (our convention, True = may attend; absent without a mask), h, h_kv
    w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o   weights in the x @ w convention (biases absent when bias=False)
    grad_output, out                          the output's gradient and torch's output
    grad__<name>                              torch's gradient with respect to q, k, v and every weight
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import mha_lesson as m  # noqa: E402

OUT = Path(__file__).with_name("torch_grads.npz")

# name: (batch or None, n_q, n_kv, d_model, h, h_kv, bias, mask kind)
CASES = {
    "self_causal_bias": (None, 5, 5, 8, 2, 2, True, "causal"),
    "cross_bias": (2, 3, 6, 8, 4, 4, True, None),
    "batched_padding": (3, 5, 5, 12, 3, 3, True, "padding"),
    "single_head": (2, 4, 4, 6, 1, 1, False, "causal"),
    "grouped_query": (2, 5, 5, 8, 4, 2, True, "causal"),
}
LENGTHS = [5, 3, 1]  # batched_padding: sequence b may attend to its first LENGTHS[b] keys


def make_mask(kind: str | None, n_q: int, n_kv: int) -> np.ndarray | None:
    """Our boolean mask (True = may attend) for the case."""
    if kind == "causal":
        return m.causal_mask(n_q)  # (n_q, n_kv)
    if kind == "padding":
        return m.padding_mask(LENGTHS, n_kv)  # (batch, 1, 1, n_kv)
    return None


def torch_module_grads(p: m.MHAParams, q, k, v, mask, grad_output) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Output and gradients from torch.nn.MultiheadAttention holding our weights (it computes x @ W.T)."""
    d = p.d_model
    mha = torch.nn.MultiheadAttention(d, p.h, bias=p.has_bias, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.from_numpy(np.concatenate([p.w_q.T, p.w_k.T, p.w_v.T])))
        mha.out_proj.weight.copy_(torch.from_numpy(p.w_o.T))
        if p.has_bias:
            mha.in_proj_bias.copy_(torch.from_numpy(np.concatenate([p.b_q, p.b_k, p.b_v])))
            mha.out_proj.bias.copy_(torch.from_numpy(p.b_o))
    inputs = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    kwargs = {"need_weights": False}
    if mask is not None and mask.ndim == 2:
        kwargs["attn_mask"] = torch.from_numpy(~mask)  # torch: True = may NOT attend
    elif mask is not None:
        kwargs["key_padding_mask"] = torch.from_numpy(~mask[:, 0, 0, :])  # (batch, n_kv)
    out = mha(*inputs, **kwargs)[0]
    (out * torch.from_numpy(grad_output)).sum().backward()
    w, grads = mha.in_proj_weight.grad.numpy(), {n: t.grad.numpy() for n, t in zip("qkv", inputs, strict=True)}
    grads |= {"w_q": w[:d].T, "w_k": w[d : 2 * d].T, "w_v": w[2 * d :].T, "w_o": mha.out_proj.weight.grad.numpy().T}
    if p.has_bias:
        b = mha.in_proj_bias.grad.numpy()
        grads |= {"b_q": b[:d], "b_k": b[d : 2 * d], "b_v": b[2 * d :], "b_o": mha.out_proj.bias.grad.numpy()}
    return out.detach().numpy(), grads


def torch_gqa_grads(p: m.MHAParams, q, k, v, mask, grad_output) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Output and gradients from scaled_dot_product_attention(enable_gqa=True): query head i reads K/V head i//group."""
    leaves = {name: torch.tensor(a, requires_grad=True) for name, a in {"q": q, "k": k, "v": v, **p.arrays()}.items()}
    t, d_k = leaves, p.d_k

    def heads(x: torch.Tensor, name: str, h: int) -> torch.Tensor:
        y = x @ t[f"w_{name}"] + t[f"b_{name}"]  # (batch, n, h*d_k)
        return y.view(*y.shape[:-1], h, d_k).transpose(-3, -2)  # (batch, h, n, d_k)

    Q, K, V = heads(t["q"], "q", p.h), heads(t["k"], "k", p.h_kv), heads(t["v"], "v", p.h_kv)
    mask_t = None if mask is None else torch.from_numpy(mask)  # SDPA: True = may attend, like ours
    out_heads = torch.nn.functional.scaled_dot_product_attention(Q, K, V, attn_mask=mask_t, enable_gqa=True)
    out = out_heads.transpose(-3, -2).reshape(*q.shape[:-1], p.d_model) @ t["w_o"] + t["b_o"]
    (out * torch.from_numpy(grad_output)).sum().backward()
    return out.detach().numpy(), {name: leaf.grad.numpy() for name, leaf in leaves.items()}


def main() -> None:
    """Build every case, compare with mha_lesson as a sanity print, and save the .npz."""
    rng = np.random.default_rng(0)
    data: dict[str, np.ndarray] = {}
    for name, (batch, n_q, n_kv, d, h, h_kv, bias, kind) in CASES.items():
        p = m.init_params(d, h, h_kv=h_kv, bias=bias, seed=len(data))
        # Zero biases would test nothing: give every array random values.
        p = m.MHAParams(h=h, h_kv=h_kv, **{n: rng.uniform(-0.6, 0.6, a.shape) for n, a in p.arrays().items()})
        lead = () if batch is None else (batch,)
        q = rng.normal(size=(*lead, n_q, d))
        k, v = (q.copy(), q.copy()) if name.startswith("self") else rng.normal(size=(2, *lead, n_kv, d))
        mask = make_mask(kind, n_q, n_kv)
        grad_output = rng.normal(size=(*lead, n_q, d))
        run = torch_gqa_grads if h_kv < h else torch_module_grads
        out, grads = run(p, q, k, v, mask, grad_output)
        fields = {"q": q, "k": k, "v": v, "h": np.array(h), "h_kv": np.array(h_kv), **p.arrays()}
        fields |= {"grad_output": grad_output, "out": out} | {f"grad__{g}": a for g, a in grads.items()}
        if mask is not None:
            fields["mask"] = mask
        data |= {f"{name}__{f}": np.asarray(a) for f, a in fields.items()}
        ours = m.multi_head_attention_grads(q, k, v, p, grad_output, mask)
        worst = max(np.abs(ours[g] - grads[g]).max() for g in grads)
        print(f"{name:18s} max |ours - torch| over {len(grads)} gradients: {worst:.1e}")
    np.savez_compressed(OUT, **data)
    print(f"wrote {OUT} ({OUT.stat().st_size / 1024:.1f} KiB, torch {torch.__version__})")


if __name__ == "__main__":
    main()
