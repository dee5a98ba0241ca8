"""Regenerate tests/reference/torch_mha.npz: torch.nn.MultiheadAttention results that the numpy core must match.

PyTorch is not a dependency of mha_lesson or of its tests; only this script imports it. From the
repository root, with any Python that has torch>=2.0 and numpy (here the scratch environment):

    /work/scratch/bin/python tests/reference/make_torch_fixture.py

The script imports mha_lesson from this checkout (it puts the repository root on sys.path), builds
every case in float64 with fixed seeds, and overwrites torch_mha.npz next to itself. Each case is
stored under keys "<case>__<field>":
    q, k, v                 inputs, (n, d_model) or (batch, n, d_model)
    mask                    our convention, True = may attend (absent when the case has no mask)
    h                       number of heads (0-d int array)
    w_q, w_k, w_v, w_o      weights in the x @ w convention (torch's matrices transposed)
    b_q, b_k, b_v, b_o      biases (absent when bias=False)
    out                     torch's output, same shape as q
    weights                 torch's per-head attention weights (average_attn_weights=False), (..., h, n_q, n_kv)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import mha_lesson as m  # noqa: E402
from mha_lesson.demos.examples import worked_example  # noqa: E402

OUT = Path(__file__).with_name("torch_mha.npz")
# Lesson 8 compares its hand-worked example with PyTorch inside the notebook, so that case also ships
# with the package (read by mha_lesson.demos.examples.torch_reference()).
PACKAGE_OUT = ROOT / "mha_lesson" / "data" / "worked_example_torch.npz"

# name: (batch or None for unbatched, n_q, n_kv, d_model, h, bias, mask kind)
CASES = {
    "causal_bias": (None, 5, 5, 8, 2, True, "causal"),
    "cross_bias": (2, 3, 6, 8, 4, True, None),
    "single_head": (2, 4, 4, 6, 1, True, "causal"),
    "batched": (3, 5, 5, 12, 3, True, None),
    "no_bias": (2, 4, 4, 8, 4, False, None),
    "key_padding": (3, 5, 5, 8, 2, True, "padding"),
    "padding_causal": (2, 5, 5, 8, 2, True, "padding_causal"),
    "per_head_mask": (2, 3, 4, 8, 2, True, "per_head"),
    "fully_masked_row": (None, 4, 4, 8, 2, True, "fully_masked_row"),
}
LENGTHS = {"key_padding": [5, 3, 1], "padding_causal": [5, 2]}


def params_from_torch(mha: torch.nn.MultiheadAttention) -> m.MHAParams:
    """Our MHAParams from torch's: in_proj_weight (3d, d) and out_proj.weight (d, d) act as x @ W.T, so transpose."""
    d = mha.embed_dim
    w = mha.in_proj_weight.detach().numpy()
    arrays = {"w_q": w[:d].T, "w_k": w[d : 2 * d].T, "w_v": w[2 * d :].T, "w_o": mha.out_proj.weight.detach().numpy().T}
    if mha.in_proj_bias is not None:
        b = mha.in_proj_bias.detach().numpy()
        arrays |= {"b_q": b[:d], "b_k": b[d : 2 * d], "b_v": b[2 * d :], "b_o": mha.out_proj.bias.detach().numpy()}
    return m.MHAParams(h=mha.num_heads, **{n: np.array(a) for n, a in arrays.items()})


def torch_from_params(p: m.MHAParams) -> torch.nn.MultiheadAttention:
    """A torch module holding our params (the inverse of params_from_torch)."""
    mha = torch.nn.MultiheadAttention(p.d_model, p.h, bias=p.has_bias, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.from_numpy(np.concatenate([p.w_q.T, p.w_k.T, p.w_v.T])))
        mha.out_proj.weight.copy_(torch.from_numpy(p.w_o.T))
        if p.has_bias:
            mha.in_proj_bias.copy_(torch.from_numpy(np.concatenate([p.b_q, p.b_k, p.b_v])))
            mha.out_proj.bias.copy_(torch.from_numpy(p.b_o))
    return mha


def masks(name: str, kind: str | None, batch: int | None, h: int, n_q: int, n_kv: int, rng: np.random.Generator):
    """(our mask or None, torch attn_mask or None, torch key_padding_mask or None); torch uses True = NOT allowed."""
    if kind is None:
        return None, None, None
    if kind == "causal":
        mask = m.causal_mask(n_q)  # (n, n)
        return mask, torch.from_numpy(~mask), None
    if kind in ("padding", "padding_causal"):
        pad = m.padding_mask(LENGTHS[name], n_kv)  # (batch, 1, 1, n_kv)
        kpm = torch.from_numpy(~pad[:, 0, 0, :])  # (batch, n_kv)
        if kind == "padding":
            return pad, None, kpm
        causal = m.causal_mask(n_q)
        return pad & causal, torch.from_numpy(~causal), kpm
    if kind == "per_head":
        mask = rng.random((batch, h, n_q, n_kv)) < 0.6
        mask[..., 0] = True  # every query keeps at least one key: no NaN rows here
        # torch wants (batch * h, n_q, n_kv) with the heads of one sequence adjacent, like a reshape.
        return mask, torch.from_numpy(~mask.reshape(batch * h, n_q, n_kv)), None
    if kind == "fully_masked_row":
        mask = m.causal_mask(n_q).copy()
        mask[2] = False  # query 2 may attend to nothing: torch gives NaN, we give zero weights
        return mask, torch.from_numpy(~mask), None
    raise ValueError(f"kind: expected a known mask kind, got {kind!r}")


def run(mha: torch.nn.MultiheadAttention, q, k, v, attn_mask, kpm) -> tuple[np.ndarray, np.ndarray]:
    """torch's output and per-head weights as numpy arrays."""
    with torch.no_grad():
        out, weights = mha(
            *(torch.from_numpy(a) for a in (q, k, v)),
            key_padding_mask=kpm,
            attn_mask=attn_mask,
            need_weights=True,
            average_attn_weights=False,
        )
    return out.numpy(), weights.numpy()


def main() -> None:
    """Build every case, check it against mha_lesson as a sanity print, and save the .npz."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    data: dict[str, np.ndarray] = {}
    built = []
    for name, (batch, n_q, n_kv, d, h, bias, kind) in CASES.items():
        mha = torch.nn.MultiheadAttention(d, h, bias=bias, kdim=d, vdim=d, batch_first=True, dtype=torch.float64)
        if bias:
            # torch starts biases at zero, which would test nothing: give them random values.
            with torch.no_grad():
                mha.in_proj_bias.uniform_(-0.5, 0.5)
                mha.out_proj.bias.uniform_(-0.5, 0.5)
        lead = () if batch is None else (batch,)
        q = rng.normal(size=(*lead, n_q, d))
        k, v = (q, q) if n_q == n_kv else rng.normal(size=(2, *lead, n_kv, d))
        mask, attn_mask, kpm = masks(name, kind, batch, h, n_q, n_kv, rng)
        built.append((name, params_from_torch(mha), q, k, v, mask, *run(mha, q, k, v, attn_mask, kpm)))

    x, p = worked_example()
    mha = torch_from_params(p)
    round_trip = params_from_torch(mha)
    assert all(np.array_equal(a, round_trip.arrays()[n]) for n, a in p.arrays().items())
    built.append(("worked_example", p, x, x, x, None, *run(mha, x, x, x, None, None)))
    _, _, _, _, _, _, ref_out, ref_weights = built[-1]
    PACKAGE_OUT.parent.mkdir(exist_ok=True)
    np.savez_compressed(PACKAGE_OUT, output=ref_out, weights=ref_weights, torch_version=np.array(torch.__version__))

    for name, p, q, k, v, mask, out, weights in built:
        fields = {"q": q, "k": k, "v": v, "h": np.array(p.h), "out": out, "weights": weights, **p.arrays()}
        if mask is not None:
            fields["mask"] = np.asarray(mask, dtype=bool)
        data |= {f"{name}__{f}": np.asarray(a) for f, a in fields.items()}
        ours, ours_w = m.multi_head_attention(q, k, v, p, mask)
        ok = np.isfinite(out)
        print(
            f"{name:18s} max |ours - torch| = {np.abs(ours - out)[ok].max():.2e} (out), "
            f"{np.abs(ours_w - weights)[np.isfinite(weights)].max():.2e} (weights), NaN in torch out: {(~ok).sum()}"
        )
    np.savez_compressed(OUT, **data)
    print(f"wrote {OUT} ({OUT.stat().st_size / 1024:.1f} KiB, torch {torch.__version__})")


if __name__ == "__main__":
    main()
